"""Reconcile: conflicts between papers, proposed by detection over a question's passages or chosen
by searching for two passages, reviewed (Claude, or the offline rules), saved as findings. A verdict
belongs to the search and the picks it was made from: a new search or pick clears it."""
import streamlit as st

from forest import ForestError
from forest.markdown_safety import literal, safe_markdown
from forest.text import truncate
from workbench.shared import get_forest, page_start, pick_session

forest = get_forest()
research = forest.research
model_id = page_start(forest, "Reconcile")
session = pick_session(forest, model_id)
PASSAGE_HITS = 8

# What was found and decided belongs to one model_id and session: switching either starts afresh.
if st.session_state.get("reconcile_scope") != (model_id, session):
    for key in ("conflicts", "verdict", "hits_a", "hits_b"):
        st.session_state.pop(key, None)
    st.session_state["reconcile_scope"] = (model_id, session)


def clear_verdict() -> None:
    st.session_state.pop("verdict", None)


def passage_search(column, side: str):
    """A query box and the passages it finds; the one picked."""
    with column:
        with st.form(f"search_{side}"):
            query = st.text_input(f"Passage {side}: search the papers",
                                  placeholder="e.g. how many question/answer pairs SearchQA contains")
            searched = st.form_submit_button(f"Search for passage {side}")
        if searched:
            clear_verdict()
            try:
                found = forest.find_passages(model_id, query, top_k=PASSAGE_HITS)
                st.session_state[f"hits_{side}"] = found
                if not found:
                    st.info("No passage found for that query.")
            except ForestError as exc:
                st.error(literal(str(exc)))
        found = st.session_state.get(f"hits_{side}", [])
        if not found:
            return None
        chosen = st.radio(f"Passage {side}", range(len(found)), key=f"pick_{side}", on_change=clear_verdict,
                          format_func=lambda n: safe_markdown(f"{forest.passage_label(found[n])}: "
                                                              f"{truncate(found[n].text, 300)}"))
        return found[chosen]


propose_tab, pick_tab = st.tabs(["Find conflicts for a question", "Compare two passages"])
with propose_tab:
    with st.form("detect"):
        question = st.text_input("Question", value=st.session_state.get("reconcile_question", ""),
                                 help="the passages this question gathers are compared with each other and "
                                      "with the session's findings")
        detect = st.form_submit_button("Find conflicts", type="primary")
    if detect:
        clear_verdict()
        try:
            st.session_state["conflicts"] = forest.question_conflicts(model_id, session, question)
            st.session_state["reconcile_question"] = question
        except ForestError as exc:
            st.session_state.pop("conflicts", None)
            st.error(literal(str(exc)))
    conflicts = st.session_state.get("conflicts", [])
    if detect and "conflicts" in st.session_state and not conflicts:
        st.info("No likely conflict among these passages and this session's findings.")
    if conflicts:
        st.dataframe([{"#": n, "first": forest.passage_label(c.a), "second": forest.passage_label(c.b),
                       "kind": c.kind, "what disagrees": c.detail} for n, c in enumerate(conflicts)], hide_index=True)
        chosen = st.selectbox("Conflict", range(len(conflicts)), on_change=clear_verdict,
                              format_func=lambda n: f"#{n}: {forest.passage_label(conflicts[n].a)} vs "
                                                    f"{forest.passage_label(conflicts[n].b)}")
        if st.button("Reconcile this pair", type="primary"):
            c = conflicts[chosen]
            st.session_state["verdict"] = research.reconcile(c.a, c.b, c.detail, model_id, session)

with pick_tab:
    st.caption("Search for each passage, pick one from the results, then compare the two.")
    left, right = st.columns(2)
    passage_a, passage_b = passage_search(left, "A"), passage_search(right, "B")
    if passage_a and passage_b:
        if st.button("Reconcile the two passages", type="primary"):
            try:
                st.session_state["verdict"] = research.reconcile_pair(passage_a, passage_b, model_id, session)
            except ForestError as exc:
                st.error(literal(str(exc)))

verdict = st.session_state.get("verdict")
if verdict is not None:
    st.subheader("Verdict")
    reviewer = st.warning if verdict.reviewed_by.startswith("offline") else st.success
    reviewer(f"Reviewed by: {verdict.reviewed_by}")
    st.markdown(safe_markdown(verdict.merged_conclusion))
    if verdict.boundary_conditions:
        st.markdown("**Conditions that may explain it**\n"
                    + "\n".join(f"- {safe_markdown(b)}" for b in verdict.boundary_conditions))
    disagreement = verdict.comparison.get("conflict") or {}
    for column, side, sentence in zip(st.columns(2), (verdict.a, verdict.b),
                                      (disagreement.get("a_sentence"), disagreement.get("b_sentence"))):
        with column:
            st.markdown(f"**{safe_markdown(forest.passage_label(side))}**")
            if sentence:
                st.markdown(f"> {safe_markdown(sentence)}")
            with st.expander("Whole passage"):
                st.markdown(safe_markdown(side.text))
    with st.expander("What the rules read (measures, conditions)"):
        st.json(verdict.comparison)
    if not verdict.conflict_found:
        st.info("No conflict between these passages, so there is no finding to save.")
    elif st.button("Save as finding"):
        try:
            research.add_note(model_id, session, "finding", verdict.merged_conclusion,
                              f"{verdict.a.key} vs {verdict.b.key}, {verdict.reviewed_by}")
            st.success(f"Saved to the findings of session {session!r}.")
        except ForestError as exc:
            st.error(literal(str(exc)))
