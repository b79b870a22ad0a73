"""A model_id's papers and research sessions as a folder of Markdown notes that Obsidian (or any
Markdown editor) opens: one note per archive — its library metadata as front matter, its outline as
headings with each section's summary and pages, each passage with its page reference — one note per
research session — its findings and the questions asked, each cited passage linked to its place in
its paper's note — and an index. Links are relative Markdown links; a passage's place is an Obsidian
block reference (`paper.md#^n42`), so a link opens the note anywhere and the passage in Obsidian."""
from __future__ import annotations

import io
import json
import re
import unicodedata
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from forest.records import Archive, MemoryNode, cite
from forest.markdown_safety import images_as_links
from forest.text import truncate

if TYPE_CHECKING:
    from forest.research.memory import ResearchMemory
    from forest.storage.archives import ForestStore

PASSAGE_CHARS = 600
# A note's name before its suffix, in UTF-8 bytes: file systems count a name's bytes (255 at most),
# and 80 four-byte characters would already be too many.
SLUG_BYTES = 100
_UNSAFE = re.compile(r"[^\w\-]+")


def markdown_notes(store: ForestStore, research: ResearchMemory, model_id: str, sessions: Sequence[str] | None = None,
                   archive_ids: Sequence[int] | None = None) -> dict[str, str]:
    """The model_id's papers (`archive_ids` only, if given) and research sessions (all, if not
    named) as notes: {path in the folder: text}, the links between them relative to the folder."""
    archives = [a for a in store.archives(model_id) if archive_ids is None or a.id in set(archive_ids)]
    session_notes = session_files(research.sessions(model_id) if sessions is None else sessions)
    notes = {a.id: note_name(a) for a in archives}
    files = {f"papers/{notes[a.id]}": paper_note(a, store.archive_nodes(model_id, a.id)) for a in archives}
    for session_id, session_note_name in session_notes.items():
        asked = research.questions(model_id, session_id)
        cited_ids = [c.get("node_id") for e in asked for c in e.get("cited", []) if isinstance(c.get("node_id"), int)]
        works = {node_id: node.archive_id for node_id, node in store.nodes(model_id, cited_ids).items()}
        files[f"sessions/{session_note_name}"] = session_note(
            session_id, research.workspace(model_id, session_id), asked, notes, works)
    files["index.md"] = index_note(model_id, archives, notes, session_notes)
    return files


def _slug(label: str, fallback: str) -> str:
    """'Buck et al. 2018' -> 'buck-et-al-2018', cut to SLUG_BYTES at a character boundary."""
    slug = _UNSAFE.sub("-", unicodedata.normalize("NFKC", label).lower()).strip("-")
    return slug.encode()[:SLUG_BYTES].decode("utf-8", "ignore").strip("-") or fallback


def note_name(archive: Archive) -> str:
    """A file name a paper's note keeps whatever the file system: 'buck-et-al-2018-jazz-and-its-origins-12.md'
    (the archive id makes it unique)."""
    label = f"{archive.cite_as or ''} {archive.name}"
    return f"{_slug(label, 'archive')}-{archive.id}.md"


