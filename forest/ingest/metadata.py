"""A paper's bibliographic metadata read from the PDF itself, offline: title, authors, year, venue,
DOI and arXiv id.

Sources, each field taking the first that gives it:
- title: the largest text near the top of page 1 (journal names in the top margin, article-type
  labels like "Research Article" and venue lines left out); the PDF's /Title when it is not junk
  ("Microsoft Word - paper.docx", "untitled", a file name) and the page gives none, and it picks,
  among the page's large lines, the one it names;
- authors: the lines under the title, in the style of the first author line, before the abstract,
  with affiliations, emails, superscript marks, "and" and commas dropped and names wrapped across
  lines joined; else the PDF's /Author;
- year: the journal's citation line ("Pain 155 (2014) 2662-2672" in a header or footer), then venue
  and copyright lines ("Proceedings of ... 2013", "© 2014 Elsevier", "Published online 23 Apr 2015"),
  then page headers/footers and the arXiv stamp's date, then received/accepted dates, then the arXiv
  id, then the PDF's creation date;
- DOI: the PDF's metadata (XMP included), else a DOI on page 1, one introduced by "doi" first;
- arXiv id: the arXiv stamp in the left margin, a page header or footer, the metadata, the file name.

Only page 1 is read. Every step tolerates odd PDFs: an encrypted, scanned or broken file gives the
fields it can and empty ones otherwise, never an exception. Patterns are linear (no nested
quantifiers) since the text is untrusted.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from forest.ingest.document import PaperMetadata  # defined beside the Document it travels in
from forest.ingest.files import file_limit, read_limited
from forest.ingest.pdf_layout import TextLine, body_text_size, page_text
from forest.limits import DEFAULT_MAX_FILE_BYTES
from forest.text import is_cjk_char

if TYPE_CHECKING:
    import pymupdf

__all__ = ["PaperMetadata", "paper_metadata", "read_paper_metadata"]

MAX_LINES = 400          # lines of page 1 looked at: bounds the work on a pathological page
MAX_LINE_CHARS = 600
MAX_XMP_CHARS = 200_000
TOP_MARGIN, BOTTOM_MARGIN = 0.1, 0.88   # share of the page height: running headers and footers above/below

ARXIV_ID = re.compile(r"arXiv:\s?(\d{4}\.\d{4,5}|[a-z][a-z.-]{1,20}/\d{7})(?:v\d{1,3})?", re.IGNORECASE)
ARXIV_FILE = re.compile(r"(\d{2})(\d{2})\.\d{4,5}(?:v\d{1,3})?")
STAMP_DATE = re.compile(r"\b\d{1,2}\s+[A-Z][a-z]{2}\s+((?:19|20)\d\d)\b")
DOI = re.compile(r"\b(10\.\d{4,9}/[-._;()/:\[\]A-Za-z0-9]{1,200})")
DOI_TAIL = ".,;:)]}>'\""
YEAR = re.compile(r"(?<![\d/.-])((?:19|20)\d\d)(?![\d/])")
URL = re.compile(r"(?:https?://|www\.|doi:\s?|10\.\d{4,9}/)\S{0,200}", re.IGNORECASE)

MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]{0,6}\.?"
PUBLISHED = re.compile(r"©|\(c\)\s?(?:19|20)\d\d|c⃝|copyright|published as|proceedings|conference|symposium|"
                       r"workshop|journal|transactions|\bvol\.|\bvolume\b|licensee|press\b|"
                       r"published(?:\s+online)?\s*(?::\s*)?(?:on\s+)?(?:\d{1,2}\s+)?" + MONTH + r"\s+\d", re.IGNORECASE)
CITED_YEAR = re.compile(r"\(((?:19|20)\d\d)\)")   # "Molecular Phylogenetics and Evolution 83 (2015) 56–71"
CITATION = re.compile(r"^(?:to cite|cite this|citation|how to cite)", re.IGNORECASE)
EMAIL_IN_BRACKETS = re.compile(r"[(<\[][^()<>\[\]]{0,120}@[^()<>\[\]]{0,120}[)>\]]")
ORGANISATION = frozenset("collaboration consortium investigators".split())
HISTORY = re.compile(r"received|accepted|revised|submitted|available online|editor", re.IGNORECASE)
NOT_THE_PAPER = re.compile(r"download|accessed|retrieved|printed on|date:", re.IGNORECASE)  # a reader's stamp
VENUE_LINE = re.compile(r"published as|proceedings|conference|workshop|symposium|in press|preprint|"
                        r"journal homepage|contents lists|arxiv|https?://|www\.|doi|issn|©|copyright|"
                        r"licensee|open access|volume\b|\bvol\.", re.IGNORECASE)
ACCEPTED_AT = re.compile(r"(?:published as .{0,40}? (?:paper|article) at|accepted (?:at|to|in|by))\s+(.{2,120})",
                         re.IGNORECASE)
ARTICLE_TYPE = re.compile(
    r"^(?:original|research|review|short|brief|case|clinical|special|invited|technical|full|regular)?\s?"
    r"(?:article|paper|report|reports|communication|contribution|study|protocol|methodology|research|"
    r"review|letter|note|commentary|editorial|perspective|correspondence|opinion|open access)s?$",
    re.IGNORECASE)
# A citation line's year, and what must follow it (all linear: no run of blanks on both sides of an
# optional part): "(2014) 1234", " 2015, 16:1", " 2015;35:1234".
YEAR_IN_BRACKETS = re.compile(r"\((?:19|20)\d\d\)\s*(?:[,;:]\s*)?\d")
YEAR_THEN_VOLUME = re.compile(r"\s(?:19|20)\d\d\s*[,;:]\s*\d")
YEAR_THEN_ISSUE = re.compile(r"\s(?:19|20)\d\d\s*;\s*\d")
ET_AL = re.compile(r"et al\.?\s")
NUMBERED_HEADING = re.compile(r"\d{1,2}(?:\.\d{1,2}){0,3}\.?\s")
SECTION_START = re.compile(r"^(?:abstract|summary|background|articleinfo|articlehistory|keywords|"
                           r"introduction|1introduction|iintroduction|contents|highlights)", re.IGNORECASE)
NOT_AUTHORS = re.compile(r"^(?:correspond|received|accepted|academic editor|edited by|reviewed by|copyright|©|"
                         r"to cite|citation|keywords|key words|abstract|e-?mail|published)", re.IGNORECASE)
AFFILIATION_WORDS = frozenset("""
university universit universität université universidad universidade università department dept
departamento institute institut instituto istituto school college laboratory laboratories lab labs
center centre centro hospital faculty inc ltd llc gmbh corp corporation company research sciences
science engineering academy group division unit clinic foundation program programme email e-mail
abstract journal vol volume usa china germany france japan uk india canada italy spain australia
street road avenue box campus ministry national council agency society association health medical
medicine county city state province district technology polytechnic correspondence
""".split())
PARTICLES = frozenset("van von der den de del della di da dos das du la le bin ibn al el ten ter y".split())
TITLE_WORDS = frozenset("the an of for with on in to from via using towards toward is are".split())
SUFFIXES = frozenset("jr jr. sr sr. ii iii iv".split())
DEGREES = frozenset("md phd ph.d msc bsc mph rn mbbs frcp dphil ma ba ms bs mba facs mrcp".split())
JUNK_TITLE = re.compile(
    r"^(?:microsoft\s|untitled|no title|title|document\d*|paper|template|layout\s?\d|slide|"
    r"doi:?\s*$|pii:|\d{1,3}\s*$|.*\.(?:docx?|pdf|tex|dvi|rtf|odt|qxd|indd|ps|eps|pptx?)\s*$)", re.IGNORECASE)
JUNK_AUTHOR = re.compile(r"administrator|admin|user|owner|author|unknown|default|windows|microsoft|"
                         r"\bieee\b|springer|elsevier|association|press|publisher", re.IGNORECASE)
SPACING_ACCENTS = {"´": "\u0301", "`": "\u0300", "¨": "\u0308", "ˆ": "\u0302", "˜": "\u0303", "¸": "\u0327",
                   "ˇ": "\u030c", "˘": "\u0306", "˚": "\u030a", "˙": "\u0307", "˝": "\u030b"}
MARKS = "*∗†‡§¶#⁎✉⇑⊥♯♮&,;:.()[]{}|'\"“”’‘ ·•◦⋆★☆"


def read_paper_metadata(path: str | Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> PaperMetadata:
    """Open the PDF at `path` and read its metadata; an unreadable file (not a regular file, over
    `max_bytes`, not a PDF) gives an empty result."""
    import pymupdf

    try:
        pdf = pymupdf.open(str(path), stream=read_limited(path, max_bytes, file_limit(max_bytes)), filetype="pdf")
    except Exception:  # not a PDF, corrupt, missing, a FIFO or device: nothing to read
        return PaperMetadata()
    with pdf:
        return paper_metadata(pdf)


def paper_metadata(pdf: pymupdf.Document) -> PaperMetadata:
    """The metadata of an open `pymupdf.Document`, from page 1, its metadata and its file name."""
    found = _Found()
    info = _info(pdf)
    found.offer("doi", info.doi, "pdf metadata")  # a publisher's own record beats a DOI cited on the page
    page = _first_page(pdf)
    if page is not None:
        try:
            _from_page(page, info, found)
        except Exception:  # a page no rule foresaw: keep what the metadata gives rather than fail an import
            found = _Found()
            found.offer("doi", info.doi, "pdf metadata")
    if info.title and not _junk_title(info.title):
        found.offer("title", info.title, "pdf metadata")
    found.offer("authors", _metadata_authors(info.author), "pdf metadata")
    found.offer("arxiv_id", info.arxiv_id, "pdf metadata")
    _from_file_name(getattr(pdf, "name", "") or "", found)
    found.offer("year", info.year, "pdf creation date")
    return found.result()


# -- collecting -----------------------------------------------------------------------------------

class _Found:
    """Fields as they are found: the first source to give a field keeps it."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}
        self.sources: dict[str, str] = {}

    def offer(self, name: str, value, source: str) -> None:
        if value and name not in self.values:
            self.values[name] = value
            self.sources[name] = source

    def result(self) -> PaperMetadata:
        values = self.values
        return PaperMetadata(title=values.get("title", ""), authors=tuple(values.get("authors", ())),
                             year=values.get("year"), venue=values.get("venue", ""), doi=values.get("doi", ""),
                             arxiv_id=values.get("arxiv_id", ""), sources=dict(self.sources))


