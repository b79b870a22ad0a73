"""Reference lists (bibliographies): the passages an answer must never quote or read from.

A passage belongs to a reference list when it sits under a "References" / "Bibliography" heading,
or when its text reads as citation entries whatever heading it sits under (a PDF whose reference
heading was not recognised, a list that runs on past a page break): venue words ("Proceedings
of", "arXiv preprint", "pp. 12-20", "CoRR abs/...") and entry years ("Hirst. 2014.", ", 2017.")
that body text, citing "(Feng and Hirst, 2014)", seldom holds, dense against its words.
Measured on labelled passages of real PDFs the rules were not written from:
bench/eval_references.py.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from forest.records import MemoryNode

_REFERENCE_HEADING = re.compile(
    r"(?:(?<![\dIVX])[\dIVX]+\.?\s+)?(?:references?(?: and notes)?|bibliography|works cited|literature cited|cited literature)",
    re.IGNORECASE)
# Words of a bibliography entry's venue, publisher or locator (each matched in linear time).
_VENUE = re.compile(
    r"\bProceedings\b|\bProc\.|\bIn Advances in\b|\barXiv\b|\bCoRR\b|\babs/\d|\bpp\.\s*\d|\bpages \d+\s*[-–]\s*\d|"
    r"\bvol(?:ume)?\.?\s*\d|\bJournal of\b|\bTransactions on\b|\bConference on\b|\bWorkshop on\b|\bSymposium\b|"
    r"\bUniversity Press\b|\bAssociation for Computational Linguistics\b|\bdoi:|\bdoi\.org\b|\bISBN\b|"
    r"\b(?:In )?(?:ACL|NAACL|EMNLP|COLING|EACL|NIPS|NeurIPS|ICLR|ICML|AAAI|IJCAI|SIGIR|KDD|CVPR|LREC|CoNLL|INTERSPEECH|ICASSP)"
    r"(?:[- ]\w+)?\s*(?:\d{4})?[.,]")
# An entry's year: after the authors ("Hirst. 2014."), or closing it (", 2017." / "2017b.");
# body text writes "(Hirst, 2014)" or "Hirst (2014)".
_ENTRY_YEAR = re.compile(r"(?:\.\s|,\s)(?:19|20)\d\d[a-z]?\.")
_WORD = re.compile(r"[^\W\d_]{2,}")
# Share of signals per word above which a passage reads as a reference list; chosen on the
# development PDFs (bench/eval_references.py), checked on the others.
ENTRY_DENSITY = 0.03


def is_reference_heading(heading: str | None) -> bool:
    """'References', '7 References', 'BIBLIOGRAPHY', 'Works Cited' (a heading, not a mention)."""
    return bool(heading) and _REFERENCE_HEADING.fullmatch(heading.strip(" .:")) is not None


def citation_density(text: str) -> float:
    """Bibliography signals (venue words, entry years) per word of the text."""
    words = len(_WORD.findall(text))
    if not words:
        return 0.0
    return (len(_VENUE.findall(text)) + len(_ENTRY_YEAR.findall(text))) / words


def looks_like_citations(text: str) -> bool:
    return citation_density(text) >= ENTRY_DENSITY


def under_reference_heading(headings: Iterable[str]) -> bool:
    return any(is_reference_heading(h) for h in headings)


def is_reference_node(node: MemoryNode) -> bool:
    """A reference-list passage, or a summary node that is a reference section (its title's last
    part is a reference heading)."""
    if node.is_leaf:
        return under_reference_heading(node.headings) or looks_like_citations(node.content)
    title = (node.title or "").split("›")[-1]
    return is_reference_heading(title)
