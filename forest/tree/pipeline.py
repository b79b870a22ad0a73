"""From a file to a stored tree, and every write that changes trees: ingest, append, rebuild,
join, import, delete. One writer of the store at a time: summaries and vectors are made before
the writer lock is taken, so a slow summarizer holds up no other writer; the lock covers the
write alone.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forest.config import Settings
from forest.errors import AlreadyInLibrary, ConfigError, InvalidInput
from forest.ingest import text_document
from forest.ingest.loaders import check_size, read_file
from forest.ingest.document import Document
from forest.library import KnownDocument, PaperIdentity, SamePaper, check_on_duplicate, cite_as, completed, find_same
from forest.models.embedders import Embedder
from forest.models.summarizers import Summarizer
from forest.records import Archive, Progress, ProgressFn, no_progress
from forest.storage.archives import ForestStore
from forest.storage.source_files import SourceFiles
from forest.storage.sql.database import Lock
from forest.storage.vectors.base import VectorStore
from forest.text import counted, single_line
from forest.validation import archive_name, check_model_id, check_threshold

if TYPE_CHECKING:
    from forest.tree.build import ArchiveBuilder, BuildParams
    from forest.tree.chunking import Chunk
    from forest.tree.grow import ArchivePair
    from forest.tree.outline import DocumentOutline


class TreePipeline:
    """The writes of a store's trees, with the parts they use."""

    def __init__(self, store: ForestStore, vectors: VectorStore, embedder: Embedder,
                 summarizer: Callable[[], Summarizer], sources: SourceFiles, writer_lock: Lock,
                 settings: Settings) -> None:
        """`summarizer` makes the summarizer when a build first needs one: a delete, an export or an
        import never loads it (nor the LLM behind it)."""
        self.store, self.vectors, self.embedder, self._summarizer = store, vectors, embedder, summarizer
        self.sources, self.writer_lock, self.settings = sources, writer_lock, settings

    @property
    def summarizer(self) -> Summarizer:
        return self._summarizer()

    # --- new archives -----------------------------------------------------------------------
    def ingest_text(self, model_id: str, name: str, text: str, *, source: str | None = None,
                    **options: Any) -> Archive:
        """Build one archive from text or Markdown (headings become sections)."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(f"document {name!r} is empty: there is nothing to remember")
        check_size(name, text, self.settings)
        return self.ingest_document(model_id, text_document(name, text, source), **options)

    def ingest_file(self, path: str | Path, model_id: str, *, name: str | None = None,
                    progress: ProgressFn | None = None, **options: Any) -> Archive:
        """Build one archive from a .pdf, .txt or .md file, reporting every stage to `progress`."""
        document = read_file(path, self.settings, self.sources, progress)
        return self.ingest_document(model_id, document, name=name, progress=progress, **options)

    def ingest_document(self, model_id: str, document: Document, *, name: str | None = None,
                        chunk_size: int | None = None, chunk_overlap: int | None = None,
                        threshold: float | None = None, progress: ProgressFn | None = None,
                        on_duplicate: str = "skip", library: dict[str, Any] | None = None,
                        planned_against: Collection[int] | None = None) -> Archive:
        """Build one archive (one tree, or several roots if merging stops early) from `document`,
        named `name`, else the paper's title, else the document's, else its file name.
        `library`: what a researcher's library knows of the paper (LibraryEntry.metadata()), completed
        with what the PDF says of itself (title, authors, year, venue, DOI, arXiv id) and stored with
        the archive in the same write; its passages are then cited by author and year.
        `on_duplicate`, when the model_id's library holds this paper already (the same file, text,
        DOI, arXiv id, or title with first author and year: forest.library.identity): "skip" raises
        AlreadyInLibrary naming its archive, before anything is paid for and again under the writer
        lock (a call sent again after its reply was lost adds nothing); "replace" builds this one,
        then removes the archive held; "keep" builds it beside it.
        `planned_against`: the archives an import planned this document against (import_library),
        whose fate the plan decided; only archives made since (a concurrent import's) are checked,
        and one holding the same file is never built beside."""
        from forest.tree.build import all_or_nothing

        check_on_duplicate(on_duplicate)
        with self._kept_source(document) as keep:
            model_id = check_model_id(model_id)
            metadata = completed(library, document.metadata)
            name = archive_name(name or (metadata or {}).get("title") or document.title or document.name or "")
            run = self._run_settings(chunk_size, chunk_overlap, threshold)
            kept = document.kept_file or self.sources.name_for(document.source)  # copied with the write
            paper = PaperIdentity.of(metadata, (kept or "").removesuffix(".pdf"), [fingerprint(document)])
            held = self.held_paper(model_id, paper, on_duplicate, planned_against=planned_against)  # before paying
            progress = progress or no_progress
            chunks = _chunks(document, run, progress)
            entry = _document_entry(document, 0, len(chunks))
            if kept:
                entry["file"] = kept
            recorded = {"chunker": run.chunker, "chunk_size": run.chunk_size, "chunk_overlap": run.chunk_overlap,
                        "merge_threshold": run.merge_threshold, "max_node_chars": run.max_node_chars,
                        "embedder": self.embedder.name, "documents": [entry]}
            # 'building': hidden from readers, and left alone by doctor while this process lives.
            archive_id = self.store.create_archive(model_id, name, document.source, recorded, metadata,
                                                   cite_as(metadata))
            builder = self._builder
            with all_or_nothing(self.store, self.vectors, archive_id, model_id) as written_ids:
                growth = builder.plan_document(chunks, _outline(document, chunks), _build_params(run), progress)
                with self.writer_lock:
                    held = self.held_paper(model_id, paper, on_duplicate, archive_id, planned_against) or held
                    keep()
                    builder.write(archive_id, model_id, growth, written_ids, progress)
        if on_duplicate == "replace" and held is not None:
            self.delete_archive(model_id, int(held.archive_id))
        return self.store.archive(model_id, archive_id)

    def held_paper(self, model_id: str, paper: PaperIdentity, on_duplicate: str, building: int | None = None,
                   planned_against: Collection[int] | None = None) -> SamePaper | None:
        """The model_id's archive holding `paper` (not the one `building`, nor one of
        `planned_against`), if any; AlreadyInLibrary when the caller asked to skip it, or when an
        import's plan meets the same file built since (two imports of one folder at once)."""
        decided = set(planned_against or ())
        same = find_same(paper, [KnownDocument.of(a) for a in self.store.archives(model_id)
                                 if a.id != building and a.id not in decided])
        if same is not None and (on_duplicate == "skip" or (planned_against is not None
                                                             and same.reason == "the same file")):
            raise AlreadyInLibrary(same.said(), int(same.archive_id))
        return same

    # --- archives that change ---------------------------------------------------------------
    def append_document(self, model_id: str, archive_id: int, document: Document, *,
                        progress: ProgressFn | None = None, allow_duplicate: bool = True) -> Archive:
        """Add `document` to an archive (see forest.tree.grow); with allow_duplicate=False a
        document whose text the model_id already holds is refused (InvalidInput)."""
        from forest.tree.grow import append_to_archive

        with self._kept_source(document) as keep:
            model_id = check_model_id(model_id)
            archive = self.store.archive(model_id, archive_id)
            recorded = archive.settings
            # Archives from before the chunker setting were cut by the recursive splitter.
            run = self._run_settings(recorded.get("chunk_size"), recorded.get("chunk_overlap"),
                                     recorded.get("merge_threshold"), recorded.get("chunker", "recursive"))
            self._check_embedder(archive)
            progress = progress or no_progress
            chunks = _chunks(document, run, progress)
            entry = _document_entry(document, 0, len(chunks))
            with self.writer_lock:
                kept = keep()
                if kept:
                    entry["file"] = kept
                if not allow_duplicate:
                    self._refuse_held_text(model_id, document)
                append_to_archive(self._builder, model_id, archive_id, chunks, _outline(document, chunks),
                                  entry, _build_params(run), progress)
        return self.store.archive(model_id, archive_id)

    def rebuild_archive(self, model_id: str, archive_id: int, progress: ProgressFn | None = None) -> Archive:
        """Re-plan an archive's tree over its stored leaves and vectors (see forest.tree.grow)."""
        from forest.tree.grow import rebuild_archive

        archive = self.store.archive(model_id, archive_id)
        self._check_embedder(archive)
        recorded = archive.settings
        run = self._run_settings(recorded.get("chunk_size"), recorded.get("chunk_overlap"),
                                 recorded.get("merge_threshold"))
        with self.writer_lock:
            rebuild_archive(self._builder, model_id, archive_id, _build_params(run), progress or no_progress)
        return self.store.archive(model_id, archive_id)

    def similar_archives(self, model_id: str, threshold: float) -> list[ArchivePair]:
        """Pairs of the model_id's archives, most similar first: candidates to join."""
        from forest.tree.grow import similar_archives

        threshold = check_threshold(threshold, "similarity")
        return similar_archives(self.store, self.vectors, self.embedder, model_id, threshold)

    def join_archives(self, model_id: str, archive_ids: list[int], name: str | None = None) -> Archive:
        """Put the trees of several archives under one new super-root, in the first archive."""
        from forest.tree.grow import join_archives

        with self.writer_lock:
            archive_id = join_archives(self.store, self.vectors, self.embedder, self.summarizer, model_id,
                                       archive_ids, name)
        return self.store.archive(model_id, archive_id)

    def delete_archive(self, model_id: str, archive_id: int) -> None:
        self.store.archive(model_id, archive_id)  # NotFound across model_ids
        with self.writer_lock:
            # Hidden first: if the process dies between the two stores, doctor finds a
            # non-ready archive and finishes the job instead of re-embedding it.
            self.store.set_status(archive_id, "failed", "being deleted")
            self.vectors.delete(model_id, self.store.archive_node_ids(archive_id))
            self.store.delete_archive_rows(archive_id)
            self.sources.prune(self.store.kept_files())

    # --- archives as JSON -------------------------------------------------------------------
    def export_archive(self, model_id: str, archive_id: int, with_vectors: bool = False) -> dict[str, Any]:
        """One JSON-ready document holding the archive (and, on request, its vectors)."""
        from forest.tree.archive_io import export_archive

        return export_archive(self.store, self.vectors, self.embedder.name, model_id, archive_id, with_vectors)

    def import_archive(self, model_id: str, document: Any, name: str | None = None, *,
                       progress: ProgressFn | None = None, on_duplicate: str = "skip") -> Archive:
        """Recreate an exported archive under `model_id` with new ids; nothing is written if invalid.
        A paper the model_id holds already is skipped, replaced or kept beside as in
        ingest_document (`on_duplicate`). Checking and embedding (reported to `progress`) happen
        before the writer lock is taken, so other writers wait only for the write itself."""
        from forest.tree.archive_io import check_import, embed_import, write_import

        check_on_duplicate(on_duplicate)
        prepared = check_import(document, self.settings.max_document_chars, name)
        paper = PaperIdentity.of(prepared.library, text_sha256=prepared.text_fingerprints)
        held = self.held_paper(model_id, paper, on_duplicate)   # before the vectors are paid for
        embed_import(prepared, document, self.embedder, progress)
        with self.writer_lock:
            held = self.held_paper(model_id, paper, on_duplicate) or held
            archive_id = write_import(self.store, self.vectors, model_id, prepared)
        if on_duplicate == "replace" and held is not None:
            self.delete_archive(model_id, int(held.archive_id))
        return self.store.archive(model_id, archive_id)

    def import_archive_text(self, model_id: str, raw: bytes | str, where: str = "the export",
                            name: str | None = None, **options: Any) -> Archive:
        """import_archive from an export file's text (`where` names it in errors), size-checked first."""
        from forest.tree.archive_io import read_export

        return self.import_archive(model_id, read_export(raw, where), name, **options)

    def import_archive_file(self, model_id: str, path: str | Path, name: str | None = None,
                            **options: Any) -> Archive:
        """import_archive from an export file, read within the import size limit."""
        from forest.ingest.files import read_limited
        from forest.limits import MAX_IMPORT_BYTES

        raw = read_limited(path, MAX_IMPORT_BYTES, f"the import limit of {MAX_IMPORT_BYTES:,} bytes")
        return self.import_archive_text(model_id, raw, Path(path).name, name, **options)

    # --- helpers ----------------------------------------------------------------------------
    @property
    def _builder(self) -> ArchiveBuilder:
        from forest.tree.build import ArchiveBuilder

        return ArchiveBuilder(self.store, self.vectors, self.embedder, self.summarizer)

    @contextmanager
    def _kept_source(self, document: Document) -> Iterator[Callable[[], str | None]]:
        """One build of `document`: `keep()`, called under the writer lock (prunes run under it),
        makes sure the store holds the document's PDF and names it: the copy read_file kept, else
        one made now. Afterwards read_file's hold on the copy ends, and if the build failed the
        copy goes again unless an archive names it."""
        def keep() -> str | None:
            if document.kept_file and self.sources.has(document.kept_file):
                return document.kept_file
            return self.sources.keep(document.source)

        try:
            yield keep
        except BaseException:
            if document.kept_file:
                self.sources.release(document.kept_file)
            with self.writer_lock:
                self.sources.prune(self.store.kept_files())
            raise
        if document.kept_file:
            self.sources.release(document.kept_file)

    def _check_embedder(self, archive: Archive) -> None:
        if archive.settings.get("embedder", self.embedder.name) != self.embedder.name:
            raise ConfigError(f"archive {archive.id} was built with {archive.settings['embedder']}, "
                              f"this forest embeds with {self.embedder.name}")

    def _refuse_held_text(self, model_id: str, document: Document) -> None:
        text = fingerprint(document)
        for archive in self.store.archives(model_id):
            if any(d.get("sha256") == text for d in archive.documents):
                raise InvalidInput(f"{document.name!r} is already in archive {archive.id} ({archive.name}): "
                                   "the same text was not added again")

    def _run_settings(self, chunk_size: int | None, chunk_overlap: int | None,
                      threshold: float | None, chunker: str | None = None) -> Settings:
        if chunk_size is not None and chunk_overlap is None and self.settings.chunk_overlap >= chunk_size:
            chunk_overlap = chunk_size // 10
        try:
            return self.settings.replace(chunk_size=chunk_size, chunk_overlap=chunk_overlap,
                                         merge_threshold=threshold, chunker=chunker)
        except ConfigError as exc:  # a bad per-call chunk size or overlap is the caller's input
            raise InvalidInput(str(exc)) from None


