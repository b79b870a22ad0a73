"""Ask: the ANSWER/EXPLORE loop (seed 000 §3.2, §5.2) stepped by hand, the same loop MCP's
ask_memory runs. In a research session the session's directives and briefing go first into the
prompts, and the finished turn is remembered (events, conflict reconciliation, compaction)."""
import json

import streamlit as st

from forest import ForestError
from forest.agent import AgentState
from pages.shared import get_forest, page_start, pick_session

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
        st.session_state.pop("ask_turn", None)
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


explorable = [c for c in state.context if not c.node.is_leaf and c.node.id not in state.explored]
next_col, run_col, override_col = st.columns([1, 1, 2])
next_col.button("Next step", on_click=act, disabled=state.done, type="primary")
run_col.button("Run to answer", on_click=act, kwargs={"to_the_end": True}, disabled=state.done)
with override_col:
    if explorable and not state.done:
        choice = st.selectbox("Explore this node instead", [c.node.id for c in explorable],
                              format_func=lambda i: f"node {i}: {next(c.node.summary for c in explorable if c.node.id == i)[:60]}")
        st.button("Explore it", on_click=act, args=(choice,))
if "ask_error" in st.session_state:
    st.error(st.session_state.pop("ask_error"))

st.subheader("Context nodes")
st.dataframe([{"node": c.node.id, "type": c.node.node_type, "score": round(c.score, 3),
               "clears threshold": c.score >= state.threshold, "citation": c.node.citation,
               "summary": c.node.summary, "hint": c.hint} for c in state.context], hide_index=True)

for step in state.steps:
    with st.expander(f"Step {step.number}: {step.decision.action} ({step.decision.source})",
                     expanded=step is state.steps[-1]):
        st.json(step.decision.to_seed_json())
        if step.children:
            st.dataframe([{"node": c["node_id"], "type": c["node_type"], "relevance": c["score"],
                           f"≥ {state.threshold:.2f}": c["kept"], "summary": c["summary"]}
                          for c in step.children], hide_index=True)

if state.done:
    st.subheader("Answer")
    st.markdown(state.answer)
    st.caption(f"answered by {state.answered_by}; cited: " +
               ", ".join(f"node {c.node.id} ({c.node.citation or 'no page'})" for c in state.cited))
    transcript = state.to_dict()
    markdown = "\n\n".join([f"# {state.question}", state.answer or "", "## Trace"] + [
        f"{s['step']}. {s['decision']['action']} by {s['decided_by']}: `{json.dumps(s['decision'], ensure_ascii=False)}`"
        for s in transcript["trace"]])
    left, right = st.columns(2)
    left.download_button("Transcript (JSON)", json.dumps(transcript, ensure_ascii=False, indent=1),
                         file_name="transcript.json", mime="application/json")
    right.download_button("Transcript (Markdown)", markdown, file_name="transcript.md", mime="text/markdown")

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
            st.warning(f"{verdict.note()} — see the Reconcile page for the side-by-side.")
        if turn.compaction:
            c = turn.compaction
            st.info(f"The session was compacted: {len(c.compacted_message_ids)} messages summarized, "
                    f"{c.tokens_before:,} → {c.tokens_after:,} tokens, {len(c.findings_added)} findings kept.")
