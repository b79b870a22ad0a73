"""Reconcile: conflicts between papers, proposed by detection over a question's
passages or picked by hand, reviewed (Claude, or the offline side-by-side), saved as findings."""
import streamlit as st

from forest import ForestError
from forest.research.reconcile import Reconciliation
from forest.text import safe_markdown
from pages.shared import get_forest, page_start, pick_session

forest = get_forest()
research = forest.research
model_id = page_start(forest, "Reconcile")
session = pick_session(forest, model_id)

propose_tab, pick_tab = st.tabs(["Detect in a question's passages", "Pick two passages"])
with propose_tab:
    with st.form("detect"):
        question = st.text_input("Question", value=st.session_state.get("reconcile_question", ""))
        detect = st.form_submit_button("Find conflicts", type="primary")
    if detect:
        try:
            st.session_state["conflicts"] = forest.question_conflicts(model_id, session, question)
            st.session_state["reconcile_question"] = question
        except ForestError as exc:
            st.error(str(exc))
    conflicts = st.session_state.get("conflicts", [])
    if detect and not conflicts:
        st.info("No likely conflict among these passages and this session's findings.")
    if conflicts:
        st.dataframe([{"#": n, "a": c.a.key, "b": c.b.key, "kind": c.kind,
                       "same topic": round(c.topic_similarity, 3), "what disagrees": c.detail}
                      for n, c in enumerate(conflicts)], hide_index=True)
        chosen = st.selectbox("Conflict", range(len(conflicts)),
                              format_func=lambda n: f"#{n}: {conflicts[n].a.key} vs {conflicts[n].b.key}")
        if st.button("Reconcile this pair", type="primary"):
            c = conflicts[chosen]
            st.session_state["verdict"] = research.reconcile(c.a, c.b, c.detail, model_id, session)

with pick_tab:
    with st.form("pick"):
        left, right = st.columns(2)
        node_a = left.number_input("Passage A (node id)", min_value=1, step=1)
        node_b = right.number_input("Passage B (node id)", min_value=1, step=1, value=2)
        picked = st.form_submit_button("Reconcile", type="primary")
    if picked:
        try:
            st.session_state["verdict"] = research.reconcile_nodes(model_id, int(node_a), int(node_b), session)
        except ForestError as exc:
            st.error(str(exc))

verdict: Reconciliation | None = st.session_state.get("verdict")
if verdict is not None:
    st.subheader("Verdict")
    (st.success if verdict.reviewed_by.startswith("claude") else st.warning)(f"Reviewed by: {verdict.reviewed_by}")
    st.caption(f"Detected: {safe_markdown(verdict.detected)}")
    st.markdown(f"**Merged conclusion.** {safe_markdown(verdict.merged_conclusion)}")
    if verdict.boundary_conditions:
        st.markdown("**Boundary conditions**\n" + "\n".join(f"- {safe_markdown(b)}" for b in verdict.boundary_conditions))
    for column, side, conditions in zip(st.columns(2), (verdict.a, verdict.b),
                                        (verdict.conditions_a, verdict.conditions_b)):
        with column:
            st.markdown(safe_markdown(f"**{side.key}** · {side.source}" + (f" · {side.citation}" if side.citation else "")))
            st.markdown(f"> {safe_markdown(side.text[:1200])}")
            st.markdown("Conditions: " + safe_markdown(", ".join(conditions) or "none found"))
    with st.expander("Side-by-side details (rules)"):
        st.json(verdict.comparison)
    if not verdict.conflict_found:
        st.info("No conflict between these passages, so there is no finding to save.")
    elif st.button("Save as finding"):
        try:
            research.add_note(model_id, session, "finding", verdict.merged_conclusion,
                              f"{verdict.a.key} vs {verdict.b.key}, {verdict.reviewed_by}")
            st.success(f"Saved to the findings of session {session!r}.")
        except ForestError as exc:
            st.error(str(exc))
