"""Library: upload documents or import a researcher's library into a model_id's forest, watch them
build, find archives by author, year, tag, collection and words, manage them."""
import json
import tempfile
from pathlib import Path

import streamlit as st

from forest import ForestError
from forest.serving.jobs import FINISHED
from forest.markdown_safety import literal, safe_markdown
from forest.limits import MAX_PATH_CHARS
from forest.views.library_view import archive_rows, choices, filtered, import_details, import_summary
from forest.views.markdown_notes import zipped
from workbench.shared import SAMPLE_MODEL_ID, confirmed, get_forest, get_queue, notify, page_start

forest = get_forest()
queue = get_queue(forest)
model_id = page_start(forest, "Library", allow_new=True)

try:
    archives = forest.archives(model_id)
except ForestError as exc:
    st.error(literal(str(exc)))
    st.stop()

# Drawn first, filled once the table's page is known: its archives are what the pickers offer (a
# thousand archives in four pickers cost the page most of a second; a filter finds the others).
upload_area = st.container()
ON_DUPLICATE = {"skip": "Skip it", "replace": "Replace its archive", "keep": "Keep both"}


def on_duplicate(key: str) -> str:
    """What to do with a paper the library holds already: every way in asks the same."""
    return st.radio("If a paper is already in the library", list(ON_DUPLICATE), format_func=ON_DUPLICATE.get,
                    horizontal=True, key=key,
                    help="A paper is recognised by the same file, the same text, DOI or arXiv id, or the same title "
                         "with first author and year.")


def upload_form(offered) -> None:
    with st.form("upload", clear_on_submit=True):
        # No `type=` filter: Streamlit refuses another type before the page runs, with a redacted
        # error; the reader refuses it as it does on every face, naming the file and the types read.
        files = st.file_uploader("Documents (PDF, text, Markdown)", accept_multiple_files=True,
                                 help="Supported: " + ", ".join(forest.supported_suffixes))
        targets = {"a new archive per file": None} | {f"add to archive {a.id}: {a.name}": a.id for a in offered}
        target = st.selectbox("Into", list(targets))
        duplicate = on_duplicate("upload_duplicate")
        submitted = st.form_submit_button("Ingest", type="primary")
    if submitted:
        if not files:
            st.warning("Choose at least one file.")
        for upload in files or []:
            # One folder per file: two uploads with the same name do not overwrite each other.
            path = Path(tempfile.mkdtemp(prefix="forest-upload-")) / Path(upload.name).name  # names an untitled document
            path.write_bytes(upload.getvalue())
            queue.submit(path, model_id, append_to=targets[target], delete_after=True, on_duplicate=duplicate)
        if files:
            st.rerun()  # the jobs' progress above is drawn before this form: draw it again, now polling


with st.expander("Import a library: Zotero, BibTeX or a folder"):
    st.caption("The path of a Zotero data directory (the folder with zotero.sqlite; Zotero may be running), a .bib "
               "file (its `file` fields point at the PDFs), or a folder of PDF, Markdown and text files. Each "
               "document is imported once: importing again adds only what is new and updates changed metadata.")
    library_path = st.text_input("Path", key="library_path", placeholder="~/Zotero", max_chars=MAX_PATH_CHARS)
    library_duplicate = on_duplicate("library_duplicate")
    if st.button("Import library", key="import_library", disabled=not library_path.strip()):
        queue.submit_library(Path(library_path.strip()).expanduser(), model_id, library_duplicate)


