"""Importing a researcher's library (Zotero, BibTeX, a folder) into a model_id: each document once,
metadata on the archive and in every citation, a second import adding only what changed, an
interrupted import continued, and the BibTeX of what was imported."""
from __future__ import annotations

import io
import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import bibtexparser
import pytest
from testkit.processes import forest_env
from testkit.library import paper, ready_archives, zotero_library
from testkit.zotero_factory import ZoteroLibrary

from forest.views.markdown_notes import zipped


FOREST = str(Path(sys.executable).parent / "forest")


@pytest.mark.slow
def test_a_zotero_library_imports_once_and_cites_by_author_and_year(make_forest, tmp_path):
    zotero = tmp_path / "Zotero"
    zotero_library(zotero, tmp_path / "scratch").close()
    forest = make_forest(chunk_size=300)
    first = forest.import_library("lab", zotero)
    assert first["kind"] == "zotero" and first["counts"]["imported"] == 2 and first["counts"]["failed"] == 0
    archives = {a.cite_as: a for a in forest.archives("lab")}
    assert set(archives) == {"Buck et al. (2018)", "Alt (2020)"}
    jazz = archives["Buck et al. (2018)"]
    assert jazz.name == "Jazz and Its Origins" and jazz.library["doi"] == "10.1000/jazz.2018"
    assert jazz.library["tags"] == ["music"] and jazz.library["collections"] == ["Reading"]

    leaves = forest.context("lab", "Who pioneered bebop?").leaves
    assert leaves and leaves[0].node.archive_id == jazz.id
    assert leaves[0].node.citation.startswith("Buck et al. (2018), p. 1")
    cited = forest.ask("lab", "Who pioneered bebop?").cited
    assert cited and cited[0].node.citation.startswith("Buck et al. (2018)")

    again = forest.import_library("lab", zotero)
    assert again["counts"] == {"imported": 0, "updated": 0, "unchanged": 2, "already": 0, "replaced": 0,
                               "missing": 0, "duplicates": 0, "skipped": 0, "failed": 0}
    library = ZoteroLibrary(zotero, create=False)
    library.db.execute("UPDATE itemDataValues SET value = 'Volcanoes and Ash' WHERE value = 'Volcanoes'")
    library.close()
    updated = forest.import_library("lab", zotero)
    assert updated["counts"]["updated"] == 1 and updated["updated"][0]["changed"] == ["title"]
    assert {a.library["title"] for a in forest.archives("lab")} == {"Jazz and Its Origins", "Volcanoes and Ash"}
    assert len(forest.archives("lab")) == 2


@pytest.mark.slow
def test_a_bib_with_a_missing_file_and_a_duplicate_imports_the_rest(make_forest, tmp_path):
    paper(tmp_path / "papers" / "jazz.pdf", "jazz")
    paper(tmp_path / "papers" / "plants.pdf", "photosynthesis")
    (tmp_path / "papers" / "copy.pdf").write_bytes((tmp_path / "papers" / "jazz.pdf").read_bytes())
    bib = tmp_path / "refs.bib"
    bib.write_text("""
@article{buck2018, author = {Buck, Ann and Bulian, Bo}, title = {Jazz}, year = {2018}, file = {papers/jazz.pdf}}
@article{green2019, author = {Green, Gus}, title = {Leaves and Light}, year = {2019}, doi = {10.1/leaf},
         file = {:papers/plants.pdf:PDF}}
@article{gone2020, author = {Gone, Gil}, title = {Lost}, year = {2020}, file = {papers/lost.pdf}}
@article{again2018, author = {Buck, Ann}, title = {Jazz (preprint)}, year = {2018}, file = {papers/copy.pdf}}
@article{nofile2021, author = {Nil, Ned}, title = {No File}, year = {2021}}
""", encoding="utf-8")
    forest = make_forest(chunk_size=300)
    report = forest.import_library("lab", bib)
    assert report["counts"] == {"imported": 2, "updated": 0, "unchanged": 0, "already": 0, "replaced": 0,
                                "missing": 1, "duplicates": 1, "skipped": 1, "failed": 0}
    assert "lost.pdf" in report["missing"][0]["reason"] and report["duplicates"][0]["reason"] == "the same file"
    assert sorted(a.cite_as for a in forest.archives("lab")) == ["Buck and Bulian (2018)", "Green (2019)"]
    exported = bibtexparser.parse_string(forest.bibtex("lab"))
    assert {(e.key, e["title"], e["year"], e.fields_dict.get("doi") and e["doi"]) for e in exported.entries} == \
        {("buck2018", "Jazz", "2018", None), ("green2019", "Leaves and Light", "2019", "10.1/leaf")}


