"""Ask: the ANSWER/EXPLORE loop stepped by hand, the same loop MCP's ask_memory runs. Each step
says in a sentence what was chosen and why (the policy's JSON behind it); the answer cites its
passages by number, and a click on a citation (or a context row) shows the passage on its page.
In a research session the session's directives and briefing go first into the prompts, and the
finished turn is remembered (events, conflict reconciliation, compaction)."""
import json

import streamlit as st

from forest import ForestError
from forest.agent import AgentState
from forest.text import safe_markdown
from forest.transcript import (citations, decided_by, numbered_answer, sources_markdown, step_sentence,
                              transcript_markdown)
from pages.reading import cite_link, citation_clicks, show_source
from pages.shared import get_forest, page_start, pick_session

# The source panel stays in view beside a long run of steps.
STICKY = """<style>
div[data-testid="stColumn"]:has(.st-key-ask-source-panel) {
  position: sticky; top: 4rem; align-self: flex-start; }
</style>"""

forest = get_forest()
loop = forest.agent
model_id = page_start(forest, "Ask")
session = pick_session(forest, model_id)
st.caption(f"Policy: {loop.policy.label} · research session: {session}")

with st.form("question"):
    question = st.text_input("Question", value=st.session_state.get("ask_question", ""))
    threshold = st.slider("Drill threshold", 0.0, 1.0, forest.settings.drill_threshold, 0.05)
    remember = st.checkbox("Remember in the research session", value=True)
    started = st.form_submit_button("Start", type="primary")
if started:
    try:
        preamble = forest.research.preamble(model_id, session) if remember else ""
        st.session_state["agent"] = loop.start(model_id, question, threshold=threshold, preamble=preamble)
        st.session_state["ask_session"] = session if remember else None
        for stale in ("ask_turn", "ask_source"):
            st.session_state.pop(stale, None)
        st.session_state["ask_question"] = question
    except ForestError as exc:
        st.error(str(exc))

state: AgentState | None = st.session_state.get("agent")
if state is None or state.model_id != model_id:
    st.stop()


def act(explore_node_id: int | None = None, to_the_end: bool = False) -> None:
    try:
        loop.step(state, explore_node_id)
        while to_the_end and not state.done:
            loop.step(state)
    except ForestError as exc:
        st.session_state["ask_error"] = str(exc)


def show_row() -> None:
    rows = st.session_state["ask_context"].selection.rows
    if rows:
        st.session_state["ask_source"] = state.context[rows[0]].node.id


def show_cited() -> None:
    st.session_state["ask_source"] = st.session_state["ask_cite"].get("cited")


explorable = state.explorable
next_col, run_col, override_col = st.columns([1, 1, 2])
next_col.button("Next step", on_click=act, disabled=state.done, type="primary")
run_col.button("Run to answer", on_click=act, kwargs={"to_the_end": True}, disabled=state.done)
with override_col:
    if explorable and not state.done:
        titles = {c.node.id: c.node.title or c.node.summary for c in explorable}
        choice = st.selectbox("Explore this node instead", list(titles),
                              format_func=lambda i: f"node {i}: {titles[i][:60]}")
        st.button("Explore it", on_click=act, args=(choice,))
if "ask_error" in st.session_state:
    st.error(st.session_state.pop("ask_error"))

cites = citations(state, {a.id: a for a in forest.archives(model_id)}) if state.done else []
citation_clicks(key="ask_cite", on_cited_change=show_cited)
st.html(STICKY)
main_col, source_col = st.columns([1.1, 1])
with main_col:
    st.subheader("Context nodes")
    st.caption("What the agent sees now, best first. Select a row to see its passage on the page.")
    st.dataframe([{"node": c.node.id, "kind": "passage" if c.node.is_leaf else "summary",
                   "name": c.node.name, "pages": c.node.citation, "score": round(c.score, 3),
                   "clears threshold": c.score >= state.threshold, "summary": c.node.summary, "hint": c.hint}
                  for c in state.context], hide_index=True, key="ask_context", on_select=show_row,
                 selection_mode="single-row")
    if state.steps:
        st.subheader("Steps")
    for step in state.steps:
        st.markdown(f"**{step.number}.** {safe_markdown(step_sentence(step, state.threshold))}")
        with st.expander(f"Step {step.number}: {step.decision.action} as the policy's JSON"
                         + (", and every child's relevance" if step.children else "")):
            st.json(step.decision.to_seed_json())
            if step.children:
                st.dataframe([{"node": c["node_id"], "title": c.get("title") or "", "pages": c["citation"],
                               "relevance": c["score"], f"≥ {state.threshold:.2f}": c["kept"]}
                              for c in step.children], hide_index=True)

    if state.done:
        st.subheader("Answer")
        st.markdown(safe_markdown(numbered_answer(state, cites, lambda c: cite_link(c.node_id))))
        if cites:
            st.markdown("**Sources**\n\n" + safe_markdown(sources_markdown(cites, lambda c: cite_link(c.node_id))))
        st.caption(f"Answered by {decided_by(state.answered_by or '')}. Click a citation to see it on its page.")
        left, right = st.columns(2)
        left.download_button("Transcript (JSON)", json.dumps(state.to_dict(), ensure_ascii=False, indent=1),
                             file_name="transcript.json", mime="application/json")
        right.download_button("Transcript (Markdown)", transcript_markdown(state, cites), file_name="transcript.md",
                              mime="text/markdown")

        turn_session = st.session_state.get("ask_session")
        if turn_session and "ask_turn" not in st.session_state:
            try:
                st.session_state["ask_turn"] = forest.research.record_turn(state, turn_session)
            except ForestError as exc:
                st.error(f"The answer could not be remembered: {exc}")
        turn = st.session_state.get("ask_turn")
        if turn is not None:
            st.caption(f"Remembered in session {turn.session_id!r} ({len(turn.event_ids)} events).")
            for verdict in turn.conflicts:
                st.warning(f"{safe_markdown(verdict.note())} — see the Reconcile page for the side-by-side.")
            if turn.compaction:
                c = turn.compaction
                st.info(f"The session was compacted: {len(c.compacted_message_ids)} messages summarized, "
                        f"{c.tokens_before:,} → {c.tokens_after:,} tokens, {len(c.findings_added)} findings kept.")

with source_col, st.container(key="ask-source-panel"):
    source = st.session_state.get("ask_source") or (cites[0].node_id if cites else None)
    if source is None:
        st.info("Select a context row, or click a citation in the answer, to see the passage on its page.")
    else:
        show_source(forest, model_id, source, key="ask", height="calc(100vh - 21rem)")
