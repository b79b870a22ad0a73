"""Ask: a question to the model_id's papers (one, several, or all), answered in one click (Ask), or
walked one step at a time (Step through: Next step, Explore this node instead, Run to answer) with
the agent's path drawn on the paper's tree as it goes. The loop is the engine's (MemoryForest.ask,
ask_in_session; start_asking and step_asking for the steps). The answer and its numbered sources
come first, a click on a citation shows the passage on its page, every step is said in a sentence.
The question is part of the place (?q=...): a link to it, opened offline, answers it again."""
import json

import streamlit as st

from forest import ForestError
from forest.markdown_safety import literal, safe_markdown
from forest.text import counted
from forest.views.transcript import (citations, decided_by, numbered_answer, sources_markdown, step_sentence,
                                     transcript_markdown)
from forest.views.tree_view import agent_path, overlay_for
from workbench import place
from workbench.drawing import draw_tree
from workbench.reading import cite_link, citation_clicks, passage_link, show_source
from workbench.shared import get_forest, models_line, page_start, pick_session

# The source panel stays in view beside a long answer.
STICKY = """<style>
div[data-testid="stColumn"]:has(.st-key-ask-source-panel) {
  position: sticky; top: 4rem; align-self: flex-start; }
</style>"""
STEP_THROUGH_HELP = ("Start the loop and take it one step at a time: see what the agent has in view, let it choose "
                     "(Next step) or choose for it (Explore this node instead), and watch its path on the tree.")

forest = get_forest()
model_id = page_start(forest, "Ask")
session = pick_session(forest, model_id)
archives = {a.id: a for a in forest.archives(model_id)}
ready = [a.id for a in archives.values() if a.status == "ready"]
offline = forest.models_in_use()["llm"]["provider"] == "offline"
placed_question = place.get("q") or ""

with st.form("question"):
    question = st.text_input("Question", value=placed_question, placeholder="e.g. Which datasets do they evaluate on?")
    papers = st.multiselect("Papers to ask", ready, format_func=lambda i: archives[i].name,
                            placeholder=f"All {len(ready)} papers of {model_id}" if len(ready) > 1 else "The paper",
                            help="Leave empty to ask every paper of this model_id; pick one or several to ask "
                                 "only those.")
    with st.expander("Options"):
        remember = st.checkbox(f"Remember in the research session ({session})", value=True)
        threshold = st.slider("Drill threshold", 0.0, 1.0, forest.settings.drill_threshold, 0.05,
                              help="A section's children scoring under this are dropped, unless they hold a "
                                   "passage the agent is looking for.")
    ask_col, step_col, _ = st.columns([1, 1.6, 10])
    asked = ask_col.form_submit_button("Ask", type="primary", help="The loop runs to its answer.")
    stepped = step_col.form_submit_button("Step through", help=STEP_THROUGH_HELP)


def begin(text: str, scope: list[int] | None, by_step: bool, remembered_in: str | None) -> None:
    """A new run of the loop for `text`: to its answer, or stopped before its first step."""
    try:
        if by_step:
            state, turn = forest.start_asking(model_id, text, threshold=threshold, archive_ids=scope,
                                              session_id=remembered_in), None
        elif remembered_in:
            state, turn = forest.ask_in_session(model_id, remembered_in, text, threshold=threshold, archive_ids=scope)
        else:
            state, turn = forest.ask(model_id, text, threshold=threshold, archive_ids=scope), None
    except ForestError as exc:
        st.error(literal(str(exc)))
        return
    st.session_state["ask_run"] = {"model_id": model_id, "state": state, "turn": turn, "session": remembered_in,
                                   "retrieved": None}
    place.put("q", text)
    place.put("node", None)


run = st.session_state.get("ask_run")
if asked or stepped:
    begin(question.strip(), papers or None, stepped, session if remember else None)
