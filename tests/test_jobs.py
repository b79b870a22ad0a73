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


def test_a_bad_file_fails_at_once_while_another_file_builds(forest, tmp_path):
    queue = IngestQueue(forest)
    good = tmp_path / "jazz.md"
    good.write_text(topic_text("jazz"), encoding="utf-8")
    junk = tmp_path / "junk.md"
    junk.write_bytes(b"\x00\x01 binary, not text")
    with forest._build_lock:  # the build of jazz.md cannot finish while this is held
        building = queue.submit(good, "m")
        failed = queue.submit(junk, "m", delete_after=True)
        deadline = time.monotonic() + 60
        while failed.status != "failed" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert failed.status == "failed" and building.status == "running"
    assert failed.error == "junk.md: looks like a binary file, not text"  # the file's name, not its folder
    assert not junk.exists()
    wait(queue)
    assert building.status == "done"
    queue.shutdown()


def test_archives_take_the_documents_title_and_a_repeat_is_refused(forest, tmp_path):
    queue = IngestQueue(forest)
    paper = tmp_path / "draft-v3.md"
    paper.write_text("# Volcanoes of the Pacific\n\n" + topic_text("volcanoes"), encoding="utf-8")
    again = tmp_path / "copy of draft.md"
    again.write_bytes(paper.read_bytes())
    first = queue.submit(paper, "m")
    wait(queue)
    repeat = queue.submit(again, "m")
    elsewhere = queue.submit(again, "other")  # another model_id's forest may hold the same paper
    wait(queue)
    assert (first.status, first.name, first.archive_name) == ("done", "draft-v3.md", "Volcanoes of the Pacific")
    assert repeat.status == "failed"
    assert repeat.error == (f"'copy of draft' is already in archive {first.archive_id} (Volcanoes of the Pacific): "
                            "the same text was not added again")
    assert elsewhere.status == "done" and [a.name for a in forest.archives("m")] == ["Volcanoes of the Pacific"]
    queue.dismiss([first.id, repeat.id, elsewhere.id])
    assert queue.jobs() == []
    queue.shutdown()