@dataclass
class _Info:
    title: str = ""
    author: str = ""
    year: int | None = None
    doi: str = ""
    arxiv_id: str = ""


def _info(pdf) -> _Info:
    """The document information dictionary and XMP: /Title, /Author, /CreationDate, a DOI."""
    try:
        meta = pdf.metadata or {}
    except Exception:
        meta = {}
    try:
        xmp = (pdf.get_xml_metadata() or "")[:MAX_XMP_CHARS]
    except Exception:
        xmp = ""
    def text(key: str) -> str:
        return _clean(str(meta.get(key) or ""))[:MAX_LINE_CHARS]

    created = re.match(r"(?:D:)?((?:19|20)\d\d)", text("creationDate"))
    year = int(created.group(1)) if created and _plausible_year(int(created.group(1))) else None
    labelled = " ".join(text(key) for key in ("subject", "keywords", "title")) + " " + xmp
    return _Info(title=text("title"), author=text("author"), year=year, doi=_doi_in(labelled),
                 arxiv_id=_arxiv_in(labelled))


def _from_file_name(name: str, found: _Found) -> None:
    """arXiv downloads are named by their id ("1705.07830v3.pdf"): the id, and its year and month."""
    match = ARXIV_FILE.fullmatch(Path(name).stem)
    if match and 1 <= int(match.group(2)) <= 12 and int(match.group(1)) >= 7:
        found.offer("arxiv_id", Path(name).stem.split("v")[0], "file name")
        found.offer("year", 2000 + int(match.group(1)), "file name")