@pytest.mark.slow
def test_an_archive_export_carries_its_library_metadata_and_the_import_checks_it(make_forest, tmp_path):
    zotero = tmp_path / "Zotero"
    zotero_library(zotero, tmp_path / "scratch").close()
    forest = make_forest(chunk_size=300)
    forest.import_library("lab", zotero)
    jazz = next(a for a in forest.archives("lab") if a.cite_as == "Buck et al. (2018)")
    exported = forest.export_archive("lab", jazz.id)
    exported["archive"]["library"]["creators"][0]["last"] = "Bach"
    copy = forest.import_archive("other", exported)
    assert copy.cite_as == "Bach et al. (2018)" and copy.library["doi"] == "10.1000/jazz.2018"
    exported["archive"]["library"] = ["not", "an", "object"]
    with pytest.raises(Exception, match="library metadata"):
        forest.import_archive("other", exported)


@pytest.mark.slow
def test_an_import_killed_midway_continues_where_it_stopped(tmp_path):
    folder = tmp_path / "papers"
    for number, topic in enumerate(["jazz", "volcanoes", "photosynthesis"] * 2):
        paper(folder / f"paper{number}.pdf", topic, marker=f"copy {number}")
    data_dir = tmp_path / "store"
    env = forest_env(data_dir, FOREST_CHUNK_SIZE="300")
    args = [FOREST, "library", "import", str(folder), "--model-id", "lab", "--json"]
    first = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and ready_archives(data_dir) < 2 and first.poll() is None:
        time.sleep(0.05)
    first.kill()  # SIGKILL, midway through the third document or later
    first.wait()
    assert 2 <= ready_archives(data_dir) < 6, "the import should have been stopped midway"
    second = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["counts"]["unchanged"] >= 2 and report["counts"]["imported"] + report["counts"]["unchanged"] == 6
    listed = json.loads(subprocess.run([FOREST, "archives", "--model-id", "lab", "--json"], env=env,
                                       capture_output=True, text=True, timeout=300).stdout)
    assert sorted(a["name"] for a in listed) == [f"paper{n}" for n in range(6)]  # each once
    doctor = subprocess.run([FOREST, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert json.loads(doctor.stdout)["healthy"], doctor.stdout  # the killed build was cleared by the second run


@pytest.mark.slow
def test_the_library_page_imports_a_library_and_filters_it(workbench, tmp_path):
    from testkit.workbench import button, open_app, use_model_id

    zotero = tmp_path / "Zotero"
    zotero_library(zotero, tmp_path / "scratch").close()
    app = use_model_id(open_app(), "lab")
    app.text_input(key="library_path").set_value(str(zotero)).run()
    app = button(app, "Import library").click().run()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not any("2 imported" in s.value for s in app.success):
        time.sleep(0.5)
        app = app.run()
    assert any(s.value.startswith("Zotero: 2 imported") for s in app.success), [s.value for s in app.success]
    table = app.dataframe[0].value
    assert sorted(table["cite as"]) == ["Alt (2020)", "Buck et al. (2018)"]
    # authors, year and pages read as such: no "None" for an unknown year, the pages of each paper
    assert list(table.columns[:6]) == ["id", "cite as", "name", "authors", "year", "pages"]
    buck = table[table["cite as"] == "Buck et al. (2018)"].iloc[0]
    assert (buck["authors"].split(", ")[0], buck["year"], buck["pages"]) == ("Buck", "2018", 1)
    app = app.multiselect(key="library_tags").set_value(["music"]).run()
    assert app.dataframe[0].value["cite as"].tolist() == ["Buck et al. (2018)"]
    app = app.multiselect(key="library_tags").set_value([]).run()
    app = app.text_input(key="library_filter").set_value("volcanoes").run()
    assert app.dataframe[0].value["cite as"].tolist() == ["Alt (2020)"]
    app = button(app, "Prepare Markdown notes").click().run()
    assert [b.label for b in app.get("download_button")] == ["Download Markdown notes (.zip)"]


@pytest.mark.slow
def test_the_library_page_pages_its_table_and_offers_the_pages_archives(workbench):
    from testkit.topics import topic_text
    from testkit.workbench import open_app, use_model_id

    from forest import MemoryForest

    forest = MemoryForest(data_dir=workbench, chunk_size=300)
    seed = forest.ingest_text("seed", "seed", topic_text("jazz"))
    shipped = forest.export_archive("seed", seed.id, with_vectors=True)
    for number in range(62):   # vectors shipped: nothing embedded
        shipped["archive"]["library"] = {"title": f"Paper {number}", "year": 2000 + number % 20,
                                         "creators": [{"last": f"Author{number}", "type": "author"}]}
        forest.import_archive("lab", shipped, name=f"Paper {number}", on_duplicate="keep")
    forest.close()
    app = use_model_id(open_app(), "lab")
    assert any(c.value == "62 of 62 archives shown" for c in app.caption)
    assert len(app.dataframe[0].value) == 50
    app = app.number_input(key="library_page").set_value(2).run()
    table = app.dataframe[0].value
    assert len(table) == 12 and "Paper 61" in table["name"].tolist()
    offered = app.selectbox(key="delete_choice").options
    assert len(offered) == 12 and all(any(t in o for t in table["name"]) for o in offered)
    app = app.text_input(key="library_filter").set_value("Author7").run()
    assert any(c.value == "1 of 62 archives shown" for c in app.caption)
    assert app.dataframe[0].value["name"].tolist() == ["Paper 7"]


@pytest.mark.slow
def test_papers_and_a_research_session_export_as_markdown_notes_whose_links_resolve(make_forest, tmp_path):
    import re

    zotero = tmp_path / "Zotero"
    zotero_library(zotero, tmp_path / "scratch").close()
    forest = make_forest(chunk_size=300)
    forest.import_library("lab", zotero)
    state = forest.ask("lab", "Who pioneered bebop?")
    forest.research.record_turn(state, "bebop")
    forest.research.add_note("lab", "bebop", "finding", "Bebop came from Parker and Gillespie.",
                             source=state.cited[0].node.citation)
    out = tmp_path / "vault"
    files = forest.export_markdown("lab", out)
    assert files == sorted(["index.md", "sessions/bebop.md",
                            *(f"papers/{p.name}" for p in (out / "papers").iterdir())])
    jazz = next((out / "papers").glob("buck-et-al-2018-*.md")).read_text(encoding="utf-8")
    assert jazz.startswith('---\ntitle: "Jazz and Its Origins"') and 'doi: "10.1000/jazz.2018"' in jazz
    assert "# Buck et al. (2018): Jazz and Its Origins" in jazz and re.search(r"^- \*\*p\. 1\*\* .+ \^n\d+$", jazz, re.M)
    session = (out / "sessions" / "bebop.md").read_text(encoding="utf-8")
    assert "Bebop came from Parker and Gillespie. — Buck et al. (2018), p. 1" in session
    assert "### Who pioneered bebop?" in session
    links = 0
    for note in out.rglob("*.md"):
        text = note.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)]+)\)", text):
            path, _, block = target.partition("#")
            resolved = (note.parent / path).resolve()
            assert resolved.is_file(), f"{note.name} links to {target}"
            if block:  # an Obsidian block reference: the passage ends with " ^n42"
                assert f" {block}\n" in resolved.read_text(encoding="utf-8"), target
            links += 1
    assert links >= 3  # the index to both papers, the session to a cited passage
    with zipfile.ZipFile(io.BytesIO(zipped(forest.markdown_notes("lab"), "lab-notes"))) as vault:  # the workbench's
        assert {n: vault.read(n).decode() for n in vault.namelist()} == \
            {f"lab-notes/{f}": (out / f).read_text(encoding="utf-8") for f in files}


