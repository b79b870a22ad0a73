"""PDF to passages with PyMuPDF: reading order, sections, captions, clean paragraphs.

The page's text blocks (PyMuPDF's `dict` extraction) are read column by column: blocks that span
the middle of the page cut it into horizontal bands, and within a band the left column is read
before the right one. Then:
- running headers and footers (the same text in the top or bottom margin of many pages, digits
  ignored) and bare page numbers are dropped, as is rotated text such as arXiv's side stamp;
- headings come from the PDF outline when it has one that matches the pages, else from style:
  a short block, bold or larger than the body text, that is not a table row;
- "Figure 3: ..." / "Table 2. ..." / "图 1 ..." blocks are captions, passages of their own;
- footnotes (small text at the bottom of a page) move to the end of their page so they do not
  split a sentence;
- lines are joined, and a word hyphenated across a line break is joined without its hyphen unless
  the document spells it with a hyphen elsewhere ("state-of-the-art");
- a paragraph cut by a column or page break (no closing punctuation, next block starts lower
  case) is joined back together.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from forest.ingest.document import CAPTION, TEXT, Document, Heading, Passage
from forest.errors import InvalidInput
from forest.ingest.files import file_limit, read_limited
from forest.ingest.metadata import paper_metadata
from forest.ingest.pdf_layout import TextBlock, TextLine, body_text_size, page_text
from forest.limits import DEFAULT_MAX_FILE_BYTES

CAPTION_START = re.compile(
    r"^(?:(?:Figure|Fig\.|Table|Algorithm|Listing)\s*(?:[A-Z]?\d+(?:\.\d+)?|[IVXL]+)\s*[:.|]"
    r"|(?:图|表)\s*\d+(?:[.-]\d+)*(?:[:：.\s]|$))", re.IGNORECASE)
CAPTION_LOOSE = re.compile(r"^(?:Figure|Fig\.|Table|图|表)\s*[A-Z]?\d+", re.IGNORECASE)
PAGE_NUMBER = re.compile(r"^(?:page\s*)?[-–—]?\s*(?:\d{1,4}|[ivxlcdm]{1,6})\s*[-–—]?(?:\s*(?:of|/)\s*\d+)?$",
                         re.IGNORECASE)
NUMBERED_HEADING = re.compile(
    r"^(?:(?:\d+(?:\.\d+)*|[A-Z](?:\.\d+)*|[IVX]+)\.?\s+\S|第[一二三四五六七八九十百\d]+[章节部分]"
    r"|[一二三四五六七八九十]+[、.．]\s*\S)")
KNOWN_SECTIONS = re.compile(
    r"^(?:abstract|introduction|related work|background|method(?:s|ology)?|experiments?|results|discussion|"
    r"conclusions?|references|bibliography|acknowledge?ments?|appendix|limitations|"
    r"摘要|引言|绪论|相关工作|方法|实验|结论|参考文献|致谢|附录)\b", re.IGNORECASE)
FIRST_PAGE_FOOTER = re.compile(
    r"proceedings of|conference on|association for computational linguistics|copyright|©|\(c\) \d{4}|"
    r"licensed under|creative commons|arxiv:\d", re.IGNORECASE)
SENTENCE_END = tuple(".!?:;。！？；…)]\"”’")
MARGIN = 0.085        # top and bottom share of the page searched for running headers/footers
MAX_PDF_PAGES = 2000
MIN_CHARS_PER_PAGE = 25
MAX_CLUSTERED_DRAWINGS = 1000


@dataclass
class _Paragraph:
    text: str
    page_start: int
    page_end: int
    section: str | None
    kind: str
    open_end: bool = field(default=False)


ProgressFn = Callable[[int, int], None]


def read_pdf(path: str | Path, progress: ProgressFn | None = None,
             max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Document:
    """Parse `path` into passages; every unreadable PDF raises InvalidInput with a clear reason.
    The bytes are read once, from the descriptor checked to be a regular file (read_limited), and
    parsed from memory: a path swapped for a FIFO or device after a check cannot hang the read."""
    import pymupdf

    path = Path(path)
    data = read_limited(path, max_bytes, file_limit(max_bytes))
    _check_pdf_bytes(path, data)
    try:
        pdf = pymupdf.open(str(path), stream=data, filetype="pdf")
    except Exception as exc:  # PyMuPDF raises FileDataError, RuntimeError, ValueError... for bad files
        raise InvalidInput(f"{path.name}: the PDF is corrupt and cannot be opened ({exc})") from None
    with pdf:
        if pdf.needs_pass or pdf.is_encrypted:
            raise InvalidInput(f"{path.name}: the PDF is encrypted (password protected); "
                               "remove the password and ingest it again")
        if pdf.page_count == 0:
            raise InvalidInput(f"{path.name}: the PDF has no pages")
        if pdf.page_count > MAX_PDF_PAGES:
            raise InvalidInput(f"{path.name}: {pdf.page_count} pages is over the limit of {MAX_PDF_PAGES}")
        pages: list[list[TextBlock]] = []
        heights: list[float] = []
        widths: list[float] = []
        images = 0
        for number, page in enumerate(pdf, start=1):
            try:
                pages.append(_drop_figure_text(page, _page_blocks(page, number)))
                images += len(page.get_images())
            except Exception as exc:
                raise InvalidInput(f"{path.name}: page {number} cannot be read; the PDF is damaged ({exc})") from None
            heights.append(page.rect.height)
            widths.append(page.rect.width)
            if progress:
                progress(number, pdf.page_count)
        outline = pdf.get_toc(simple=True)
        title = (pdf.metadata or {}).get("title") or None
        page_count = pdf.page_count
        metadata = paper_metadata(pdf)

    text_chars = sum(b.chars for blocks in pages for b in blocks)
    if text_chars < MIN_CHARS_PER_PAGE * page_count:
        if images:
            raise InvalidInput(f"{path.name}: the PDF has no text layer (it looks scanned: {images} images, "
                               f"{text_chars} characters of text); run OCR on it first, e.g. "
                               "`ocrmypdf in.pdf out.pdf`, and ingest the result")
        raise InvalidInput(f"{path.name}: the PDF contains no text to remember")

    body_size = body_text_size(pages)
    pages = [_split_leading_headings(blocks, body_size) for blocks in pages]
    _drop_running_text(pages, heights)
    for blocks, width, height in zip(pages, widths, heights):
        _order_columns(blocks, width)
        _classify(blocks, body_size, height)
    doc_title = _title_from_first_page(pages[0], body_size) or title
    if _apply_outline(pages, outline):
        _style_headings(pages, body_size, only_known=True)
    else:
        _style_headings(pages, body_size)
    passages = _passages(pages, _vocabulary(pages))
    if not passages:
        raise InvalidInput(f"{path.name}: the PDF contains no text to remember")
    return Document(name=path.stem, source=str(path.resolve()), passages=passages, title=doc_title,
                    page_count=page_count, headings=_headings(pages), metadata=metadata)


def _check_pdf_bytes(path: Path, data: bytes) -> None:
    head, tail = data[:1024], data[-2048:]
    if not head.strip():
        raise InvalidInput(f"{path.name}: the file is empty")
    if b"%PDF-" not in head:
        raise InvalidInput(f"{path.name}: not a PDF (no %PDF- header); is it another kind of file renamed .pdf?")
    if b"%%EOF" not in tail:
        raise InvalidInput(f"{path.name}: the PDF is truncated (no end-of-file marker); "
                           "the download or copy may be incomplete")


def _page_blocks(page, number: int) -> list[TextBlock]:
    return page_text(page, number).blocks


def _drop_figure_text(page, blocks: list[TextBlock]) -> list[TextBlock]:
    """Text drawn inside a picture (axis labels, boxes of a diagram) is not prose: leave it out.

    Pictures are embedded images and dense clusters of vector drawings; a table's few rules do not
    count, so table text stays.
    """
    import pymupdf

    regions = [pymupdf.Rect(info["bbox"]) for info in page.get_image_info()]
    drawings = page.get_drawings()
    if len(drawings) > MAX_CLUSTERED_DRAWINGS:  # a scatter plot: clustering would take seconds
        area = pymupdf.Rect()
        for drawing in drawings:
            area |= drawing["rect"]
        if area.get_area() < 0.7 * page.rect.get_area():
            regions.append(area)
    elif drawings:
        for cluster in page.cluster_drawings(drawings=drawings):
            items = [d for d in drawings if pymupdf.Rect(d["rect"]).intersects(cluster)]
            curves_or_many = len(items) >= 12 or any(i[0] in ("c", "qu") for d in items for i in d["items"])
            if curves_or_many and cluster.width > 20 and cluster.height > 20:
                regions.append(cluster)
    if not regions:
        return blocks
    kept = []
    for block in blocks:
        centre = pymupdf.Point((block.x0 + block.x1) / 2, (block.y0 + block.y1) / 2)
        inside = any(region.contains(centre) for region in regions)
        if not inside or CAPTION_START.match(block.raw):
            kept.append(block)
    return kept


def _split_leading_headings(blocks: list[TextBlock], body_size: float) -> list[TextBlock]:
    """Headings set in one block with their paragraph ('Introduction' + body), or stacked in one
    block ('Experiments' over 'Data Sets', in two sizes), become blocks of their own."""
    result = []
    for block in blocks:
        lead = 0
        while lead < min(3, len(block.lines)) and _emphasized(block.lines[lead], body_size):
            lead += 1
        rest = block.lines[lead:]
        body_follows = len(rest) > 1 or sum(line.chars for line in rest) >= 40
        if lead == 0 or (rest and not body_follows):
            result.append(block)
            continue
        groups: list[list[TextLine]] = []
        for line in block.lines[:lead]:  # one heading per size: a section over its subsection
            if groups and abs(_heading_size(groups[-1][-1]) - _heading_size(line)) < 0.3:
                groups[-1].append(line)
            else:
                groups.append([line])
        if rest:
            groups.append(rest)
        height = (block.y1 - block.y0) / len(block.lines)
        top = block.y0
        for group in groups:
            bottom = top + height * len(group)
            result.append(TextBlock(block.page, block.x0, top, block.x1, bottom, group))
            top = bottom
    return result


def _heading_size(line: TextLine) -> float:
    return max(line.size, line.lead_size)  # small caps count at their capitals' size


def _emphasized(line: TextLine, body_size: float) -> bool:
    """Set apart like a heading: bold or larger than the body, small caps, or a numbered italic
    or all-capitals line ('2.1. Data Pre-processing', 'III. TEST DATASET')."""
    if line.chars == 0 or line.size < body_size * 0.75 or len(line.text) > 100:
        return False
    small_caps = line.text.isupper() and line.lead_size >= body_size * 0.95
    strong = line.bold_chars >= 0.85 * line.chars or line.size >= body_size * 1.12 or \
        (small_caps and line.lead_size >= body_size * 1.12)
    if strong and (line.size >= body_size * 0.95 or small_caps):
        return True
    marked = line.italic_chars >= 0.85 * line.chars or small_caps
    return marked and bool(NUMBERED_HEADING.match(line.text) or KNOWN_SECTIONS.match(line.text))


def _margin_key(text: str) -> str:
    return re.sub(r"\d+", "#", re.sub(r"\s+", " ", text.lower())).strip()


def _drop_running_text(pages: list[list[TextBlock]], heights: list[float]) -> None:
    """Headers, footers and page numbers: margin text repeated on many pages, or a bare number."""
    seen: Counter = Counter()
    for blocks, height in zip(pages, heights):
        keys = {_margin_key(b.raw) for b in blocks if _in_margin(b, height)}
        seen.update(keys)
    repeated = max(2, round(0.4 * len(pages)))
    for number, (blocks, height) in enumerate(zip(pages, heights), start=1):
        outermost = {id(min(blocks, key=lambda b: b.y0)), id(max(blocks, key=lambda b: b.y1))} if blocks else set()
        for block in blocks:
            text = block.raw
            if number == 1 and block.y0 > height * 0.75 and FIRST_PAGE_FOOTER.search(text) and len(text) < 400:
                block.kind = "drop"  # the venue / copyright / license note under the first page
            elif PAGE_NUMBER.match(text) and (_in_margin(block, height) or (
                    id(block) in outermost and not height * 0.2 < block.y0 < height * 0.8)):
                block.kind = "drop"  # a bare page number: in the margin, or the first/last line of the page
            elif _in_margin(block, height) and len(pages) > 2 and seen[_margin_key(text)] >= repeated:
                block.kind = "drop"


def _in_margin(block: TextBlock, height: float) -> bool:
    return block.y1 <= height * MARGIN or block.y0 >= height * (1 - MARGIN)


def _order_columns(blocks: list[TextBlock], width: float) -> None:
    """Sort blocks in reading order: bands cut by full-width blocks; left column, then right."""
    middle = width / 2
    gutter = width * 0.02
    for block in blocks:
        if block.x1 <= middle + gutter and block.x0 < middle - gutter:
            block.column = 1
        elif block.x0 >= middle - gutter and block.x1 > middle + gutter:
            block.column = 2
        else:
            block.column = 0
    right_chars = sum(b.chars for b in blocks if b.column == 2)
    left_chars = sum(b.chars for b in blocks if b.column == 1)
    if right_chars < 0.15 * max(left_chars, 1) or left_chars < 0.15 * max(right_chars, 1):
        for block in blocks:  # one-column page: a short line off the middle is not a column
            block.column = 0
    spanning = sorted((b for b in blocks if b.column == 0), key=lambda b: b.y0)
    ordered: list[TextBlock] = []
    remaining = [b for b in blocks if b.column != 0]
    for cut in spanning + [None]:
        limit = cut.y0 if cut is not None else float("inf")
        band = [b for b in remaining if (b.y0 + b.y1) / 2 < limit]
        remaining = [b for b in remaining if (b.y0 + b.y1) / 2 >= limit]
        ordered += sorted(band, key=lambda b: (b.column, b.y0, b.x0))
        if cut is not None:
            ordered.append(cut)
    blocks[:] = ordered


def _classify(blocks: list[TextBlock], body_size: float, height: float) -> None:
    for block in blocks:
        if block.kind == "drop":
            continue
        text = block.raw
        small = block.size < body_size * 0.92
        if CAPTION_START.match(text) or (small and CAPTION_LOOSE.match(text)):
            block.kind = CAPTION
        elif small and block.y0 > height * 0.7 and re.match(r"^[\d*∗†‡§¶]", text) and not PAGE_NUMBER.match(text):
            block.kind = "footnote"


def _normal(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def _apply_outline(pages: list[list[TextBlock]], outline: list) -> bool:
    """Mark the blocks the outline points at as headings; False if the outline does not fit."""
    entries = [(level, title.strip(), page) for level, title, page in outline
               if title and title.strip() and 1 <= page <= len(pages)]
    if not entries:
        return False
    found = 0
    for level, title, page in entries:
        wanted = _normal(title)
        for block in pages[page - 1]:
            if block.kind in ("drop", CAPTION) or len(block.raw) > len(title) + 20:
                continue
            have = _normal(block.raw)
            if have and (have == wanted or (len(wanted) > 3 and have.endswith(wanted)) or
                         (len(have) > 3 and wanted.endswith(have) and len(have) >= len(wanted) * 0.6)):
                block.kind, block.heading, block.level = "heading", re.sub(r"\s+", " ", title), level
                found += 1
                break
    if found < max(1, len(entries) // 2):
        for blocks in pages:
            for block in blocks:
                if block.kind == "heading":
                    block.kind, block.heading = TEXT, None
        return False
    return True


def _style_headings(pages: list[list[TextBlock]], body_size: float, only_known: bool = False) -> None:
    """Headings by style. If the paper numbers its headings, an unnumbered bold line is a table
    header or a run-in label, not a section, unless it is a name like 'Abstract' or 'References'.
    With `only_known`, only such names are taken (the outline already gave the rest)."""
    candidates: list[TextBlock] = []
    front_matter = True  # authors and affiliations are bold and big too: wait for a real section
    for blocks in pages:
        for block in blocks:
            if block.kind != TEXT or not _looks_like_heading(block, body_size):
                continue
            if front_matter and block.page == 1 and not (KNOWN_SECTIONS.match(block.raw)
                                                         or NUMBERED_HEADING.match(block.raw)):
                continue
            if any(other is not block and other.kind != "drop" and other.column == block.column
                   and other.y0 < block.y1 - 1 and other.y1 > block.y0 + 1
                   and (other.x0 >= block.x1 or other.x1 <= block.x0) for other in blocks):
                continue  # shares its line with another block: a table row, not a heading
            front_matter = False
            candidates.append(block)
    numbered = sum(bool(NUMBERED_HEADING.match(b.raw)) for b in candidates)
    for block in candidates:
        known = KNOWN_SECTIONS.match(block.raw) and len(block.raw) < 40
        if only_known and not known:
            continue
        if numbered >= 3 and not NUMBERED_HEADING.match(block.raw) and not known:
            continue
        block.kind, block.heading = "heading", _heading_text(block)
        number = re.match(r"\d+(?:\.\d+)*", block.heading)
        block.level = number.group(0).count(".") + 1 if number else 1


def _looks_like_heading(block: TextBlock, body_size: float) -> bool:
    text = block.raw
    if len(block.lines) > 3 or len(text) > 120 or not re.search(r"[^\W\d_]", text):
        return False
    if not all(_emphasized(line, body_size) for line in block.lines):
        return False
    if text.endswith((".", "。", ",", "，", ";")) and not re.fullmatch(r"[\d.]+\.?", text.split()[0] if text.split() else ""):
        return bool(NUMBERED_HEADING.match(text)) and len(text) < 60
    return True


def _heading_text(block: TextBlock) -> str:
    text = re.sub(r"\s+", " ", block.raw).strip()
    return re.sub(r"^(\d+(?:\.\d+)*)\.?\s+", r"\1 ", text)


def _title_from_first_page(blocks: list[TextBlock], body_size: float) -> str | None:
    """The largest text on page 1, with the lines next to it set in the same size."""
    candidates = [b for b in blocks if b.kind == TEXT and b.size >= body_size * 1.3 and len(b.raw) < 300]
    if not candidates:
        return None
    size = max(b.size for b in candidates)
    parts = [b for b in sorted(candidates, key=lambda b: b.y0) if b.size >= size * 0.75]
    title = [parts[0]]
    for block in parts[1:]:
        if block.y0 - title[-1].y1 > size * 1.5:
            break
        title.append(block)
    for block in title:
        block.kind = "title"
    return re.sub(r"\s+", " ", " ".join(b.raw for b in title))


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W\d_][\w-]*[^\W\d_]|[^\W\d_]", text.lower())


def _vocabulary(pages: list[list[TextBlock]]) -> set[str]:
    """Every word the document writes whole on one line: decides how to join a split word."""
    vocabulary: set[str] = set()
    for blocks in pages:
        for block in blocks:
            for line in block.lines:
                words = _words(line.text)
                vocabulary.update(words[:-1] if line.text.endswith("-") else words)
    return vocabulary


def _join_lines(lines: list[str], vocabulary: set[str]) -> str:
    text = ""
    for line in lines:
        text = _join(text, line, vocabulary) if text else line
    return text


def _join(left: str, right: str, vocabulary: set[str]) -> str:
    if not left:
        return right
    if left.endswith("-") and len(left) > 1 and left[-2].isalpha() and right[:1].isalpha():
        head = re.search(r"(?<![\w-])([\w-]*)-$", left).group(1)  # from the word's start only: linear
        tail = re.match(r"[\w-]*", right).group(0)
        joined, hyphenated = (head + tail).lower(), f"{head}-{tail}".lower()
        keep_hyphen = (hyphenated in vocabulary and joined not in vocabulary) or right[0].isupper()
        return left + right if keep_hyphen else left[:-1] + right
    if _is_cjk(left[-1]) and _is_cjk(right[0]):
        return left + right
    return f"{left} {right}"


def _continues(text: str) -> bool:
    """Could this block carry on an unfinished sentence (lower case, a subscript, CJK)?"""
    first = text[:1]
    return first.islower() or (first.isdigit() and not NUMBERED_HEADING.match(text)) or first in ",.;:)]" \
        or _is_cjk(first)


def _is_cjk(char: str) -> bool:
    return "\u3000" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff" or "\uff00" <= char <= "\uffef"


def _headings(pages: list[list[TextBlock]]) -> list[Heading]:
    return [Heading(b.heading, b.page, b.level) for blocks in pages for b in blocks if b.kind == "heading"]


def _passages(pages: list[list[TextBlock]], vocabulary: set[str]) -> list[Passage]:
    paragraphs: list[_Paragraph] = []
    section: str | None = None
    last_text: _Paragraph | None = None  # the paragraph a continuation would join
    for blocks in pages:
        footnotes = []
        for block in blocks:
            if block.kind in ("drop", "title"):
                continue
            if block.kind == "heading":
                section, last_text = block.heading, None
                continue
            text = _join_lines([line.text for line in block.lines], vocabulary)
            if block.kind == "footnote":
                footnotes.append(_Paragraph(text, block.page, block.page, section, TEXT))
                continue
            if block.kind == CAPTION:
                paragraphs.append(_Paragraph(text, block.page, block.page, section, CAPTION))
                continue
            if last_text is not None and last_text.open_end and _continues(text):
                last_text.text = _join(last_text.text, text, vocabulary)
                last_text.page_end = block.page
            else:
                last_text = _Paragraph(text, block.page, block.page, section, TEXT)
                paragraphs.append(last_text)
            last_text.open_end = not last_text.text.endswith(SENTENCE_END)
        paragraphs.extend(footnotes)
    return [Passage(p.text, p.section, p.page_start, p.page_end, p.kind) for p in paragraphs if p.text.strip()]
