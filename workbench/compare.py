"""Compare: the model_id's papers (those chosen, or all) side by side on the questions typed, one
per line. The engine (MemoryForest.compare) fills each cell with the paper's sentences that best
answer the question, or "not found"; a click on a cell's citation opens its page with the passage
highlighted. The table downloads as CSV and Markdown."""
import streamlit as st

from forest import ForestError
from forest.markdown_safety import literal
from forest.text import counted
from forest.views.comparison_table import FOUND_THRESHOLD, comparison_csv, comparison_markdown
from workbench.reading import cite_link, citation_clicks, show_source
from workbench.shared import get_forest, page_start

forest = get_forest()
model_id = page_start(forest, "Compare")
archives = {a.id: a for a in forest.archives(model_id) if a.status == "ready"}

with st.form("compare"):
    papers = st.multiselect("Papers to compare", list(archives),
                            format_func=lambda i: archives[i].cite_as or archives[i].name,
                            placeholder=f"All {counted(len(archives), 'paper')} of {model_id}",
                            help="Leave empty to compare every paper of this model_id; each becomes a row.")
    typed = st.text_area("Questions, one per line", height=110,
                         placeholder="Which datasets do they use?\nHow large is the model?\nWhat is the main result?",
                         help="Each question becomes a column.")
    with st.expander("Options"):
        threshold = st.slider("Relevance threshold", 0.0, 1.0, FOUND_THRESHOLD, 0.05,
                              help="A cell whose best passage scores under this says \"not found\"; higher asks "
                                   "for closer matches.")
    compared = st.form_submit_button("Compare", type="primary")
if compared:
    questions = [line for line in typed.splitlines() if line.strip()]
    try:
        with st.spinner(f"Comparing {counted(len(papers) or len(archives), 'paper')} on "
                        f"{counted(len(questions), 'question')}…"):
            st.session_state["compare_table"] = forest.compare(model_id, questions, papers or None,
                                                               threshold=threshold)
    except ForestError as exc:
        st.error(literal(str(exc)))

table = st.session_state.get("compare_table")
if table is None or table.model_id != model_id:
    st.caption("Each cell quotes the paper's sentences that best answer the question, found through the paper's "
               "tree, with their page and section; a paper whose passages are not relevant enough says "
               "\"not found\". Extractive: no LLM is called.")
    st.stop()


@st.dialog("Source", width="large")
def source_dialog(node_id: int) -> None:
    show_source(forest, model_id, node_id, key="compare", in_dialog=True)


def open_cited() -> None:
    st.session_state["compare_source"] = st.session_state["compare_cite"].get("cited")


citation_clicks(key="compare_cite", on_cited_change=open_cited)
if st.session_state.get("compare_source") is not None:
    source_dialog(st.session_state.pop("compare_source"))

st.markdown(comparison_markdown(table, cite_link))
st.caption("Click a citation to see the passage on its page.")
left, right = st.columns(2)
left.download_button("Download CSV", comparison_csv(table), file_name="comparison.csv", mime="text/csv")
right.download_button("Download Markdown", comparison_markdown(table), file_name="comparison.md",
                      mime="text/markdown")