# -- page 1 ---------------------------------------------------------------------------------------

@dataclass
class _Line:
    text: str       # as printed, marks included
    plain: str      # superscripts dropped, wide gaps as tabs
    size: float
    bold: bool
    x0: float
    y0: float
    x1: float
    y1: float


@dataclass
class _Page:
    lines: list[_Line]      # top to bottom, left to right
    rotated: list[str]
    width: float
    height: float
    body_size: float


def _first_page(pdf) -> _Page | None:
    try:
        if pdf.needs_pass or pdf.page_count < 1:
            return None
        page = pdf[0]
        text = page_text(page, 1)
        width, height = page.rect.width, page.rect.height
    except Exception:  # a damaged page: the metadata dictionary may still have something
        return None
    lines = [_page_line(line) for block in text.blocks for line in block.lines]
    lines = [line for line in lines if line.text][:MAX_LINES]
    lines.sort(key=lambda line: (round(line.y0 / 3), line.x0))
    return _Page(_joined_pieces(lines), [_clean(t)[:MAX_LINE_CHARS] for t in text.rotated[:50]],
                 width or 1.0, height or 1.0, body_text_size([text.blocks]))


def _joined_pieces(lines: list[_Line]) -> list[_Line]:
    """Pieces of one printed line (an italic species name inside a title) made one line again;
    pieces far apart (authors side by side) stay apart."""
    joined: list[_Line] = []
    for line in lines:
        last = joined[-1] if joined else None
        if (last is not None and abs(line.y0 - last.y0) < line.size * 0.4 and 0 <= line.x0 - last.x1 < line.size * 1.5
                and abs(line.size - last.size) <= max(0.5, last.size * 0.1)):
            joined[-1] = _Line(f"{last.text} {line.text}", f"{last.plain} {line.plain}", last.size, last.bold,
                               last.x0, min(last.y0, line.y0), line.x1, max(last.y1, line.y1))
        else:
            joined.append(line)
    return joined


