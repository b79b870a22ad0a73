"""BibTeX and BibLaTeX files: entries with a PDF in their `file` field, read with bibtexparser 2;
and the BibTeX record of an entry, for export.

The `file` field is written differently by each reference manager; all of these are read:
  Zotero            {Full Text PDF:/home/me/Zotero/storage/KEY/Buck - 2018.pdf:application/pdf}
  Better BibTeX     {/home/me/Zotero/storage/KEY/Buck - 2018.pdf}   (several joined by ";")
  JabRef            {:papers/buck2018.pdf:PDF} or {Main text:C\\:\\\\Papers\\\\buck.pdf:PDF}
  Mendeley          {:C$\\backslash$:/Users/me/Mendeley Desktop/buck\\_2018.pdf:pdf}, and on macOS and
                    Linux the absolute path without its leading "/" ({:Users/me/buck.pdf:pdf})
  plain paths       {papers/buck2018.pdf}
Relative paths are relative to the folder of the .bib file. The first PDF of an entry is its document.

Reading is linear in the file's size: the file is read within max_file_mb, and a field over
MAX_BIBTEX_FIELD_CHARS is cut to it before any decoding (LaTeX decoding costs more than linear time on
one long value), with a note on its entry saying so.
"""
from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from pathlib import Path, PureWindowsPath
from urllib.parse import unquote, urlparse

import bibtexparser
from bibtexparser.middlewares.names import parse_single_name_into_parts, split_multiple_persons_names
from bibtexparser.model import DuplicateBlockKeyBlock, Entry, Field
from pylatexenc.latex2text import LatexNodes2Text
from pylatexenc.latexencode import UnicodeToLatexEncoder

from forest.ingest.files import file_limit, read_limited
from forest.library.identity import normalize_arxiv_id
from forest.records import Archive
from forest.text import truncate
from forest.library.entries import (
    Creator, LibraryEntry, LibraryError, LibraryReading, SkippedItem, normalize_doi, year_in,
)
from forest.limits import DEFAULT_MAX_FILE_BYTES, MAX_BIBTEX_FIELD_CHARS

BIBTEX_SUFFIXES = (".bib", ".bibtex", ".biblatex")
FILE_FIELDS = ("file", "pdf")     # "pdf": Papers and BibDesk exports
NAME_FIELDS = (("author", "author"), ("editor", "editor"), ("translator", "translator"))
# Where a record names the work it appeared in (BibTeX, then BibLaTeX's names), in order of preference.
VENUE_FIELDS = ("journal", "booktitle", "journaltitle", "eventtitle", "howpublished")
# A venue named this way is a conference's or a workshop's proceedings (@inproceedings), else a journal's.
PROCEEDINGS_WORDS = ("proceedings", "conference", "workshop", "symposium", "meeting", "congress")

# What LaTeX decoding would change; text without any of these is only whitespace-collapsed, fast.
_LATEX_MARKS = ("\\", "{", "}", "$", "~", "%", "&", "^", "_", "`", "--", "''")

_LATEX_TO_TEXT = LatexNodes2Text()
_TEXT_TO_LATEX = UnicodeToLatexEncoder(non_ascii_only=False, replacement_latex_protection="braces-all",
                                       unknown_char_policy="keep", unknown_char_warning=False)

# Zotero item types and the BibTeX entry types they export as (other types export as @misc).
BIBTEX_TYPES = {
    "journalArticle": "article", "magazineArticle": "article", "newspaperArticle": "article",
    "book": "book", "bookSection": "incollection", "conferencePaper": "inproceedings",
    "thesis": "phdthesis", "report": "techreport", "manuscript": "unpublished",
    "preprint": "misc", "webpage": "misc", "document": "misc",
}


