"""Background ingestion: files are built into archives by one worker thread, so a person can
switch pages or rerun the UI while a long PDF is embedded. Each job keeps its latest progress
event; faces poll `jobs()` to draw progress bars."""
from __future__ import annotations

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from forest.build import Progress
from forest.errors import ForestError
from forest.service import MemoryForest


@dataclass
class Job:
    id: int
    model_id: str
    name: str
    status: str = "queued"          # queued | running | done | failed
    stage: str = ""
    done: int = 0
    total: int = 0
    detail: str = ""
    archive_id: int | None = None
    error: str | None = None
    stages_seen: list[str] = field(default_factory=list)

    @property
    def fraction(self) -> float:
        return min(self.done / self.total, 1.0) if self.total else 0.0


class IngestQueue:
    """One worker (builds are serialized by the engine anyway); thread-safe job records."""

    def __init__(self, forest: MemoryForest) -> None:
        self.forest = forest
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="forest-ingest")
        self._jobs: dict[int, Job] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def submit(self, path: str | Path, model_id: str, *, name: str | None = None,
               append_to: int | None = None, delete_after: bool = False) -> Job:
        """Queue one file: a new archive, or an append to `append_to`. `delete_after` removes the
        file when the job ends (the workbench's copies of uploads)."""
        job = Job(next(self._ids), model_id, name or Path(path).stem)
        with self._lock:
            self._jobs[job.id] = job
        self._pool.submit(self._run, job, Path(path), append_to, delete_after)
        return job

    def jobs(self) -> list[Job]:
        with self._lock:
            return sorted(self._jobs.values(), key=lambda j: -j.id)

    def busy(self) -> bool:
        return any(j.status in ("queued", "running") for j in self.jobs())

    def _run(self, job: Job, path: Path, append_to: int | None, delete_after: bool) -> None:
        def report(event: Progress) -> None:
            with self._lock:
                job.stage, job.done, job.total, job.detail = event.stage, event.done, event.total, event.detail
                if event.stage not in job.stages_seen:
                    job.stages_seen.append(event.stage)

        job.status = "running"
        try:
            if append_to is None:
                archive = self.forest.ingest_file(path, job.model_id, name=job.name, progress=report)
            else:
                archive = self.forest.append_file(path, job.model_id, append_to, progress=report)
        except ForestError as exc:
            job.status, job.error = "failed", str(exc)
        except Exception as exc:  # a bug: say so on the job instead of losing it in a thread
            job.status, job.error = "failed", f"internal error: {type(exc).__name__}: {exc}"
        else:
            job.status, job.archive_id = "done", archive.id
        finally:
            if delete_after:
                path.unlink(missing_ok=True)
                if not any(path.parent.iterdir()):
                    path.parent.rmdir()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