def test_the_library_tables_filters_match_words_authors_years_tags_and_subcollections():
    from forest.records import Archive
    from forest.views.library_view import archive_rows, choices, filtered

    def archive(number: int, library: dict | None) -> Archive:
        return Archive(number, "lab", f"paper {number}", None, "ready", "2026-01-01", {}, library=library,
                       cite_as=None)

    rows = archive_rows([
        archive(1, {"title": "Ask the Right Questions", "year": 2018, "tags": ["RL"], "collections": ["Reading/NLP"],
                    "creators": [{"last": "Buck", "first": "C."}], "abstract": "question reformulation"}),
        archive(2, {"title": "Lava", "year": 2020, "tags": ["geology"], "collections": ["Reading"],
                    "creators": [{"last": "Alt"}]}),
        archive(3, None)])
    offered = choices(rows)
    assert offered.authors == ["Alt", "Buck"] and offered.years == (2018, 2020) and offered.tags == ["geology", "RL"]

    def ids(kept) -> list[int]:
        return [r.archive.id for r in kept]

    assert ids(filtered(rows, "reformulation")) == [1] and ids(filtered(rows, "paper")) == [1, 2, 3]
    assert ids(filtered(rows, authors=["Alt"])) == [2] and ids(filtered(rows, years=(2019, 2021))) == [2]
    assert ids(filtered(rows, collections=["Reading"])) == [1, 2]   # a collection holds its subcollections
    assert ids(filtered(rows, collections=["Reading/NLP"], tags=["RL"])) == [1]
    assert rows[0].to_dict()["authors"] == "Buck" and rows[2].to_dict()["cite as"] == ""