def read_bibtex(path: Path | str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> LibraryReading:
    path = Path(path).expanduser()
    if not path.is_file():
        raise LibraryError(f"{path} is not a file")
    library = bibtexparser.parse_string(_read_text(path, max_bytes))
    entries: list[LibraryEntry] = []
    skipped: list[SkippedItem] = []
    blocks = list(library.entries)
    for failed in library.failed_blocks:
        if isinstance(failed, DuplicateBlockKeyBlock) and failed.raw:
            blocks += _parsed_alone(failed.raw, library)   # a second entry under the same key is still a reference
        else:
            skipped.append(SkippedItem(source_key=f"line {failed.start_line}", title="",
                                       reason=f"could not be parsed: {failed.error}"))
    for block in blocks:
        entry = _entry_of(block, path.parent)
        if isinstance(entry, SkippedItem):
            skipped.append(entry)
        else:
            entries.append(entry)
    return LibraryReading(kind="bibtex", source=path, entries=tuple(entries), skipped=tuple(skipped))


def _parsed_alone(raw: str, library: bibtexparser.Library) -> list[Entry]:
    """An entry the parser set aside (its key was taken), parsed on its own with the file's @strings."""
    strings = "\n".join(string.raw or "" for string in library.strings)
    return bibtexparser.parse_string(strings + "\n" + raw).entries


def _read_text(path: Path, max_bytes: int) -> str:
    data = read_limited(path, max_bytes, file_limit(max_bytes))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")    # older exports (JabRef 2, Mendeley on Windows)


def _bounded_fields(block: Entry) -> tuple[dict[str, str], tuple[str, ...]]:
    """The entry's text fields by lower-case name, each cut to MAX_BIBTEX_FIELD_CHARS, and a note for each cut."""
    fields, notes = {}, []
    for field in block.fields:
        if not isinstance(field.value, str):
            continue
        name, value = field.key.lower(), field.value
        if len(value) > MAX_BIBTEX_FIELD_CHARS:
            notes.append(f"field {truncate(name, 40)} cut from {len(value):,} to {MAX_BIBTEX_FIELD_CHARS:,} characters")
            value = value[:MAX_BIBTEX_FIELD_CHARS]
        fields[name] = value
    return fields, tuple(notes)


def _entry_of(block: Entry, folder: Path) -> LibraryEntry | SkippedItem:
    fields, notes = _bounded_fields(block)
    title = latex_to_text(fields.get("title", ""))
    files = [record for name in FILE_FIELDS if name in fields for record in parse_file_field(fields[name])]
    pdfs = [(path, kind) for path, kind in files if "pdf" in kind.lower() or path.lower().endswith(".pdf")]
    if not pdfs:
        reason = "no PDF in its file field" if files else "no file field"
        return SkippedItem(source_key=block.key, title=title, reason=reason)
    resolved = [resolve_file_path(path, folder) for path, _ in pdfs]
    path, missing_reason = next((r for r in resolved if r[0] is not None and r[0].is_file()), resolved[0])
    creators = tuple(creator for field_name, creator_type in NAME_FIELDS
                     for creator in parse_names(fields.get(field_name, ""), creator_type))
    date = fields.get("date", "").strip()
    return LibraryEntry(
        path=path, title=title, source_kind="bibtex", source_key=block.key, creators=creators,
        year=year_in(fields.get("year", "")) or year_in(date), date=date or fields.get("year", "").strip(),
        doi=normalize_doi(_unescape_identifier(fields.get("doi", ""))),
        arxiv_id=_arxiv_id_of(fields), venue=latex_to_text(next((fields[v] for v in VENUE_FIELDS if fields.get(v)), "")),
        url=_unescape_identifier(fields.get("url", "")),
        abstract=latex_to_text(fields.get("abstract", "")),
        tags=_keywords(fields.get("keywords", "")), citation_key=block.key,
        item_type=block.entry_type.lower(), missing_reason=missing_reason, notes=notes)


def latex_to_text(value: str) -> str:
    """LaTeX markup decoded to plain text: accents, escapes and braces gone, whitespace collapsed."""
    if not value:
        return ""
    if not any(mark in value for mark in _LATEX_MARKS):
        return " ".join(value.split())
    try:
        text = _LATEX_TO_TEXT.latex_to_text(_escape_bare_specials(value))
    except Exception:       # pylatexenc parses tolerantly; anything it still rejects is kept as written
        text = value.replace("{", "").replace("}", "")
    return " ".join(text.split())


def _escape_bare_specials(value: str) -> str:
    """A bare "%" or "&" is text in a .bib (BibTeX has no comments inside a value), but LaTeX would
    read the rest of the line as a comment, or a column break: escape them before decoding."""
    out, index = [], 0
    while index < len(value):
        char = value[index]
        if char == "\\":
            out.append(value[index:index + 2])
            index += 2
            continue
        out.append("\\" + char if char in "%&" else char)
        index += 1
    return "".join(out)


def parse_names(value: str, creator_type: str = "author") -> list[Creator]:
    """BibTeX names joined by "and" ("Last, First", "First Last", "von Last, Jr, First", and fully
    braced organisation names), LaTeX decoded. "and" inside braces does not split."""
    creators = []
    for name in split_multiple_persons_names(value):
        parts = parse_single_name_into_parts(name, strict=False)
        last = latex_to_text(" ".join(parts.von + parts.last))
        first = latex_to_text(" ".join(parts.first + parts.jr))
        if last or first:
            creators.append(Creator(last=last or first, first=first if last else "", creator_type=creator_type))
    return creators


def _keywords(value: str) -> tuple[str, ...]:
    text = latex_to_text(value).replace(";", ",")
    seen: dict[str, None] = {}
    for keyword in text.split(","):
        keyword = keyword.strip()
        if keyword:
            seen.setdefault(keyword, None)
    return tuple(seen)


def _unescape_identifier(value: str) -> str:
    """DOIs and URLs are kept as written but for the escapes BibTeX needs (\\_ \\% \\& \\#)."""
    out, escaped = [], False
    for char in value.strip():
        if char == "\\" and not escaped:
            escaped = True
            continue
        escaped = False
        out.append(char)
    return "".join(out).replace("{", "").replace("}", "")


def parse_file_field(value: str) -> list[tuple[str, str]]:
    """(path, file type) of each file a `file` field names, in order. Records are separated by ";"
    and their parts by ":", each escaped with a backslash where it is part of a path."""
    records: list[list[str]] = [[]]
    part: list[str] = []     # characters joined once per part: linear in the field's length
    for char, escaped in _file_field_chars(value):
        if char in ";:" and not escaped:
            records[-1].append("".join(part))
            part = []
            if char == ";":
                records.append([])
        else:
            part.append(char)
    records[-1].append("".join(part))
    files = []
    for parts in records:
        path, kind = _path_and_type(parts)
        if path.strip():
            files.append((path.strip(), kind.strip()))
    return files


def _file_field_chars(value: str) -> list[tuple[str, bool]]:
    """The field's characters, each with whether it was escaped. Mendeley writes a backslash as
    "$\\backslash$" and some characters as "\\~{}"; JabRef and Zotero escape ":", ";" and "\\"."""
    text = value.replace("$\\backslash$", "\\")
    chars: list[tuple[str, bool]] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            following = text[index + 1]
            index += 2
            if text.startswith("{}", index):
                index += 2
            if following.isalnum() or following == ".":
                chars += [("\\", False), (following, False)]    # a Windows separator, not an escape
            else:
                chars.append((following, True))
            continue
        chars.append((char, False))
        index += 1
    return chars


def _path_and_type(parts: list[str]) -> tuple[str, str]:
    """Split one record: "path", "description:path:type", or a Windows path with an unescaped drive
    colon ("C:\\x.pdf", "desc:C:\\x.pdf:PDF")."""
    if len(parts) == 1:
        return parts[0], ""
    if len(parts) == 2:
        if len(parts[0]) == 1 and parts[0].isalpha():
            return parts[0] + ":" + parts[1], ""
        return parts[1], ""
    return ":".join(parts[1:-1]), parts[-1]


def resolve_file_path(written: str, folder: Path) -> tuple[Path | None, str]:
    """Where a path written in a .bib points, and why it cannot be used if it cannot."""
    if written.startswith("file://"):
        written = unquote(urlparse(written).path)
    if _is_windows_absolute(written):
        if Path(written).is_absolute():          # running on Windows
            return Path(written), ""
        return None, f"a Windows path ({written}) on this system"
    path = Path(written).expanduser()
    if path.is_absolute():
        return path, ""
    relative = folder / path
    if not relative.exists() and (Path("/") / path).exists():
        return Path("/") / path, ""              # Mendeley drops the leading "/" of absolute paths
    return relative, ""


def _is_windows_absolute(written: str) -> bool:
    """A drive path (C:\\Papers\\x.pdf, C:/Papers/x.pdf) or a network path (\\\\server\\share\\x.pdf)."""
    return PureWindowsPath(written).is_absolute() and ("\\" in written or written[1:2] == ":")


def bibtex_of(entry: LibraryEntry) -> str:
    """The entry as a BibTeX record, text LaTeX-encoded so that BibTeX and BibLaTeX both read it."""
    fields = [Field("title", _text_to_latex(entry.title))] if entry.title else []
    for creator_type in dict.fromkeys(c.creator_type for c in entry.creators):
        if creator_type in ("author", "editor", "translator"):
            names = [_name_to_bibtex(c) for c in entry.creators if c.creator_type == creator_type]
            fields.append(Field(creator_type, " and ".join(names)))
    entry_type = _bibtex_type(entry)
    if entry.venue:
        fields.append(Field(_venue_field(entry_type), _text_to_latex(entry.venue)))
    if entry.year:
        fields.append(Field("year", str(entry.year)))
    if entry.doi:
        fields.append(Field("doi", _identifier_to_bibtex(entry.doi)))
    if entry.arxiv_id:
        fields += [Field("eprint", _identifier_to_bibtex(entry.arxiv_id)), Field("archiveprefix", "arXiv")]
    if entry.url:
        fields.append(Field("url", _identifier_to_bibtex(entry.url)))
    if entry.abstract:
        fields.append(Field("abstract", _text_to_latex(entry.abstract)))
    if entry.tags:
        fields.append(Field("keywords", _text_to_latex(", ".join(entry.tags))))
    record = Entry(entry_type, citation_key_of(entry), fields)
    return bibtexparser.write_string(bibtexparser.Library([record]))


def _bibtex_type(entry: LibraryEntry) -> str:
    if entry.source_kind == "bibtex" and entry.item_type:
        return entry.item_type
    if entry.item_type in BIBTEX_TYPES:
        return BIBTEX_TYPES[entry.item_type]
    if entry.venue:   # a paper that said where it appeared, and nothing of its type
        return "inproceedings" if any(w in entry.venue.lower() for w in PROCEEDINGS_WORDS) else "article"
    return "misc"


def _venue_field(entry_type: str) -> str:
    """The field that names where a record of this type appeared."""
    return {"article": "journal", "inproceedings": "booktitle", "incollection": "booktitle",
            "inbook": "booktitle", "conference": "booktitle"}.get(entry_type, "howpublished")


def _arxiv_id_of(fields: dict[str, str]) -> str:
    """The arXiv id of a record that names it as its e-print (eprint with archivePrefix or
    eprinttype arXiv), else ""."""
    prefix = (fields.get("archiveprefix") or fields.get("eprinttype") or "").strip().lower()
    return normalize_arxiv_id(_unescape_identifier(fields.get("eprint", ""))) if prefix == "arxiv" else ""


def citation_key_of(entry: LibraryEntry) -> str:
    """The entry's own citation key, else one made like "buck2018ask" (ASCII letters and digits)."""
    if entry.citation_key and not any(char in entry.citation_key for char in " ,{}\"#%'()=\\"):
        return entry.citation_key
    family = entry.authors[0].last if entry.authors else ""
    first_word = next((w for w in entry.title.split() if len(_ascii_key(w)) > 3), "")
    key = _ascii_key(family) + str(entry.year or "") + _ascii_key(first_word)
    return key if key and not key.isdigit() else "ref" + key


def _ascii_key(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return "".join(char for char in folded.lower() if char.isalnum())


def _text_to_latex(text: str) -> str:
    return _TEXT_TO_LATEX.unicode_to_latex(text)


def _identifier_to_bibtex(value: str) -> str:
    # DOIs and URLs are verbatim fields (no LaTeX escapes); only a brace could unbalance the field
    return value.replace("{", "").replace("}", "")


def _name_to_bibtex(creator: Creator) -> str:
    last = _text_to_latex(creator.last)
    if not creator.first:
        return "{" + last + "}"     # an organisation, or a one-word name: kept whole
    return f"{{{last}}}, {_text_to_latex(creator.first)}" if "," in creator.last else f"{last}, {_text_to_latex(creator.first)}"


def bibtex_of_archives(archives: Sequence[Archive], archive_ids: Sequence[int] | None = None) -> str:
    """The BibTeX of the archives' papers (`archive_ids` only, if given); an archive with no
    library metadata gives none."""
    wanted = None if archive_ids is None else set(archive_ids)
    return "\n".join(bibtex_of(LibraryEntry.from_metadata(a.library)) for a in archives
                     if a.library and (wanted is None or a.id in wanted))
