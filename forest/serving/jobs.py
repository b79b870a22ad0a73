"""Background ingestion: files are built into archives by worker threads, so a person can switch
pages or rerun the UI while a long PDF is embedded. Each job keeps its latest progress event;
faces poll `jobs()` to draw progress bars."""
from __future__ import annotations

import dataclasses
import functools
import itertools
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from forest.records import Archive, Progress
from forest.ingest.document import Document
from forest.errors import AlreadyInLibrary, ForestError, one_line
from forest.service import MemoryForest
from forest.text import truncate

FINISHED = ("done", "skipped", "failed")
SHOWN_NAME_CHARS = 120    # a job's banner names its file or library, not a screenful of path
SHOWN_ERROR_CHARS = 1000  # a failed job says why in a line, not a page


@dataclass
class Job:
    id: int
    model_id: str
    name: str                       # the file's name
    status: str = "queued"          # queued | running | done | skipped (already in the library) | failed
    stage: str = ""
    done: int = 0
    total: int = 0
    detail: str = ""
    archive_id: int | None = None
    archive_name: str | None = None
    error: str | None = None        # failed: why; skipped: which archive holds the paper
    stages_seen: list[str] = field(default_factory=list)
    report: dict | None = None      # a library import's: what it imported, updated, missed (MemoryForest.import_library)
    started: float = field(default_factory=time.monotonic)

    @property
    def fraction(self) -> float:
        return min(self.done / self.total, 1.0) if self.total else 0.0

    @property
    def seconds_left(self) -> float | None:
        """At the pace so far; None before the first step is done."""
        if not self.done or not self.total:
            return None
        return (time.monotonic() - self.started) / self.done * (self.total - self.done)


class IngestQueue:
    """Two workers: one reads files (parse and checks), one builds, so a bad file fails at once even
    while a long build runs; builds are serialized (the engine has one writer anyway). A paper the
    model_id's library holds already is skipped, replaced or kept beside, as the job asks
    (on_duplicate). Thread-safe job records."""

    def __init__(self, forest: MemoryForest) -> None:
        self.forest = forest
        self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="forest-read")
        self._builder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="forest-build")
        self._jobs: dict[int, Job] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def submit(self, path: str | Path, model_id: str, *, name: str | None = None,
               append_to: int | None = None, delete_after: bool = False, on_duplicate: str = "skip") -> Job:
        """Queue one file: a new archive (named `name`, else the document's title, else the file's
        name), or an append to `append_to`. `delete_after` removes the file once it is read (the
        workbench's copies of uploads): a PDF's copy is in the store by then (read_file keeps it),
        and the archive records no path to the deleted file."""
        path = Path(path)
        job = self._added(model_id, path.name)
        self._reader.submit(self._read, job, path, name, append_to, delete_after, on_duplicate)
        return job

    def submit_library(self, path: str | Path, model_id: str, on_duplicate: str = "skip") -> Job:
        """Queue the import of a researcher's library (a Zotero data directory, a .bib file, a
        folder): its documents are built one after another on the builder, each once."""
        job = self._added(model_id, Path(path).name or str(path))
        self._builder.submit(self._import_library, job, Path(path), on_duplicate)
        return job

    def submit_archive(self, raw: bytes, file_name: str, model_id: str, on_duplicate: str = "skip") -> Job:
        """Queue the import of an exported archive (its JSON's bytes): checked, its vectors computed
        (with progress) and written on the builder."""
        job = self._added(model_id, file_name)
        self._builder.submit(self._import_archive, job, raw, on_duplicate)
        return job

    def _added(self, model_id: str, name: str) -> Job:
        job = Job(next(self._ids), model_id, truncate(name, SHOWN_NAME_CHARS))
        with self._lock:
            self._jobs[job.id] = job
        return job

    def _import_library(self, job: Job, path: Path, on_duplicate: str) -> None:
        job.status, job.started = "running", time.monotonic()
        try:
            job.report = self.forest.import_library(job.model_id, path, functools.partial(self._report, job),
                                                    on_duplicate=on_duplicate)
        except Exception as exc:
            self._fail(job, exc)   # the library's own path, said whole (an upload's is a temporary file's)
        else:
            job.status = "done"

    def _import_archive(self, job: Job, raw: bytes, on_duplicate: str) -> None:
        job.status, job.started = "running", time.monotonic()
        self._finished(job, lambda: self.forest.import_archive_text(
            job.model_id, raw, job.name, progress=functools.partial(self._report, job), on_duplicate=on_duplicate))

    def jobs(self) -> list[Job]:
        with self._lock:
            return sorted(self._jobs.values(), key=lambda j: -j.id)

    def busy(self) -> bool:
        return any(j.status not in FINISHED for j in self.jobs())

    def dismiss(self, job_ids: Iterable[int]) -> None:
        """Forget finished jobs (their banners); queued and running ones stay."""
        with self._lock:
            for job_id in job_ids:
                if job_id in self._jobs and self._jobs[job_id].status in FINISHED:
                    del self._jobs[job_id]

    def _read(self, job: Job, path: Path, name: str | None, append_to: int | None, delete_after: bool,
              on_duplicate: str) -> None:
        job.status = "running"
        try:
            document = self.forest.read_file(path, functools.partial(self._report, job))
        except Exception as exc:
            self._fail(job, exc, path)
            return
        finally:
            if delete_after:
                path.unlink(missing_ok=True)
                if path.parent.is_dir() and not any(path.parent.iterdir()):
                    path.parent.rmdir()
        if delete_after:
            document = dataclasses.replace(document, source=None)
        job.status = "queued"  # read: waiting for the builder
        self._builder.submit(self._build, job, document, name, append_to, on_duplicate)

    def _build(self, job: Job, document: Document, name: str | None, append_to: int | None, on_duplicate: str) -> None:
        job.status = "running"
        report = functools.partial(self._report, job)
        if append_to is None:
            self._finished(job, lambda: self.forest.ingest_document(job.model_id, document, name=name, progress=report,
                                                                    on_duplicate=on_duplicate))
        else:
            self._finished(job, lambda: self.forest.append_document(job.model_id, append_to, document, progress=report,
                                                                    allow_duplicate=False))

    def _finished(self, job: Job, build: Callable[[], Archive]) -> None:
        """Run a job's build and record how it ended: its archive, skipped (the paper is in the
        library already: which archive holds it), or failed."""
        try:
            archive = build()
        except AlreadyInLibrary as held:
            job.status, job.archive_id, job.error = "skipped", held.archive_id, str(held)
        except Exception as exc:
            self._fail(job, exc)
        else:
            job.status, job.archive_id, job.archive_name = "done", archive.id, archive.name

    def _report(self, job: Job, event: Progress) -> None:
        with self._lock:
            job.stage, job.done, job.total, job.detail = event.stage, event.done, event.total, event.detail
            if event.stage not in job.stages_seen:
                job.stages_seen.append(event.stage)

    @staticmethod
    def _fail(job: Job, exc: Exception, path: Path | None = None) -> None:
        """The job's error starts with its file's name, once (the reader's messages start with it)."""
        message = str(exc) if isinstance(exc, ForestError) else f"internal error: {type(exc).__name__}: {exc}"
        message = one_line(message.replace(str(path), path.name) if path else message, SHOWN_ERROR_CHARS)
        named = message.startswith(f"{job.name}: ")
        job.status, job.error = "failed", message if named else f"{job.name}: {message}"

    def shutdown(self) -> None:
        self._reader.shutdown(wait=False, cancel_futures=True)
        self._builder.shutdown(wait=False, cancel_futures=True)