def _page_line(line: TextLine) -> _Line:
    x0, y0, x1, y1 = line.bbox
    return _Line(_clean(line.text)[:MAX_LINE_CHARS], _clean(line.plain or line.text)[:MAX_LINE_CHARS],
                 line.size, line.bold_chars >= 0.6 * max(line.chars, 1), x0, y0, x1, y1)


def _from_page(page: _Page, info: _Info, found: _Found) -> None:
    title_lines = _title_lines(page, info.title)
    if title_lines:
        found.offer("title", _title_text(title_lines, info.title), "first page")
        found.offer("authors", _authors_under(page, title_lines), "first page")
    stamp = next((t for t in page.rotated if ARXIV_ID.search(t)), "")
    margins = [line for line in page.lines if _in_margin(line, page)]
    found.offer("arxiv_id", _arxiv_in(stamp), "arxiv stamp")
    found.offer("arxiv_id", _arxiv_in(" ".join(line.text for line in margins)), "first page")
    found.offer("doi", _page_doi(page), "first page")
    year, source = _year(page, stamp)
    found.offer("year", year, source)
    found.offer("venue", _venue(page), "first page")


def _in_margin(line: _Line, page: _Page) -> bool:
    return line.y1 <= page.height * TOP_MARGIN or line.y0 >= page.height * BOTTOM_MARGIN


# -- title ----------------------------------------------------------------------------------------

def _title_lines(page: _Page, metadata_title: str) -> list[_Line]:
    """The title's lines: the run of large lines the metadata /Title names, else the largest run
    in the upper part of the page that is not a header, a venue line or an article-type label."""
    runs = [_without_labels(run) for run in _runs(page)]
    candidates = [run for run in runs if run and _title_candidate(run, page)]
    if not candidates:
        return []
    if metadata_title and not _junk_title(metadata_title):
        wanted = _words(metadata_title)
        named = [run for run in candidates if _similar(_words(_joined(run)), wanted) >= 0.8]
        if named:
            return max(named, key=lambda run: run[0].size)
    largest = max(run[0].size for run in candidates)
    if largest < page.body_size * 1.1:
        return []   # nothing set apart: a page of plain text, no title to find
    return next(run for run in candidates if run[0].size >= largest - 0.2)


