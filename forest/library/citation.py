"""Author-year citations: "Buck et al. (2018)", "Buck and Alt (2018)", "Buck (2018)"."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forest.library.entries import Creator, LibraryEntry


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return (0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2EBEF
            or 0xF900 <= code <= 0xFAFF or 0x3040 <= code <= 0x30FF or 0xAC00 <= code <= 0xD7AF)


def _written_in_cjk(name: str) -> bool:
    return any(_is_cjk(char) for char in name)


def cited_name(creator: Creator) -> str:
    """The name a citation uses: the family name; for a name written in Chinese, Japanese or Korean
    script the whole name, family name first and unspaced ("王小明"), as those names are cited."""
    if _written_in_cjk(creator.last) and _written_in_cjk(creator.first):
        return creator.last + creator.first
    return creator.last or creator.first


def short_citation(entry: LibraryEntry) -> str:
    """"Buck (2018)", "Buck and Alt (2018)", "Buck et al. (2018)" for three or more authors;
    "n.d." when the year is unknown; the title (with the year when known) when no author is."""
    names = [name for name in (cited_name(c) for c in entry.authors) if name]
    year = str(entry.year) if entry.year else "n.d."
    if not names:
        title = entry.title or (entry.path.stem if entry.path else entry.source_key)
        return f"{title} ({entry.year})" if entry.year else title
    if len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who} ({year})"


def cite_as(metadata: Mapping[str, Any] | None) -> str | None:
    """How a paper whose library metadata (LibraryEntry.metadata()) an archive stores is cited;
    None without metadata, and for a paper known only by what it says of itself that names no
    author (its title is already what every face calls it: a citation would only repeat it)."""
    if not metadata or (metadata.get("source_kind") == "paper" and not metadata.get("creators")):
        return None
    return short_citation(LibraryEntry.from_metadata(dict(metadata))) or None
