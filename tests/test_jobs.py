"""The background ingestion queue the workbench uses."""
import json
import time

import pytest

from conftest import assert_store_empty
from testkit.topics import topic_text
from forest.serving.jobs import IngestQueue


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


@pytest.mark.slow
def test_archives_take_the_documents_title_and_a_repeat_is_skipped_saying_which_archive_holds_it(forest, tmp_path):
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
    assert (repeat.status, repeat.archive_id) == ("skipped", first.archive_id)
    assert repeat.error == (f"already in the library as archive {first.archive_id} (Volcanoes of the Pacific): "
                            "the same text")
    assert elsewhere.status == "done" and [a.name for a in forest.archives("m")] == ["Volcanoes of the Pacific"]
    queue.dismiss([first.id, repeat.id, elsewhere.id])
    assert queue.jobs() == []
    queue.shutdown()


@pytest.mark.slow
def test_an_uploaded_pdf_is_kept_before_its_temporary_copy_goes(forest, tmp_path):
    """The workbench's path: a temporary copy of the upload, deleted once read. The PDF must be in
    the store by then, whatever happens before the build (here another archive is deleted, which
    prunes unnamed kept files), and the archive must not name the deleted path."""
    from pdf_factory import two_column_paper

    queue = IngestQueue(forest)
    other = forest.ingest_text("m", "notes", topic_text("jazz"))
    for folder in ("forest-upload-x", "forest-upload-y"):
        (tmp_path / folder).mkdir()
    upload = two_column_paper(tmp_path / "forest-upload-x" / "tidal.pdf")
    appended_upload = two_column_paper(tmp_path / "forest-upload-y" / "tidal again.pdf")
    with forest._build_lock:   # read, then waiting for the builder
        job = queue.submit(upload, "m", delete_after=True)
        deadline = time.monotonic() + 60
        while upload.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not upload.exists()
    forest.delete_archive("m", other.id)   # prunes kept files no archive names yet
    wait(queue)
    assert job.status == "done", job.error
    archive = forest.archive("m", job.archive_id)
    entry = archive.settings["documents"][0]
    assert (forest.settings.sources_path / entry["file"]).is_file()
    assert archive.source is None and entry["source"] is None
    assert str(tmp_path) not in json.dumps(archive.settings)
    leaf = next(n for n in forest.tree("m", archive.id) if n.is_leaf)
    assert forest.source_preview("m", leaf.id).pdf == forest.settings.sources_path / entry["file"]

    # An append keeps its PDF too.
    target = forest.ingest_text("n", "notes", topic_text("volcanoes"))
    appended = queue.submit(appended_upload, "n", append_to=target.id, delete_after=True)
    wait(queue)
    assert appended.status == "done" and not appended_upload.exists()
    entries = forest.archive("n", target.id).settings["documents"]
    assert (forest.settings.sources_path / entries[-1]["file"]).is_file() and entries[-1]["source"] is None
    queue.shutdown()


@pytest.mark.slow
def test_a_build_that_fails_after_the_read_leaves_no_kept_file(forest, tmp_path):
    from pdf_factory import two_column_paper

    queue = IngestQueue(forest)
    for folder in "ab":
        (tmp_path / folder).mkdir()
    first = queue.submit(two_column_paper(tmp_path / "a" / "tidal.pdf"), "m", delete_after=True)
    wait(queue)
    repeat = queue.submit(two_column_paper(tmp_path / "b" / "tidal.pdf"), "other", delete_after=True,
                          append_to=999)   # no such archive: fails in the build
    wait(queue)
    assert first.status == "done" and repeat.status == "failed"
    assert repeat.error.startswith("tidal.pdf: ") and repeat.error.count("tidal") == 1
    forest.delete_archive("m", first.archive_id)
    assert list(forest.settings.sources_path.iterdir()) == []   # no hold outlives its build
    queue.shutdown()


def test_an_exported_archive_imports_in_the_background_with_progress_and_once(forest):
    queue = IngestQueue(forest)
    notes = forest.ingest_text("m", "notes", topic_text("volcanoes", "jazz"))
    export = json.dumps(forest.export_archive("m", notes.id)).encode()   # no vectors: they are computed
    first = queue.submit_archive(export, "notes.forest.json", "other")
    again = queue.submit_archive(export, "notes.forest.json", "other")
    wait(queue)
    assert first.status == "done" and "embed" in first.stages_seen and first.done == first.total > 0
    assert (again.status, again.archive_id) == ("skipped", first.archive_id)
    assert again.error.startswith(f"already in the library as archive {first.archive_id} (notes): the same text")
    broken = queue.submit_archive(b"{not json", "broken.json", "other")
    wait(queue)
    assert broken.status == "failed" and broken.error.startswith("broken.json: ")
    queue.shutdown()