elif place.linked("q") and placed_question and (run is None or run["state"].question != placed_question):
    # The link this session opened on (or a reload) names a question: its answer is part of the place.
    if offline:
        begin(placed_question, None, False, None)
        st.caption("Answered again from the link, over all papers, and not added to the research session.")
    else:
        st.info("Press Ask to answer this question: opening a link does not call the LLM.")
run = st.session_state.get("ask_run")
if run is None or run["model_id"] != model_id:
    st.caption(f"Answers come from {forest.answer_policy}: the configured LLM, else an offline extractive "
               f"policy that quotes the passages it read. {models_line(forest)}")
    st.stop()
state, turn = run["state"], run["turn"]


def show_cited() -> None:
    place.put("node", st.session_state["ask_cite"].get("cited"))


def show_row() -> None:
    rows = st.session_state["ask_context"].selection.rows
    if rows:
        opened(state.context[rows[0]].node.id)


def opened(node_id: int) -> None:
    """A node chosen in the drawing or the table: the place's node; while stepping, its page opens."""
    place.put("node", node_id)
    st.session_state["ask_open"] = node_id


def act(explore: int | None = None, to_the_end: bool = False) -> None:
    """Next step, Explore this node instead, Run to answer; a finished walk is remembered."""
    try:
        forest.step_asking(state, explore)
        while to_the_end and not state.done:
            forest.step_asking(state)
        if state.done and run["session"]:
            run["turn"] = forest.research.record_turn(state, run["session"])
    except ForestError as exc:
        st.session_state["ask_error"] = str(exc)


def path_on_tree() -> None:
    """The tree of a paper in view, with the search's hits, their common ancestor and the agent's
    path so far lit."""
    if run["retrieved"] is None:
        run["retrieved"] = forest.retrieve(model_id, state.question, archive_ids=state.archive_ids)
    walked = agent_path(state)
    touched = list(dict.fromkeys([*(forest.node(model_id, i).archive_id for i in reversed(walked)),
                                  *(c.node.archive_id for c in state.context)]))
    if not touched:
        return
    # The tree the agent went into last, unless the person chose another for this run.
    shown = run.get("tree") if run.get("tree") in touched else touched[0]
    place.put("archive", shown)   # the Forest page opens on it, with the same path

    def chose_tree() -> None:
        run["tree"] = st.session_state["ask_tree"]
        place.put("archive", run["tree"])

    place.show("ask_tree", shown)
    chosen = st.selectbox("Tree", touched, key="ask_tree", on_change=chose_tree,
                          format_func=lambda i: archives[i].name if i in archives else f"archive {i}",
                          help="The papers the agent has in view, the one it went into last first.")
    nodes = forest.tree(model_id, chosen)
    mine = [r for r in run["retrieved"] if r.node.archive_id == chosen]
    overlay = overlay_for(nodes, [h.node.id for r in mine for h in r.hits], [r.node.id for r in mine if r.kind == "lca"],
                          walked)
    # in view: the passage a person chose, else where the agent went last in this tree
    by_id = {n.id for n in nodes}
    focus = place.get_id("node")
    focus = focus if focus in by_id else next((i for i in reversed(walked) if i in by_id), None)
    draw_tree(nodes, f"ask-tree-{chosen}", overlay, focus, opened)
    st.caption("Red: the search's hits; gold: their common ancestor; purple: the agent's path (the sections it opened, "
               "the passages it read). Click a node to see it on its page.")


def in_view() -> None:
    st.caption("What the agent has in view" + (" at the end" if state.done else " now") +
               ", best first. Select a row to see its passage.")
    st.dataframe([{"node": c.node.id, "kind": "passage" if c.node.is_leaf else "section",
                   "name": c.node.name, "pages": c.node.citation, "score": round(c.score, 3),
                   "summary": c.node.summary} for c in state.context],
                 hide_index=True, key="ask_context", on_select=show_row, selection_mode="single-row")


