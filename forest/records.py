"""Plain records returned by the engine; every face serializes them with to_dict()."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any


# Between the contents of the leaves a summary node holds, when its full text is asked for.
SEPARATOR = "\n---\n"
LEAF = "LEAF_CHUNK"
SUMMARY = "SUMMARY_NODE"


def iso(seconds: float | None) -> str | None:
    """Unix seconds as an ISO-8601 UTC timestamp (what every output shows)."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Progress:
    """How far a build has got, stage by stage, for a progress bar or a job's status."""
    stage: str   # parse | chunk | summarize | embed | merge | store
    done: int
    total: int
    detail: str = ""


ProgressFn = Callable[[Progress], None]


def no_progress(_: Progress) -> None:
    """A ProgressFn for callers that show none."""


@dataclass
class MemoryNode:
    id: int
    archive_id: int
    parent_id: int | None
    path: str
    depth: int
    node_type: str
    content: str
    summary: str
    summary_source: str
    leaf_index: int | None
    char_start: int | None
    first_leaf: int | None
    last_leaf: int | None
    merge_order: int | None
    merge_similarity: float | None
    section: str | None = None
    page_start: int | None = None
    page_end: int | None = None
    chunk_kind: str | None = None
    title: str | None = None          # summary nodes: "3 Method › 3.2 Training", or a content label
    heading_path: str | None = None   # leaves: JSON list of the headings above them, outermost first
    work: str | None = None           # how its archive's paper is cited ("Buck et al. (2018)"), if known

    @classmethod
    def from_row(cls, row: Any) -> MemoryNode:
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})

    @property
    def is_leaf(self) -> bool:
        return self.node_type == LEAF

    @property
    def leaf_count(self) -> int:
        return (self.last_leaf - self.first_leaf + 1) if self.first_leaf is not None and self.last_leaf is not None else 1

    @property
    def headings(self) -> list[str]:
        return json.loads(self.heading_path) if self.heading_path else []

    @property
    def name(self) -> str:
        """What a list or a heading calls the node: a summary node its title, a passage its id."""
        if self.is_leaf:
            return f"Passage {self.id}"
        return self.title or f"Node {self.id}"

    @property
    def citation(self) -> str:
        """'p. 7, §3.2 Model', after the work when its library says how to cite it: 'Buck et al.
        (2018), p. 7, §3.2 Model' (empty when there is neither)."""
        return ", ".join(part for part in (self.work, cite(self.page_start, self.page_end, self.section)) if part)

    def to_dict(self, with_content: bool = True) -> dict[str, Any]:
        """Every field, its citation and leaf count. A summary node stores no text of its own
        (its content is its leaves'), so it has content only once that was read in."""
        data = asdict(self)
        data["citation"] = self.citation
        data["leaf_count"] = self.leaf_count
        if not with_content or (not self.is_leaf and not self.content):
            data.pop("content")
        return data

    def outline_entry(self) -> dict[str, Any]:
        """What a reader (person or LLM) needs to choose where to go: a summary node's title,
        summary, pages and size; a leaf's own text."""
        entry = {"id": self.id, "node_type": self.node_type, "citation": self.citation,
                 "page_start": self.page_start, "page_end": self.page_end}
        if self.is_leaf:
            return {**entry, "section": self.section, "content": self.content}
        return {**entry, "title": self.title, "summary": self.summary, "leaf_count": self.leaf_count}


