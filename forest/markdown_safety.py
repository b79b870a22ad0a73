"""Untrusted text (a document's, a model's, an agent's) made safe to show as Markdown, and text a
person typed shown as written: the one sanitizer every page and export puts such text through.
Every pattern matches in linear time: no backtracking on user text."""
from __future__ import annotations

import re

# Untrusted Markdown (document text, model output): the syntax that could make a browser load
# something or link away, found without backtracking (each pattern matches in linear time).
_IMAGE_START = re.compile(r"!\[")                     # every image, inline or by reference
_REMOTE_LINK = re.compile(r"\]\((?=\s*(?:<\s*)?(?:[A-Za-z][A-Za-z0-9+.\-]{0,31}:|[/\\]{2}))")
# An inline image "![alt](address)", its parts bounded (a longer one is escaped as any other image).
_INLINE_IMAGE = re.compile(r"!\[([^\[\]\n]{0,200})\]\(\s{0,8}<?([^\s()<>]{1,2048})>?\s{0,8}\)")
_REFERENCE_DEFINITION = re.compile(r"\]:")              # "[label]: url" gives any "[text][label]" a target
_TAG_OR_AUTOLINK = re.compile(r"<(?=[A-Za-z/!?])")      # raw HTML, and "<https://...>" autolinks
# GFM makes links of these in the rendered text, after escapes are read: a word joiner (U+2060,
# invisible) after "http" or "www" is what stops it.
_BARE_ADDRESS = re.compile(r"(?i)(?<![a-z0-9])(?:https?(?=://)|www(?=\.))")
WORD_JOINER = "\u2060"


# Every ASCII character Markdown (and Streamlit's $math$) gives a meaning to, and ':' (an address).
_MARKDOWN_SYNTAX = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$&:])")


def literal(text: str) -> str:
    """Text a person or a program wrote (a question, an error naming a file) as Markdown that shows
    it as written: no bold, math, link, heading or list made of its characters."""
    return _MARKDOWN_SYNTAX.sub(r"\\\1", text)


def safe_markdown(text: str) -> str:
    """Untrusted text (a document's, a model's) made safe to render as Markdown: no image (of any
    address), no link to another site (inline, by reference, autolink or bare address: a link
    within the page, "#cite-3", stays), no raw HTML. The syntax is escaped, not removed, so the
    text reads as it was written, addresses included (as text)."""
    text = _IMAGE_START.sub(r"!\\[", text)
    text = _REMOTE_LINK.sub(r"]\\(", text)
    text = _REFERENCE_DEFINITION.sub(r"]\\:", text)
    text = _BARE_ADDRESS.sub(lambda m: m.group(0) + WORD_JOINER, text)
    return _TAG_OR_AUTOLINK.sub(r"\\<", text)


def images_as_links(text: str) -> str:
    """Untrusted Markdown written out for another editor (the notes export, opened in Obsidian): an
    inline image becomes a link to its address, followed on a click and never loaded by itself;
    any other image syntax and raw HTML are escaped as safe_markdown escapes them."""
    text = _INLINE_IMAGE.sub(r"[\1](\2)", text)
    text = _IMAGE_START.sub(r"!\\[", text)
    return _TAG_OR_AUTOLINK.sub(r"\\<", text)