def test_an_imports_report_counts_in_the_right_number_and_lists_what_was_not_simply_imported():
    from forest.views.library_view import import_details, import_summary

    counts = {"imported": 3, "updated": 0, "unchanged": 2, "already": 1, "replaced": 0, "missing": 1,
              "duplicates": 1, "skipped": 2, "failed": 0}
    report = {"counts": counts, "updated": [], "replaced": [], "failed": [],
              "already": [{"title": "Jazz", "reason": "already in the library as archive 2 (Jazz): the same DOI 10.1/j"}],
              "missing": [{"title": "Lost", "reason": "lost.pdf does not exist"}],
              "duplicates": [{"title": "Jazz (preprint)", "reason": "the same file", "same_as": "Jazz"}],
              "skipped": [{"title": "", "key": "nofile2021", "reason": "no file field"}]}
    assert import_summary(report) == ("3 imported, 2 unchanged, 1 already in the library, 1 missing, 1 duplicate, "
                                      "2 items without a document")
    assert import_summary({"counts": {**counts, "duplicates": 2, "skipped": 1}}).endswith(
        "2 duplicates, 1 item without a document")
    assert import_summary({"counts": dict.fromkeys(counts, 0)}) == "nothing to import"
    assert import_details(report) == [
        "already in the library: Jazz: already in the library as archive 2 (Jazz): the same DOI 10.1/j",
        "missing: Lost: lost.pdf does not exist", "duplicate: Jazz (preprint): the same file as Jazz",
        "without a document: nofile2021: no file field"]