@dataclass(frozen=True)
class MergeStep:
    """One binary merge of the seed's rule, in merge order: leaves first_leaf..split_leaf-1 joined
    with split_leaf..last_leaf. node_id is the summary node it made, None if that node was
    condensed into its parent (the tree keeps fewer, wider levels than the merges)."""

    merge_order: int
    first_leaf: int
    split_leaf: int
    last_leaf: int
    similarity: float | None
    node_id: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Archive:
    id: int
    model_id: str
    name: str
    source: str | None
    status: str
    created_at: str
    settings: dict[str, Any]
    leaves: int = 0
    nodes: int = 0
    roots: int = 0
    depth: int = 0
    chars: int = 0
    library: dict[str, Any] | None = None   # what a researcher's library knows of the paper (forest.library)
    cite_as: str | None = None              # "Buck et al. (2018)"

    @classmethod
    def from_row(cls, row: Any) -> Archive:
        keys = row.keys()
        extra = {k: row[k] or 0 for k in ("leaves", "nodes", "roots", "depth", "chars") if k in keys}
        library = json.loads(row["library"]) if "library" in keys and row["library"] else None
        return cls(id=row["id"], model_id=row["model_id"], name=row["name"], source=row["source"],
                   status=row["status"], created_at=row["created_at"],
                   settings=json.loads(row["settings"] or "{}"), **extra, library=library,
                   cite_as=row["cite_as"] if "cite_as" in keys else None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def documents(self) -> list[dict[str, Any]]:
        """The archive's document entries (settings["documents"]) that are objects: an archive
        imported before imports were checked may hold others (`forest doctor` reports them)."""
        entries = self.settings.get("documents")
        return [entry for entry in entries if isinstance(entry, dict)] if isinstance(entries, list) else []

    def document_at(self, leaf_index: int | None) -> dict[str, Any]:
        """The entry of the document holding that leaf (name, title, source, pages, kept file);
        an archive joined from others holds several."""
        return document_entry(self.documents, leaf_index) or {"name": self.name, "source": self.source}

    def document_title(self, leaf_index: int | None) -> str:
        return entry_title(self.document_at(leaf_index)) or self.name


def document_entry(documents: list[Any], leaf_index: int | None) -> dict[str, Any] | None:
    """Of an archive's document entries (settings["documents"]), the one holding that leaf;
    entries that are not objects (an imported archive is not trusted) are passed over."""
    if leaf_index is None:
        return None
    return next((entry for entry in documents if isinstance(entry, dict)
                 and entry.get("first_leaf", 0) <= leaf_index <= entry.get("last_leaf", -1)), None)


def entry_title(entry: dict[str, Any]) -> str | None:
    """What a document is called: its title, else its file name."""
    return entry.get("title") or entry.get("name")


@dataclass
class ScoredNode:
    """A node with its relevance to a query (0-1, reranker scale)."""

    node: MemoryNode
    relevance_score: float

    def to_dict(self, with_content: bool = True) -> dict[str, Any]:
        return {**self.node.to_dict(with_content), "relevance_score": self.relevance_score}


@dataclass
class Representative:
    """One entry of retrieve_from_memory: a single hit, or the LCA standing for several hits."""

    node: MemoryNode
    kind: str                 # "hit" or "lca"
    score: float              # best vector similarity (0-1 scale) among the hits it stands for
    hit_ids: list[int]
    hint: str
    hits: list[ScoredNode] = field(default_factory=list, repr=False)   # the hits themselves, best first

    def to_dict(self, with_content: bool = False) -> dict[str, Any]:
        return {**self.node.to_dict(with_content), "kind": self.kind, "score": self.score,
                "hit_ids": self.hit_ids, "hint": self.hint}


@dataclass
class ContextResult:
    question: str
    budget_tokens: int
    used_tokens: int
    leaves: list[ScoredNode] = field(default_factory=list)
    explored: list[int] = field(default_factory=list)   # summary nodes drilled into, in order

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "budget_tokens": self.budget_tokens,
                "used_tokens": self.used_tokens, "explored": self.explored,
                "leaves": [leaf.to_dict() for leaf in self.leaves]}

def cite(page_start: int | None, page_end: int | None, section: str | None) -> str:
    """'p. 7, §3.2 Model' / 'pp. 7-8' / '§Introduction' / '' — how answers point at the source."""
    parts = []
    if page_start is not None:
        parts.append(f"p. {page_start}" if page_end in (None, page_start) else f"pp. {page_start}-{page_end}")
    if section:
        parts.append(f"§{section}")
    return ", ".join(parts)


def vector_metadata(model_id: str, archive_id: int, node_type: str, depth: int) -> dict:
    """What a node's vector carries in the vector store beside its id."""
    return {"model_id": model_id, "archive_id": archive_id, "node_type": node_type, "depth": depth}