def show_jobs() -> None:
    jobs = [j for j in queue.jobs() if j.model_id == model_id]
    # A banner for an archive deleted since is news no longer.
    present = set(forest.archive_ids(model_id))
    gone = [j.id for j in jobs if j.status == "done" and j.report is None and j.archive_id not in present]
    queue.dismiss(gone)
    jobs = [j for j in jobs if j.id not in gone]
    if model_id == SAMPLE_MODEL_ID and any(j.status not in FINISHED for j in jobs):
        st.info("Building the sample paper so there is a forest to explore: it takes a minute or so.")
    for job in jobs[:10]:
        if job.status == "running" and job.stage == "import":
            left = job.seconds_left
            eta = f", about {left / 60:.0f} min left" if left is not None and left >= 90 else \
                (f", about {left:.0f} s left" if left is not None else "")
            st.progress(job.fraction, text=safe_markdown(f"Importing {job.name}: {job.done}/{job.total} documents"
                                                         f"{eta} — {job.detail}"))
        elif job.status == "running":
            with st.status(f"Building {job.name}: {job.stage}", state="running", expanded=True):
                st.caption(" → ".join(job.stages_seen))
                st.progress(job.fraction, text=f"{job.stage} {job.detail} ({job.done}/{job.total})")
        elif job.status == "failed":
            st.error(literal(job.error))
        elif job.status == "done" and job.report is not None:
            st.success(safe_markdown(f"{job.name}: {import_summary(job.report)}"))
            details = import_details(job.report)
            if details:
                st.caption(safe_markdown("\n".join(f"- {line}" for line in details[:20])
                                         + (f"\n- … and {len(details) - 20} more" if len(details) > 20 else "")))
        elif job.status == "skipped":
            st.info(literal(f"{job.name}: {job.error}.") + " Not added again: choose “Replace its archive” or "
                    "“Keep both” to add it.")
        elif job.status == "done":
            st.success(safe_markdown(f"{job.name}: archive {job.archive_id} ({job.archive_name}) is ready"))
        else:
            st.caption(safe_markdown(f"{job.name}: queued"))
    finished = [j.id for j in jobs if j.status in FINISHED]
    if finished and st.button("Clear these messages", key="clear_jobs"):
        queue.dismiss(finished)
        st.rerun()
    if jobs and not queue.busy() and st.session_state.get("jobs_were_busy"):
        st.session_state["jobs_were_busy"] = False
        st.rerun()  # a build finished: refresh the archive list
    st.session_state["jobs_were_busy"] = queue.busy()


# Poll once a second only while something builds: an idle page costs the server nothing.
st.fragment(run_every=1.0 if queue.busy() else None)(show_jobs)()

st.subheader(f"Archives of {model_id}")
if not archives:
    with upload_area:
        upload_form([])
    st.info("No archives yet: ingest a document above.")
    st.stop()
rows = archive_rows(archives)
offered = choices(rows)
if offered.authors or offered.tags or offered.collections or offered.years:
    words, by_author, by_tag, by_collection = st.columns([2, 1, 1, 1])
    text = words.text_input("Filter", key="library_filter", placeholder="words of the title, authors, DOI, abstract")
    authors = by_author.multiselect("Authors", offered.authors, key="library_authors")
    tags = by_tag.multiselect("Tags", offered.tags, key="library_tags")
    collections = by_collection.multiselect("Collections", offered.collections, key="library_collections")
    years = None
    if offered.years and offered.years[0] < offered.years[1]:
        span = st.slider("Years", *offered.years, value=offered.years, key="library_years")
        years = span if span != offered.years else None
    shown = filtered(rows, text, authors, years, tags, collections)
else:
    text = st.text_input("Filter", key="library_filter", placeholder="words of the archive's name")
    shown = filtered(rows, text)
