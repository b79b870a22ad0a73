"""A cited passage where it was read: on its PDF page, rendered by PyMuPDF with the passage's lines
highlighted, or, for text and Markdown documents, within its section.

Locating: a leaf's text is not the page's text verbatim (the parser joins hyphenated words, drops
running headers, reorders columns, moves footnotes), so the page's words are matched to the
passage by word n-grams, in any order, and the words matched are drawn line by line. No UI code:
the workbench shows the result; CLI or MCP could as well.
"""
from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from forest.records import MemoryNode, entry_title
from forest.storage.source_files import SourceFiles
from forest.storage.archives import ForestStore
from forest.text import is_cjk_char

Rect = tuple[float, float, float, float]   # x0, y0, x1, y1

NGRAM = 4            # four words in a row rarely repeat elsewhere on a page
LOOSE_NGRAM = 2      # for tables and formulas, whose cells the parser reorders
LOOSE_BELOW = 0.5    # share of the passage found with NGRAM under which LOOSE_NGRAM is tried
ZOOM = 1.5           # 72 dpi x 1.5: a page is about 900 pixels wide
# Around a passage: its column drawn at twice the size (a column is under 60% of the page's width,
# with a 3% margin either side), so body text reads at the size of a book's in a half-screen panel.
PASSAGE_ZOOM = 3.0
COLUMN_SHARE = 0.6
CLIP_MARGIN = 0.03
SECTION_LEAVES = 12  # a text document without headings: the leaves around the passage, either side


@dataclass(frozen=True)
class SourcePreview:
    """What a citation opens: the PDF and where the passage lies on its pages, or (text documents
    and PDFs no longer on disk) the passage within its section."""

    node_id: int
    document: str                        # the paper's title, else its file name
    citation: str                        # "pp. 3-4, §2 Method"
    section: str | None
    pdf: Path | None = None
    page_count: int = 0
    page_start: int | None = None
    highlights: dict[int, list[Rect]] = field(default_factory=dict)   # page (1-based) -> lines, PDF points
    passages: list[tuple[str, bool]] = field(default_factory=list)    # the section; True: the cited text

    @property
    def first_page(self) -> int:
        """Where the preview opens: the first page the passage was found on."""
        return min(self.highlights, default=self.page_start or 1)


@dataclass(frozen=True)
class RenderedPage:
    png: bytes
    width: int                   # pixels
    height: int
    rects: list[Rect]            # the highlighted lines, in pixels
    cropped: bool = False        # only the passage's column (render_page's around_passage)
    origin: tuple[float, float] = (0.0, 0.0)   # the page point at the image's top left
    zoom: float = ZOOM           # pixels per page point


def tokens(text: str) -> list[str]:
    """Lower-case words without punctuation ('state-of-the-art' -> 'stateoftheart'), each CJK
    character a token of its own (Chinese is written without spaces)."""
    out: list[str] = []
    for word in unicodedata.normalize("NFKC", text).lower().split():
        run = ""
        for char in word:
            if is_cjk_char(char):
                out.extend([run, char] if run else [char])
                run = ""
            elif char.isalnum():
                run += char
        if run:
            out.append(run)
    return out


def _page_tokens(words: list[tuple], number: int) -> list[tuple[str, int, list[int]]]:
    """A page's words (PyMuPDF's "words" tuples) as (token, page, indexes of the words it came
    from): a word hyphenated at a line's end is joined to the next line's first word, as the
    parser joined it."""
    out = []
    i = 0
    while i < len(words):
        text, used = words[i][4], [i]
        nxt = words[i + 1] if i + 1 < len(words) else None
        if text.endswith("-") and nxt is not None and (nxt[5], nxt[6]) != (words[i][5], words[i][6]):
            text, used = text[:-1] + nxt[4], [i, i + 1]
            i += 1
        out.extend((token, number, used) for token in tokens(text))
        i += 1
    return out


def _matched(sequence: list[str], passage: list[str], n: int) -> set[int]:
    """Positions in `sequence` covered by runs of the passage's n-grams. A run shorter than a lone
    n-gram or two (a common phrase) is dropped, and so is a run that only repeats passage words a
    longer run already placed (a phrase quoted elsewhere on the page: a title, a task name)."""
    at: dict[tuple[str, ...], list[int]] = {}
    for i in range(len(passage) - n + 1):
        at.setdefault(tuple(passage[i:i + n]), []).append(i)
    hit: list[list[int] | None] = [None] * len(sequence)   # the passage positions each page n-gram matches
    for i in range(len(sequence) - n + 1):
        hit[i] = at.get(tuple(sequence[i:i + n]))
    runs: list[tuple[int, int]] = []                        # [start, end) of page positions
    start = None
    for i, found in enumerate([*hit, None]):
        if found and start is None:
            start = i
        elif not found and start is not None:
            runs.append((start, i + n - 1))
            start = None
    shortest = min(n + 2, len(passage))
    keep: set[int] = set()
    placed: set[int] = set()
    for begin, end in sorted(runs, key=lambda r: r[0] - r[1]):   # longest first
        words = {p + k for i in range(begin, end - n + 1) for p in hit[i] or () for k in range(n)}
        if end - begin >= shortest and len(words - placed) > len(words) / 2:
            keep.update(range(begin, end))
            placed |= words
    return keep


