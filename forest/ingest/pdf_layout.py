"""A PDF page's text as styled lines and blocks (PyMuPDF's `dict` extraction): the layout that both
the PDF loader (forest.ingest.pdf) and the metadata reader (forest.ingest.metadata) work from."""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

from forest.ingest.document import TEXT

LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"})
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffd]")


@dataclass
class TextLine:
    text: str
    size: float          # the size most of its characters are set in
    bold_chars: int
    chars: int
    italic_chars: int = 0
    lead_size: float = 0.0  # size of its first character (small caps: larger than the rest)
    plain: str = ""      # the text without superscripts (author and footnote marks); a wide gap is a tab
    bbox: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)


@dataclass
class TextBlock:
    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    lines: list[TextLine]
    kind: str = TEXT      # text | caption | heading | footnote | drop
    column: int = 0       # 0 spanning / single column, 1 left, 2 right
    heading: str | None = None
    level: int = 1

    @property
    def raw(self) -> str:
        return " ".join(line.text for line in self.lines).strip()

    @property
    def chars(self) -> int:
        return sum(line.chars for line in self.lines)

    @property
    def size(self) -> float:
        weights = Counter()
        for line in self.lines:
            weights[round(line.size, 1)] += line.chars
        return weights.most_common(1)[0][0] if weights else 0.0


@dataclass
class PageText:
    blocks: list[TextBlock]
    rotated: list[str]   # vertical or upside-down lines: arXiv's side stamp, axis labels


def page_text(page, number: int) -> PageText:
    """The page's horizontal text as blocks of styled lines, and its rotated lines as plain text."""
    blocks, rotated = [], []
    import pymupdf

    flags = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES  # no image bytes: text is all we read
    for raw in page.get_text("dict", flags=flags, sort=False)["blocks"]:
        if raw.get("type") != 0:
            continue
        lines = []
        for line in raw["lines"]:
            dx, dy = line["dir"]
            if abs(dy) > 0.1 or dx < 0:  # rotated or upside-down text: stamps, axis labels
                rotated.append("".join(span["text"] for span in line["spans"]))
                continue
            styled = _styled_line(line)
            if styled is not None:
                lines.append(styled)
        if lines:
            x0, y0, x1, y1 = raw["bbox"]
            blocks.append(TextBlock(number, x0, y0, x1, y1, lines))
    return PageText(blocks, rotated)


def _styled_line(line: dict) -> TextLine | None:
    text, size_weight, bold, italic, chars, lead_size = "", Counter(), 0, 0, 0, 0.0
    spans = []
    for span in line["spans"]:
        span_text = CONTROL.sub("", unicodedata.normalize("NFC", span["text"].translate(LIGATURES)))
        text += span_text
        visible = len(span_text.strip())
        chars += visible
        size_weight[round(span["size"], 1)] += visible
        font = span["font"].lower()
        if span["flags"] & 16 or "bold" in font or font.endswith("-bd"):
            bold += visible
        if span["flags"] & 2 or "italic" in font or "oblique" in font:
            italic += visible
        if visible and not lead_size:
            lead_size = span["size"]
        spans.append((span_text, span))
    if not text.strip():
        return None
    size = size_weight.most_common(1)[0][0] if size_weight else 0.0
    return TextLine(text.strip(), size, bold, chars, italic, lead_size, _plain(spans, size), tuple(line["bbox"]))


def _plain(spans: list[tuple[str, dict]], size: float) -> str:
    """The line without its superscripts (raised or much smaller spans), a wide gap as a tab."""
    plain, right = "", None
    for text, span in spans:
        if right is not None and span["bbox"][0] - right > max(size, 1.0) * 1.5:
            plain += "\t"
        right = span["bbox"][2]
        if span["flags"] & 1 or span["size"] < size * 0.8:
            plain += " "
        else:
            plain += text
    return plain.strip()


def body_text_size(pages: list[list[TextBlock]]) -> float:
    weights: Counter = Counter()
    for blocks in pages:
        for block in blocks:
            for line in block.lines:
                weights[round(line.size)] += line.chars
    return float(weights.most_common(1)[0][0]) if weights else 10.0