def zipped(notes: Mapping[str, str], folder: str) -> bytes:
    """The notes as a .zip that unpacks to one folder (a vault), built in memory: nothing on disk."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in sorted(notes.items()):
            archive.writestr(f"{folder}/{name}", text)
    return buffer.getvalue()


def paper_note(archive: Archive, nodes: Sequence[MemoryNode]) -> str:
    by_parent: dict[int | None, list[MemoryNode]] = {}
    for node in nodes:
        by_parent.setdefault(node.parent_id, []).append(node)
    lines = [f"# {_cited_name(archive)}", ""]
    meta = archive.library or {}
    if meta.get("abstract"):
        lines += [f"> {' '.join(meta['abstract'].split())}", ""]

    def walk(node: MemoryNode, level: int) -> None:
        if node.is_leaf:
            where = cite(node.page_start, node.page_end, node.section)
            text = truncate(" ".join(node.content.split()), PASSAGE_CHARS)
            lines.extend([f"- **{where or f'passage {node.id}'}** {text} ^n{node.id}", ""])
            return
        pages = cite(node.page_start, node.page_end, None)
        lines.extend([f"{'#' * min(level, 6)} {node.title or f'Section {node.id}'}", "",
                      *([f"*{pages}*", ""] if pages else []), node.summary, ""])
        for child in by_parent.get(node.id, []):
            walk(child, level + 1)

    for root in by_parent.get(None, []):
        walk(root, 2)
    return "\n".join(_front_matter(archive)) + "\n" + _linked_images(lines)


def session_note(session_id: str, findings: Iterable[Any], asked: Iterable[Mapping[str, Any]],
                 notes: Mapping[int, str], works: Mapping[int, str]) -> str:
    """`asked`: the session's "ask" events' data (question, cited [{node_id, citation}]) with the
    answer; `notes`: archive id -> its note's file name; `works`: node id -> archive id."""
    lines = [f"# Research session {session_id}", "", "## Findings", ""]
    findings = list(findings)
    lines += [f"- {f.text}" + (f" — {f.source}" if f.source else "") for f in findings] or ["(none yet)"]
    lines += ["", "## Questions", ""]
    for event in asked:
        lines += [f"### {event.get('question', '')}", "", event.get("answer", ""), ""]
        for cited in event.get("cited", []):
            archive_id = works.get(cited.get("node_id"))
            label = cited.get("citation") or f"node {cited.get('node_id')}"
            if archive_id in notes:
                lines.append(f"- [{label}](../papers/{notes[archive_id]}#^n{cited['node_id']})")
            else:
                lines.append(f"- {label}")
        lines.append("")
    return _linked_images(lines)


def index_note(model_id: str, archives: Sequence[Archive], notes: Mapping[int, str],
               sessions: Mapping[str, str]) -> str:
    """`sessions`: session id -> its note's file name (session_files)."""
    lines = [f"# {model_id}", "", "## Papers", ""]
    lines += [f"- [{_cited_name(a)}](papers/{notes[a.id]})" for a in archives]
    if sessions:
        lines += ["", "## Research sessions", ""]
        lines += [f"- [{s}](sessions/{name})" for s, name in sessions.items()]
    return _linked_images(lines)


def _linked_images(lines: list[str]) -> str:
    """A note's Markdown with the documents', models' and agents' images as links: an editor
    opening the note loads nothing from elsewhere by itself."""
    return images_as_links("\n".join(lines).rstrip() + "\n")


def _cited_name(archive: Archive) -> str:
    """'Buck et al. (2018): Ask the Right Questions'; the name alone when it is how the paper is cited."""
    cited = archive.cite_as if archive.cite_as and archive.cite_as != archive.name else ""
    return f"{cited}: {archive.name}" if cited else archive.name


def session_files(session_ids: Iterable[str]) -> dict[str, str]:
    """Each session's note file name, one per session: ids that make one name ('a/b', 'a b' and
    'a-b'; 'A' and 'a' on a file system that ignores case) get a suffix (-2, -3, ...)."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for session_id in dict.fromkeys(session_ids):   # a session named twice is one note
        stem = name = _slug(session_id, "session")
        suffix = 1
        while name.casefold() in taken:
            suffix += 1
            name = f"{stem}-{suffix}"
        taken.add(name.casefold())
        names[session_id] = f"{name}.md"
    return names


def _front_matter(archive: Archive) -> list[str]:
    """YAML front matter (Obsidian's properties); JSON strings are valid YAML scalars."""
    meta = archive.library or {}
    fields: dict[str, Any] = {"title": meta.get("title") or archive.name, "archive_id": archive.id}
    if archive.cite_as:
        fields["cite_as"] = archive.cite_as
    authors = [" ".join(p for p in (c.get("first"), c.get("last")) if p) for c in meta.get("creators", [])
               if isinstance(c, dict) and c.get("type", "author") == "author"]
    for name, value in (("authors", authors), ("year", meta.get("year")), ("doi", meta.get("doi")),
                        ("url", meta.get("url")), ("tags", meta.get("tags")), ("collections", meta.get("collections"))):
        if value:
            fields[name] = value
    return ["---", *(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items()), "---", ""]