def _runs(page: _Page) -> list[list[_Line]]:
    """Consecutive lines in one size, close together: a title spread over lines."""
    runs: list[list[_Line]] = []
    for line in page.lines:
        if line.y0 > page.height * 0.7:
            break
        for run in runs[-3:]:  # a run continues under itself, possibly past a line beside it
            last = run[-1]
            same_size = abs(last.size - line.size) <= max(0.5, last.size * 0.06)
            below = -line.size * 0.5 <= line.y0 - last.y1 <= line.size and line.y0 > last.y0 + line.size * 0.5
            overlaps = line.x0 < last.x1 and line.x1 > last.x0
            if same_size and below and overlaps:
                run.append(line)
                break
        else:
            runs.append([line])
    return runs


def _without_labels(run: list[_Line]) -> list[_Line]:
    """A run without the article-type label or venue line set above the title in its size."""
    start = 0
    while start < len(run) - 1 and _label(run[start].text):
        start += 1
    return run[start:]


def _label(text: str) -> bool:
    return bool(VENUE_LINE.search(text) or ARTICLE_TYPE.match(text.strip(" :")) or SECTION_START.match(_letters(text)))


def _title_candidate(run: list[_Line], page: _Page) -> bool:
    text = _joined(run)
    words = _words(text)
    # Chinese and Japanese are written without spaces: each character counts as a word
    counted = len(words) + sum(is_cjk_char(ch) for ch in text) - sum(any(is_cjk_char(c) for c in w) for w in words)
    if not 2 <= counted <= 60 or len(text) > 400 or run[0].y0 > page.height * 0.6:
        return False
    if NUMBERED_HEADING.match(text):   # "1 引言", "2.1 Sampling": a section's heading, not the paper's title
        return False
    if run[-1].y1 <= page.height * 0.07:  # the running header: journal name, conference
        return False
    letters = sum(ch.isalpha() for ch in text)
    if letters < 0.6 * len(text.replace(" ", "")):
        return False
    if _label(run[0].text) or "@" in text or len(_names_in(run[0].plain, strict=True)) >= 2:
        return False
    return not (len(words) <= 6 and _repeated(text, run, page))


def _repeated(text: str, run: list[_Line], page: _Page) -> bool:
    """The text also printed elsewhere on the page: a journal's name (header and citation line)."""
    wanted = " ".join(_words(text))
    return any(line not in run and wanted in " ".join(_words(line.text)) for line in page.lines)


def _title_text(lines: list[_Line], metadata_title: str) -> str:
    text = _joined(lines)
    if metadata_title and _similar(_words(text), _words(metadata_title)) >= 0.999 and metadata_title != text:
        return metadata_title if len(metadata_title) >= len(text) * 0.8 else text  # typed text: no broken ligatures
    return text


def _joined(lines: list[_Line]) -> str:
    text = ""
    for line in lines:
        piece = line.text.strip()
        if text.endswith("-") and len(text) > 1 and text[-2].isalpha() and piece[:1].islower():
            text = text[:-1] + piece
        else:
            text = f"{text} {piece}" if text else piece
    return _strip_title_marks(re.sub(r"\s+", " ", text))


def _strip_title_marks(text: str) -> str:
    return text.rstrip("*∗†‡§¶⁎ 0123456789").rstrip() if re.search(r"[^\W\d_][*∗†‡§¶⁎\d]{1,3}$", text) else text


def _junk_title(title: str) -> bool:
    title = title.strip()
    words = _words(title)
    if len(words) < 2 or JUNK_TITLE.match(title):
        return True
    if " " not in title or re.fullmatch(r"[\w.-]+", title):  # an identifier or file name
        return True
    return bool(VENUE_LINE.match(title)) or title.lower().startswith(("proceedings", "doi", "arxiv"))


# -- authors --------------------------------------------------------------------------------------