def stepping() -> None:
    """Step through: the controls, each step said, what the agent has in view; its path on the tree beside."""
    left, right = st.columns([1, 1.5])
    with left:
        st.subheader(literal(state.question), anchor=False)
        st.caption(f"Stepping through: {counted(len(state.steps), 'step')} taken. The agent has "
                   f"{counted(len(state.context), 'node')} in view, {counted(len(state.explorable), 'section')} "
                   "not opened yet.")
        explorable = {c.node.id: c for c in state.explorable}
        next_col, run_col = st.columns(2)
        next_col.button("Next step", type="primary", on_click=act, key="ask_next",
                        help="The policy decides: open a section, or answer from what it has read.")
        run_col.button("Run to answer", on_click=act, kwargs={"to_the_end": True}, key="ask_run_to_end")
        chosen = st.selectbox("Node to explore", list(explorable), key="ask_explore_choice",
                              disabled=not explorable, placeholder="no section left to open",
                              format_func=lambda i: f"{explorable[i].node.name} · {explorable[i].node.citation} "
                                                    f"(score {explorable[i].score:.2f})")
        st.button("Explore this node instead", on_click=act, args=(chosen,), disabled=chosen is None,
                  key="ask_explore", help="Open this section yourself instead of the policy's choice.")
        if "ask_error" in st.session_state:
            st.error(literal(st.session_state.pop("ask_error")))
        for step in state.steps:
            st.markdown(f"**{step.number}.** {safe_markdown(step_sentence(step, state.threshold))}")
        in_view()
    with right:
        path_on_tree()
    if st.session_state.get("ask_open") is not None:
        source_dialog(st.session_state.pop("ask_open"))


@st.dialog("Source", width="large")
def source_dialog(node_id: int) -> None:
    show_source(forest, model_id, node_id, key="ask-step", in_dialog=True)


def answered() -> None:
    """The answer and its sources first, the cited page beside; how the agent got there folded."""
    cites = citations(state, archives)
    st.html(STICKY)
    citation_clicks(key="ask_cite", on_cited_change=show_cited)
    main_col, source_col = st.columns([1.1, 1])
    with main_col:
        st.subheader(literal(state.question), anchor=False)
        st.markdown(safe_markdown(numbered_answer(state, cites, lambda c: cite_link(c.node_id))))
        if cites:
            st.markdown("**Sources**\n\n" + safe_markdown(sources_markdown(
                cites, lambda c: cite_link(c.node_id),
                lambda c: passage_link(model_id, forest.node(model_id, c.node_id)))))
        asked_over = ("all papers" if state.archive_ids is None
                      else ", ".join(archives[i].name if i in archives else f"archive {i}" for i in state.archive_ids))
        st.caption(safe_markdown(f"Answered by {decided_by(state.answered_by or '')}, asking {asked_over}. Click a "
                                 "citation to see it on its page; 🔗 is its own address, to keep or share."))
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
        with st.expander(f"How the agent got there ({counted(len(state.steps), 'step')})"):
            for step in state.steps:
                st.markdown(f"**{step.number}.** {safe_markdown(step_sentence(step, state.threshold))}")
            in_view()
            if st.toggle("Show each decision as the policy's JSON", key="ask_json"):
                for step in state.steps:
                    st.json(step.decision.to_seed_json())
        left, right = st.columns(2)
        left.download_button("Transcript (JSON)", json.dumps(state.to_dict(), ensure_ascii=False, indent=1),
                             file_name="transcript.json", mime="application/json")
        right.download_button("Transcript (Markdown)", transcript_markdown(state, cites), file_name="transcript.md",
                              mime="text/markdown")
    with source_col, st.container(key="ask-source-panel"):
        source = place.get_id("node") or (cites[0].node_id if cites else None)
        if source is None:
            st.info("Click a citation in the answer to see the passage on its page.")
        else:
            show_source(forest, model_id, source, key="ask", height="calc(100vh - 21rem)")
    if st.toggle("Draw the agent's path on the tree", key="ask_draw_path"):
        path_on_tree()


if state.done:
    answered()
else:
    stepping()