PAGE_ROWS = 50
pages = max(1, -(-len(shown) // PAGE_ROWS))
st.caption(f"{len(shown)} of {len(rows)} archives shown")
page = st.number_input(f"Page (of {pages})", 1, pages, 1, key="library_page") if pages > 1 else 1
on_page = [r.archive for r in shown[(page - 1) * PAGE_ROWS: page * PAGE_ROWS]]
st.dataframe([r.to_dict() for r in shown[(page - 1) * PAGE_ROWS: page * PAGE_ROWS]], hide_index=True)
with upload_area:
    upload_form(on_page)
if len(on_page) < len(archives):
    st.caption("Adding to, deleting, exporting and joining offer the archives of the table's page: filter to "
               "find others.")

names = {f"{a.id}: {a.name}": a.id for a in on_page}
by_id = {a.id: a for a in on_page}
manage, share, merge = st.columns(3)
with manage:
    st.markdown("**Delete**")
    # Nothing chosen at first, nor once the chosen archive is gone: a delete is only ever offered
    # for the archive the person picked.
    chosen = st.selectbox("Archive", list(names), key="delete_choice", index=None, placeholder="Choose an archive")
    doomed = by_id[names[chosen]] if chosen else None
    if doomed and confirmed(f"Delete archive {doomed.id}",
                            f"Archive {doomed.id} ({doomed.name}, {doomed.nodes} nodes) goes from SQLite and "
                            "Chroma. This cannot be undone.", key=f"delete-{doomed.id}"):
        try:
            forest.delete_archive(model_id, doomed.id)
        except ForestError as exc:
            notify(f"Archive {doomed.id} was not deleted: {exc}", failed=True)
        else:
            notify(f"Deleted archive {doomed.id} ({doomed.name}).")
        st.rerun()
with share:
    st.markdown("**Export / import**")
    chosen = st.selectbox("Archive", list(names), key="export_choice")
    if st.button("Prepare export", key="export"):  # built on request: a big archive is a big JSON
        st.session_state["export_ready"] = (names[chosen], json.dumps(forest.export_archive(model_id, names[chosen]),
                                                                ensure_ascii=False))
    ready = st.session_state.get("export_ready")
    if ready and ready[0] == names[chosen]:
        st.download_button("Download JSON", ready[1], file_name=f"archive-{ready[0]}.forest.json",
                           mime="application/json")
    if st.button("Prepare Markdown notes", key="markdown_notes",
                 help="Every archive of this model_id and its research sessions as a folder of Markdown notes "
                      "(Obsidian opens it as a vault): outlines as headings, section summaries, passages with pages."):
        st.session_state["markdown_ready"] = (model_id, zipped(forest.markdown_notes(model_id), f"{model_id}-notes"))
    notes_ready = st.session_state.get("markdown_ready")
    if notes_ready and notes_ready[0] == model_id:
        st.download_button("Download Markdown notes (.zip)", notes_ready[1], file_name=f"{model_id}-notes.zip",
                           mime="application/zip")
    imported = st.file_uploader("Import an exported archive", type=["json"], key="import_file")
    import_duplicate = on_duplicate("import_duplicate")
    if imported is not None and st.button("Import", key="import"):
        # in the background, with progress above: embedding a big archive takes a while
        queue.submit_archive(imported.getvalue(), imported.name, model_id, import_duplicate)
        st.rerun()
with merge:
    st.markdown("**Merge similar archives**")
    if st.button("Find similar archives", key="similar", disabled=len(archives) < 2):
        try:
            st.session_state["similar_pairs"] = [(p.similarity, p.left_name, p.right_name)
                                               for p in forest.similar_archives(model_id)[:5]]
        except ForestError as exc:
            st.error(literal(str(exc)))
    for similarity, left, right in st.session_state.get("similar_pairs", []):
        st.caption(safe_markdown(f"{similarity:.2f} · {left} + {right}"))
    joining = [by_id[names[j]] for j in st.multiselect("Join these under one super-root", list(names),
                                                       key="join_choice")]
    if len(joining) >= 2 and confirmed(
            "Join archives", f"The trees of {', '.join(str(a.id) for a in joining)} hang under one new root in "
            f"archive {joining[0].id}; the others stop being separate archives. This cannot be undone.",
            key="join-" + "-".join(str(a.id) for a in joining)):
        try:
            joined = forest.join_archives(model_id, [a.id for a in joining])
        except ForestError as exc:
            notify(f"Not joined: {exc}", failed=True)
        else:
            notify(f"Joined {len(joining)} archives into archive {joined.id} ({joined.name}).")
        st.rerun()