def _authors_under(page: _Page, title: list[_Line]) -> list[tuple[str, str]]:
    """Names from the lines under the title, in the first author line's style, up to the abstract."""
    top = title[-1].y1 - 1
    authors: list[tuple[str, str]] = []
    style: tuple[float, bool] | None = None
    skipped = 0
    carry = ""   # a name cut by the line's end: "..., Hsien-" + "Ta Hsu, ..."
    for line in page.lines:
        if line.y0 < top or line in title:
            continue
        if line.y0 > page.height * 0.8 or _ends_front_matter(line, page):
            break
        text = EMAIL_IN_BRACKETS.sub(" ", line.plain)  # "Kevin J Loope (kjl75@cornell.edu)"
        if NOT_AUTHORS.match(line.text) or _affiliation(text):
            skipped += 1
            continue
        if style is not None and (abs(line.size - style[0]) > 0.6 or line.bold != style[1]):
            continue  # an affiliation or address line in another style
        names, carry = _wrapped_names(text, carry)
        if names:
            authors += names
            style = style or (line.size, line.bold)
        elif style is None:
            skipped += 1
        if style is None and skipped > 8:
            break
    return authors


def _wrapped_names(text: str, carry: str) -> tuple[list[tuple[str, str]], str]:
    """The names in a line that may begin with the end of the previous line's last name, and the
    piece of a name this line leaves for the next one."""
    if carry:
        text = carry + ("" if carry.endswith("-") else " ") + text.lstrip()
    names = _names_in(text)
    if names:
        return names, ""
    cuts = list(re.finditer(r"[,;]|\b(?:and|AND)\b|&", text))
    if cuts:
        head, tail = text[:cuts[-1].start()], text[cuts[-1].end():].strip()
        head_names = _names_in(head)
        if head_names and tail and len(tail.split()) <= 3:
            return head_names, tail
    return [], ""


def _ends_front_matter(line: _Line, page: _Page) -> bool:
    if SECTION_START.match(_letters(line.text)):
        return True
    long_line = line.x1 - line.x0 > page.width * 0.6 and len(line.text.split()) >= 14
    return long_line and line.size <= page.body_size * 1.05 and "," not in line.text[:40]


def _affiliation(text: str) -> bool:
    lowered = text.lower()
    if "@" in text or "http" in lowered or "www." in lowered:
        return True
    words = set(re.findall(r"[^\W\d_]+", lowered))
    return len(words & AFFILIATION_WORDS) >= 1 and not _names_in(text, strict=True)


def _names_in(text: str, strict: bool = False) -> list[tuple[str, str]]:
    """The names in an author line, or none if any piece of it is not a name."""
    pieces = [piece for piece in re.split(r"[,;\t·•|]|\b(?:and|AND)\b|&|\s{3,}", text) if piece.strip(MARKS + " ")]
    names = []
    for piece in pieces:
        if all(token.strip(".").lower() in DEGREES for token in piece.split()):
            continue  # "John Smith, MD, PhD"
        name = _name(piece)
        if name is None:
            if strict or not _only_marks(piece):
                return []
            continue
        names.append(name)
    return names


def _only_marks(piece: str) -> bool:
    return all(not ch.isalpha() or ch in "abcdefghij" for ch in piece.replace(" ", "")) and len(piece.strip()) <= 6


