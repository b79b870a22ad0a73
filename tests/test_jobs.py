"""The background ingestion queue the workbench uses."""
import time

from conftest import assert_store_empty, topic_text
from forest.jobs import IngestQueue


def wait(queue, seconds=120):
    deadline = time.monotonic() + seconds
    while queue.busy() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not queue.busy()


def test_jobs_build_report_progress_fail_clearly_and_clean_up(forest, tmp_path):
    queue = IngestQueue(forest)
    bad = tmp_path / "bad.pdf"
    bad.write_text("not a pdf", encoding="utf-8")
    failed = queue.submit(bad, "m", delete_after=True)
    wait(queue)
    assert failed.status == "failed" and "not a PDF" in failed.error and not bad.exists()
    assert_store_empty(forest)

    good = tmp_path / "jazz.md"
    good.write_text(topic_text("jazz"), encoding="utf-8")
    job = queue.submit(good, "m")
    more = tmp_path / "volcanoes.md"
    more.write_text(topic_text("volcanoes"), encoding="utf-8")
    wait(queue)
    appended = queue.submit(more, "m", append_to=job.archive_id)
    wait(queue)
    assert job.status == appended.status == "done" and appended.archive_id == job.archive_id
    assert {"parse", "chunk", "summarize", "embed", "merge", "store"} <= set(job.stages_seen)
    assert job.fraction == 1.0 and good.exists()  # not a temporary copy: kept
    assert [j.id for j in queue.jobs()] == [appended.id, job.id, failed.id]
    assert forest.archive("m", job.archive_id).leaves > 3
    queue.shutdown()