def locate(doc, text: str, pages: Iterable[int]) -> dict[int, list[Rect]]:
    """The lines of `text` on those pages of an open PyMuPDF document: one rectangle (PDF points)
    per line, covering the words of the passage on it; pages where nothing matched are left out."""
    passage = tokens(text)
    if not passage:
        return {}
    page_words = {number: doc[number - 1].get_text("words", sort=False) for number in pages
                  if 1 <= number <= doc.page_count}
    sequence = [entry for number, words in page_words.items() for entry in _page_tokens(words, number)]
    stream = [token for token, _, _ in sequence]
    n = min(NGRAM, len(passage))
    matched = _matched(stream, passage, n)
    if len(matched) < LOOSE_BELOW * len(passage) and n > LOOSE_NGRAM:
        matched = _matched(stream, passage, LOOSE_NGRAM)
    lines: dict[tuple[int, int, int], list[float]] = {}
    for position in sorted(matched):
        _, number, used = sequence[position]
        for index in used:
            x0, y0, x1, y1, _, block, line, _ = page_words[number][index]
            box = lines.setdefault((number, block, line), [x0, y0, x1, y1])
            box[:] = [min(box[0], x0), min(box[1], y0), max(box[2], x1), max(box[3], y1)]
    found: dict[int, list[Rect]] = {}
    for (number, _, _), box in sorted(lines.items(), key=lambda item: (item[0][0], item[1][1], item[1][0])):
        found.setdefault(number, []).append((box[0], box[1], box[2], box[3]))
    return found


def render_page(pdf: Path, page: int, rects: Sequence[Rect] = (), zoom: float = ZOOM,
                around_passage: bool = False) -> RenderedPage:
    """One page as PNG with `rects` highlighted (a highlight annotation on the in-memory copy:
    the text stays legible under it; the file is not changed). `around_passage`: only the column
    the highlighted lines lie in (reading_clip), the whole page when they span it."""
    import pymupdf

    with pymupdf.open(pdf) as doc:
        if not 1 <= page <= doc.page_count:
            raise ValueError(f"page {page} is outside 1-{doc.page_count}")
        sheet = doc[page - 1]
        for rect in rects:
            sheet.add_highlight_annot(pymupdf.Rect(rect))
        clip = reading_clip(rects, tuple(sheet.rect)) if around_passage else None
        area = pymupdf.Rect(clip) if clip else sheet.rect
        pixmap = sheet.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), annots=True, clip=area)
        scaled = [((x0 - area.x0) * zoom, (y0 - area.y0) * zoom, (x1 - area.x0) * zoom, (y1 - area.y0) * zoom)
                  for x0, y0, x1, y1 in rects]
        return RenderedPage(pixmap.tobytes("png"), pixmap.width, pixmap.height, scaled, cropped=clip is not None,
                            origin=(area.x0, area.y0), zoom=zoom)


def reading_clip(rects: Sequence[Rect], page: Rect) -> Rect | None:
    """The part of `page` a passage is read in, to draw it larger: the column its lines lie in (a
    two-column paper's half page) over the page's whole height; None when its lines span most of
    the width, where a crop would gain nothing."""
    if not rects:
        return None
    width = page[2] - page[0]
    left, right = min(r[0] for r in rects), max(r[2] for r in rects)
    if right - left > COLUMN_SHARE * width:
        return None
    margin = CLIP_MARGIN * width
    return max(page[0], left - margin), page[1], min(page[2], right + margin), page[3]


def source_preview(store: ForestStore, sources: SourceFiles, model_id: str, node_id: int) -> SourcePreview:
    """Where node `node_id` comes from: its PDF pages with the passage located (a summary node:
    all its leaves), or its section's text with the passage marked."""
    node = store.node(model_id, node_id)
    archive = store.archive(model_id, node.archive_id)
    entry = archive.document_at(node.first_leaf)
    base = SourcePreview(node.id, entry_title(entry) or archive.name, node.citation, node.section,
                         page_start=node.page_start)
    pdf = sources.find(entry)
    if pdf is not None and node.page_start is not None:
        import pymupdf

        text = store.with_text(model_id, node).content
        with pymupdf.open(pdf) as doc:
            found = locate(doc, text, range(node.page_start, (node.page_end or node.page_start) + 1))
            return replace(base, pdf=pdf, page_count=doc.page_count, highlights=found)
    first = entry.get("first_leaf", 0)
    last = entry.get("last_leaf", node.last_leaf)
    around = store.leaves_between(model_id, archive.id, max(first, node.first_leaf - SECTION_LEAVES),
                                  min(last, node.last_leaf + SECTION_LEAVES))
    cited = range(node.first_leaf, node.last_leaf + 1)
    section = [leaf for leaf in around if leaf.section == node.section or leaf.leaf_index in cited]
    return replace(base, passages=section_passages(section, cited))


def section_passages(leaves: list[MemoryNode], cited: range) -> list[tuple[str, bool]]:
    """The leaves' text in order, each leaf's overlap with the one before cut off (its character
    offset says where it starts), flagged when its leaf is cited."""
    out: list[tuple[str, bool]] = []
    end = None
    for leaf in leaves:
        text = leaf.content
        if end is not None and leaf.char_start is not None and leaf.char_start < end:
            text = text[end - leaf.char_start:].lstrip()
        if leaf.char_start is not None:
            end = leaf.char_start + len(leaf.content)
        if text:
            out.append((text, leaf.leaf_index in cited))
    return out