def _name(piece: str) -> tuple[str, str] | None:
    """("Last", "First M.") for a piece like "Dania M. van der Meer1,*", None if it is not a name."""
    tokens = [token.strip(MARKS.replace(".", "") + "0123456789").lstrip(".") for token in piece.split()]
    tokens = [t[:-1] if t.endswith(".") and len(t) > 2 and not t[:-1].isupper() else t for t in tokens]
    tokens = [t for t in tokens if t]
    if tokens and tokens[0].lower() == "by":
        tokens = tokens[1:]
    while tokens and tokens[-1].lower() in SUFFIXES:
        tokens.pop()
    while len(tokens) > 2 and len(tokens[-1]) == 1 and tokens[-1].islower():  # a letter mark: "Smith a"
        tokens.pop()
    if not 2 <= len(tokens) <= 6 or re.search(r"\d{3}", piece):
        return None
    if tokens[-1].lower() in ORGANISATION:  # "ALEPH Collaboration": an author that is not a person
        return " ".join(tokens), ""
    for token in tokens:
        lowered = token.lower()
        if lowered in AFFILIATION_WORDS or lowered.rstrip(".") in AFFILIATION_WORDS:
            return None
        if lowered in PARTICLES:
            continue
        if lowered in TITLE_WORDS:
            return None
        if not (token[0].isupper() and all(ch.isalpha() or ch in ".-'’" for ch in token)):
            return None
    if not any(len(t.rstrip(".")) >= 2 and not t.isupper() or len(t) >= 3 and t.isupper() and "." not in t
               for t in tokens if t.lower() not in PARTICLES):
        return None
    tokens = [_name_case(t) for t in tokens]
    split = len(tokens) - 1
    while split > 1 and tokens[split - 1].lower() in PARTICLES:
        split -= 1
    return " ".join(tokens[split:]), " ".join(tokens[:split])


def _name_case(token: str) -> str:
    """"DOUGLAS" -> "Douglas", "CAMPILLO-GIMENEZ" -> "Campillo-Gimenez"; initials and mixed case kept."""
    if len(token) > 2 and token.isupper() and "." not in token:
        return "-".join(part.capitalize() for part in token.split("-"))
    return token


def _metadata_authors(text: str) -> list[tuple[str, str]]:
    if not text or JUNK_AUTHOR.search(text) or "@" in text:
        return []
    text = re.sub(r"\([^)]{0,80}\)", " ", text)
    pieces = re.split(r";|,|\band\b|&", text)
    names = [_name(piece) for piece in pieces if piece.strip()]
    return names if names and all(names) else []


# -- year, venue, identifiers ---------------------------------------------------------------------

def _year(page: _Page, stamp: str) -> tuple[int | None, str]:
    """The year of publication: venue and copyright lines first, then margins and the arXiv stamp,
    then the manuscript's history (received, accepted)."""
    cited: Counter = Counter()
    published: Counter = Counter()
    margins: Counter = Counter()
    history: Counter = Counter()
    for line in page.lines:
        if NOT_THE_PAPER.search(line.text):
            continue
        text = URL.sub(" ", line.text)
        years = [int(y) for y in YEAR.findall(text) if _plausible_year(int(y))]
        if not years:
            continue
        if _in_margin(line, page) or CITATION.match(text):  # the journal's own citation line: volume (year)
            cited.update(int(y) for y in CITED_YEAR.findall(text) if _plausible_year(int(y)))
        if HISTORY.search(line.text):
            history.update(years)
        elif PUBLISHED.search(line.text):
            published.update(years)
        elif _in_margin(line, page):
            margins.update(years)
    stamp_year = STAMP_DATE.search(stamp)
    if stamp_year:
        margins[int(stamp_year.group(1))] += 1
    for counts, source in ((cited, "first page"), (published, "first page"), (margins, "first page"),
                           (history, "first page")):
        if counts:
            best = max(counts.items(), key=lambda item: (item[1], item[0]))[0]
            return best, ("arxiv stamp" if counts is margins and stamp_year and not _margin_years(page)
                          else source)
    arxiv = ARXIV_FILE.match(_arxiv_in(stamp) or "")
    if arxiv:
        return 2000 + int(arxiv.group(1)), "arxiv stamp"
    return None, ""


def _margin_years(page: _Page) -> bool:
    return any(_in_margin(line, page) and YEAR.search(line.text) for line in page.lines)


def _plausible_year(year: int) -> bool:
    return 1900 <= year <= date.today().year + 1


