"""Ask: one question, one click, the answer first. The ANSWER/EXPLORE loop runs to its answer in
the engine (MemoryForest.ask, or ask_in_session, which also remembers the turn in the research
session), over the papers chosen (one, several, or all of the model_id's); the answer and its
numbered sources come first, a click on a citation shows the passage on its page, and the steps
the agent took are folded below, each said in a sentence."""
import json

import streamlit as st

from forest import ForestError
from forest.text import counted, safe_markdown
from forest.views.transcript import (citations, decided_by, numbered_answer, sources_markdown, step_sentence,
                              transcript_markdown)
from workbench.reading import cite_link, citation_clicks, show_source
from workbench.shared import get_forest, models_line, page_start, pick_session

# The source panel stays in view beside a long answer.
STICKY = """<style>
div[data-testid="stColumn"]:has(.st-key-ask-source-panel) {
  position: sticky; top: 4rem; align-self: flex-start; }
</style>"""

forest = get_forest()
model_id = page_start(forest, "Ask")
session = pick_session(forest, model_id)
archives = {a.id: a for a in forest.archives(model_id)}
ready = [a.id for a in archives.values() if a.status == "ready"]

with st.form("question"):
    question = st.text_input("Question", value=st.session_state.get("ask_question", ""),
                             placeholder="e.g. Which datasets do they evaluate on?")
    papers = st.multiselect("Papers to ask", ready, format_func=lambda i: archives[i].name,
                            placeholder=f"All {len(ready)} papers of {model_id}" if len(ready) > 1 else "The paper",
                            help="Leave empty to ask every paper of this model_id; pick one or several to ask "
                                 "only those.")
    with st.expander("Options"):
        remember = st.checkbox(f"Remember in the research session ({session})", value=True)
        threshold = st.slider("Drill threshold", 0.0, 1.0, forest.settings.drill_threshold, 0.05,
                              help="A section's children scoring under this are dropped, unless they hold a "
                                   "passage the agent is looking for.")
    asked = st.form_submit_button("Ask", type="primary")
if asked:
    try:
        scope = papers or None
        if remember:
            state, turn = forest.ask_in_session(model_id, session, question, threshold=threshold, archive_ids=scope)
        else:
            state, turn = forest.ask(model_id, question, threshold=threshold, archive_ids=scope), None
        st.session_state["ask_run"] = {"model_id": model_id, "state": state, "turn": turn,
                                       "session": session if remember else None}
        st.session_state["ask_question"] = question
        st.session_state.pop("ask_source", None)
    except ForestError as exc:
        st.error(str(exc))

run = st.session_state.get("ask_run")
if run is None or run["model_id"] != model_id:
    st.caption(f"Answers come from {forest.answer_policy}: the configured LLM, else an offline extractive "
               f"policy that quotes the passages it read. {models_line(forest)}")
    st.stop()
state, turn = run["state"], run["turn"]


def show_cited() -> None:
    st.session_state["ask_source"] = st.session_state["ask_cite"].get("cited")


def show_row() -> None:
    rows = st.session_state["ask_context"].selection.rows
    if rows:
        st.session_state["ask_source"] = state.context[rows[0]].node.id


cites = citations(state, archives)
asked_over = ("all papers" if state.archive_ids is None
              else ", ".join(archives[i].name if i in archives else f"archive {i}" for i in state.archive_ids))
citation_clicks(key="ask_cite", on_cited_change=show_cited)
st.html(STICKY)
main_col, source_col = st.columns([1.1, 1])
with main_col:
    st.subheader(state.question)
    st.markdown(safe_markdown(numbered_answer(state, cites, lambda c: cite_link(c.node_id))))
    if cites:
        st.markdown("**Sources**\n\n" + safe_markdown(sources_markdown(cites, lambda c: cite_link(c.node_id))))
    st.caption(f"Answered by {decided_by(state.answered_by or '')}, asking {asked_over}. "
               "Click a citation to see it on its page.")
    cited_works = sorted({c.node.archive_id for c in state.cited if c.node.work})
    if cited_works:
        st.download_button("BibTeX of the cited works", forest.bibtex(model_id, cited_works),
                           file_name="cited.bib", mime="application/x-bibtex", key="cited_bibtex")
    if turn is not None:
        st.caption(f"Remembered in session {turn.session_id!r} ({counted(len(turn.event_ids), 'event')}).")
        for verdict in turn.conflicts:
            st.warning(f"{safe_markdown(verdict.note())} — see the Reconcile page for the side-by-side.")
        if turn.compaction:
            c = turn.compaction
            st.info(f"The session was compacted: {len(c.compacted_message_ids)} messages summarized, "
                    f"{c.tokens_before:,} → {c.tokens_after:,} tokens, {len(c.findings_added)} findings kept.")

    with st.expander(f"How the agent got there ({len(state.steps)} steps)"):
        for step in state.steps:
            st.markdown(f"**{step.number}.** {safe_markdown(step_sentence(step, state.threshold))}")
        st.caption("What the agent had in view at the end, best first. Select a row to see its passage.")
        st.dataframe([{"node": c.node.id, "kind": "passage" if c.node.is_leaf else "section",
                       "name": c.node.name, "pages": c.node.citation, "score": round(c.score, 3),
                       "summary": c.node.summary} for c in state.context],
                     hide_index=True, key="ask_context", on_select=show_row, selection_mode="single-row")
        if st.toggle("Show each decision as the policy's JSON", key="ask_json"):
            for step in state.steps:
                st.json(step.decision.to_seed_json())
    left, right = st.columns(2)
    left.download_button("Transcript (JSON)", json.dumps(state.to_dict(), ensure_ascii=False, indent=1),
                         file_name="transcript.json", mime="application/json")
    right.download_button("Transcript (Markdown)", transcript_markdown(state, cites), file_name="transcript.md",
                          mime="text/markdown")

with source_col, st.container(key="ask-source-panel"):
    source = st.session_state.get("ask_source") or (cites[0].node_id if cites else None)
    if source is None:
        st.info("Click a citation in the answer to see the passage on its page.")
    else:
        show_source(forest, model_id, source, key="ask", height="calc(100vh - 21rem)")