def _chunks(document: Document, run: Settings, progress: ProgressFn) -> list[Chunk]:
    from forest.tree.leaves import leaf_chunks

    if not document.passages or not document.text.strip():
        raise InvalidInput(f"document {document.name!r} is empty: there is nothing to remember")
    chunks = leaf_chunks(document, run.chunker, run.chunk_size, run.chunk_overlap)
    progress(Progress("chunk", len(chunks), len(chunks), counted(len(chunks), "chunk")))
    if not chunks:
        raise InvalidInput(f"document {document.name!r} has no text to chunk")
    return chunks


def _build_params(run: Settings) -> BuildParams:
    from forest.tree.build import BuildParams

    return BuildParams(run.merge_threshold, run.max_node_chars, run.embed_batch_size, run.tree_max_children)


def _outline(document: Document, chunks: list[Chunk]) -> DocumentOutline:
    from forest.tree.outline import DocumentOutline

    return DocumentOutline(single_line(document.title or document.name), [c.heading_path for c in chunks])


def _document_entry(document: Document, first_leaf: int, leaves: int) -> dict[str, Any]:
    """What the archive records about each document it holds (appends add more)."""
    # names are one line, as an export's import checks them
    return {"name": single_line(document.name), "title": document.title and single_line(document.title),
            "source": document.source,
            "pages": document.page_count, "first_leaf": first_leaf, "last_leaf": first_leaf + leaves - 1,
            "sha256": fingerprint(document), "leaf_context": True}  # see build.stored_leaf_context


def fingerprint(document: Document) -> str:
    """The same text gives the same fingerprint, whatever the file is called."""
    return hashlib.sha256(document.text.encode("utf-8")).hexdigest()