def _venue(page: _Page) -> str:
    for line in page.lines:
        text = line.text.strip()
        if len(text.split()) > 25:
            continue  # body text, not a venue line
        match = _in_margin(line, page) and ACCEPTED_AT.match(text)
        if match:
            return match.group(1).strip(" .,")
        if re.match(r"(?:in\s)?proceedings of", text, re.IGNORECASE):
            return re.split(r",\s*(?:pages|pp\.|volume|vol\.)|\.\s|,\s*\d", text, maxsplit=1)[0].strip(" .,")
    for line in page.lines:
        if page.height * 0.2 < line.y0 < page.height * BOTTOM_MARGIN:
            continue  # journal headers sit in the top fifth (Elsevier's box) or the footer
        venue = _journal_in(URL.sub(" ", line.text).strip())
        if venue:
            venue = re.sub(r"^.{0,80}?\bet al\.?\s*", "", venue).strip(" .,;:®")   # at most 100 characters
            if sum(ch.isalpha() for ch in venue) >= 3 and not re.search(r"\d{3}", venue):
                return venue
    return ""


def _journal_in(text: str) -> str:
    """The journal a citation line names, before its year: "Pain 155 (2014) 1234", "Smith et al.
    Trials 2015, 16:1", "J Neurosci 2015;35:1234"; "" if none. Found by the year, then cut before
    it (a pattern spanning the name and the year would backtrack over a run of blanks)."""
    year = YEAR_IN_BRACKETS.search(text)
    if year and year.start() <= 110:
        name = text[:year.start()].rstrip().rstrip("0123456789").rstrip()   # before the volume
        if 3 <= len(name) <= 100:
            return name
    authors = ET_AL.search(text)
    if authors:
        rest = text[authors.end():]
        year = YEAR_THEN_VOLUME.search(rest)
        if year and 2 <= len(rest[:year.start()].strip()) <= 80:
            return rest[:year.start()].strip()
    year = YEAR_THEN_ISSUE.search(text)
    if year and 3 <= len(text[:year.start()].rstrip()) <= 80:
        return text[:year.start()].rstrip()
    return ""


def _page_doi(page: _Page) -> str:
    lines = [line.text for line in page.lines]
    introduced = [text for text in lines if re.search(r"doi", text, re.IGNORECASE)]
    return _doi_in("\n".join(introduced)) or _doi_in("\n".join(lines))


def _doi_in(text: str) -> str:
    match = DOI.search(text)
    if not match:
        return ""
    doi = match.group(1)
    while doi and doi[-1] in DOI_TAIL:
        doi = doi[:-1]
    if doi.count("(") < doi.count(")"):  # "(doi:10.1/x)": the bracket closes the sentence
        doi = doi[:doi.rindex(")")]
    return doi.lower()


def _arxiv_in(text: str) -> str:
    match = ARXIV_ID.search(text or "")
    return match.group(1) if match else ""


# -- text -----------------------------------------------------------------------------------------

def _clean(text: str) -> str:
    """Whitespace collapsed (tabs kept), spacing accents put on their letters ("Gy¨ongyi" -> "Gyöngyi")."""
    if any(accent in text for accent in SPACING_ACCENTS):
        text = re.sub("([A-Za-z]?)([´`¨ˆ˜¸ˇ˘˚˙˝]) ?([A-Za-z]?)", _placed_accent, text)
    text = unicodedata.normalize("NFC", text)
    return re.sub(r"[ \r\n\f\v]+", " ", text).strip()


def _placed_accent(match: re.Match) -> str:
    """Put a spacing accent on its letter: the one after it ("Gy¨ongyi"), or the vowel before it
    when a consonant follows ("Go¨ker"); a cedilla goes under the c, s or t beside it."""
    before, accent, after = match.groups()
    mark = SPACING_ACCENTS[accent]
    if accent == "¸" and after.lower() in "cst" and before.lower() not in "cst":
        return before + after + mark
    if before and (accent == "¸" or (before.lower() in "aeiouy" and not (after and after.lower() in "aeiouy"))):
        return before + mark + after
    if after:
        return before + after + mark
    return before + mark if before else ""


def _letters(text: str) -> str:
    return re.sub(r"[\W\d_]+", "", text).lower()


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.casefold())


def _similar(left: list[str], right: list[str]) -> float:
    """Share of the words the two texts have in common (Dice on word multisets)."""
    if not left or not right:
        return 0.0
    common = sum((Counter(left) & Counter(right)).values())
    return 2 * common / (len(left) + len(right))
