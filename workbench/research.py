"""Research memory: the session's briefing as the model sees it, the workspace notes,
episodic recall with its decay, semantic knowledge with history, the core directives (CORE.md)
and the conversation with its compaction."""
from collections.abc import Callable

import streamlit as st

from forest import ForestError
from forest.markdown_safety import literal, safe_markdown
from forest.text import counted, truncate
from workbench.reading import citation_clicks, linked_citations, show_source
from workbench.shared import confirmed, get_forest, notify, page_start, pick_session

forest = get_forest()
research = forest.research
model_id = page_start(forest, "Research memory", allow_new=True)
session = pick_session(forest, model_id)


def attempt(action: Callable[..., object], *args: object, success: str) -> None:
    """Run an engine call from a button and say how it went (shown by the next run)."""
    try:
        action(*args)
    except ForestError as exc:
        notify(str(exc), failed=True)
    else:
        notify(success)


def compact_now() -> None:
    try:
        report = research.compact(model_id, session)
    except ForestError as exc:
        notify(f"Not compacted: {exc}", failed=True)
        return
    if report.compacted_message_ids:
        notify(f"Compacted {counted(len(report.compacted_message_ids), 'older message')} into one summary "
               f"({report.tokens_before:,} → {report.tokens_after:,} tokens, "
               f"{counted(len(report.findings_added), 'finding')} kept in the workspace).")
    else:
        notify(f"Nothing to compact: all {counted(len(report.kept_message_ids), 'message')} ({report.tokens_before:,} tokens) "
               "are recent enough to stay as they are.")


@st.dialog("Source", width="large")
def source_dialog(node_id: int) -> None:
    show_source(forest, model_id, node_id, key="research", in_dialog=True)


def open_cited() -> None:
    st.session_state["research_source"] = st.session_state["research_cite"].get("cited")


def cited(text: str) -> str:
    """The text with its '[node 42, ...]' citations naming their paper, each opening its page."""
    return linked_citations(forest, model_id, text)


def note_source(source: str) -> str:
    """A note's source as a link when it names a node ("node 42, p. 7"), else as written."""
    linked = cited(f"[{source}]")
    return safe_markdown(linked if linked != f"[{source}]" else source)


citation_clicks(key="research_cite", on_cited_change=open_cited)
if st.session_state.get("research_source") is not None:
    source_dialog(st.session_state.pop("research_source"))

# Keyed: the open tab survives the rerun that follows each action.
briefing_tab, workspace_tab, episodic_tab, knowledge_tab, directives_tab, conversation_tab = st.tabs(
    ["Briefing", "Workspace", "Episodic memory", "Knowledge", "Directives (CORE.md)", "Conversation"],
    key="research_tab", on_change="rerun")

with briefing_tab:
    briefing = research.briefing(model_id, session)
    st.caption(f"{len(briefing.text.splitlines())} of {briefing.line_budget} lines · "
               f"{counted(len(briefing.folded), 'older note')} folded away (still found by episodic search)")
    st.code(research.preamble(model_id, session), language="markdown")

with workspace_tab:
    with st.form("note", clear_on_submit=True):
        kind = st.selectbox("Kind", ["finding", "constraint", "focus"])
        text = st.text_area("Note", height=80)
        source = st.text_input("Source (optional)", placeholder="node 42, p. 7")
        if st.form_submit_button("Add note", type="primary"):
            attempt(research.add_note, model_id, session, kind, text, source, success=f"Added the {kind}.")
            st.rerun()
    items = research.workspace(model_id, session)
    if not items:
        st.info("No notes in this session yet.")
    for item in reversed(items):
        left, right = st.columns([6, 1])
        # notes come from any agent (MCP add_research_note): rendered through the sanitizer
        left.markdown(f"**{item.kind}** · {safe_markdown(cited(item.text))}"
                      + (f"  \n_{note_source(item.source)}_" if item.source else ""))
        with right:
            if confirmed("Remove", f"This {item.kind} leaves the workspace of session {session!r}.",
                         key=f"remove-{item.id}"):
                attempt(research.remove_note, model_id, session, item.id, success=f"Removed the {item.kind}.")
                st.rerun()

with episodic_tab:
    with st.form("episodic"):
        query = st.text_input("Search the history")
        left, right = st.columns(2)
        time_range = left.text_input("Time range", placeholder="7d · 24h · 2026-11-01..2026-11-15")
        this_session = right.checkbox("This session only")
        searched = st.form_submit_button("Search", type="primary")
    if searched:
        try:
            found = research.search_episodic(model_id, query, time_range or None,
                                             session_id=session if this_session else None, top_k=10)
            st.dataframe([{"when": f.event.to_dict()["created_at"], "kind": f.event.kind,
                           "session": f.event.session_id, "similarity": round(f.similarity, 3),
                           "retention": round(f.retention, 3), "score": round(f.score, 3),
                           "recalled": f.event.recall_count,
                           "content": truncate(linked_citations(forest, model_id, f.event.content, links=False), 300)}
                          for f in found],
                         hide_index=True)
            st.caption("score = similarity × retention exp(−days / S), as ranked; each result shown counts as "
                       "a recall, already in its \"recalled\" count, and doubles its S.")
        except ForestError as exc:
            st.error(literal(str(exc)))
    st.subheader("Latest events of this session")
    st.dataframe([{"when": e["created_at"], "kind": e["kind"],
                   "content": truncate(linked_citations(forest, model_id, e["content"], links=False), 200),
                   "recalled": e["recall_count"], "S (days)": e["stability_days"]}
                  for e in research.timeline(model_id, session, 30)], hide_index=True)

with knowledge_tab:
    with st.form("knowledge", clear_on_submit=True):
        topic = st.text_input("Topic")
        conclusion = st.text_area("Conclusion", height=80)
        if st.form_submit_button("Update knowledge", type="primary"):
            attempt(research.update_knowledge, model_id, topic, conclusion, session,
                    success=f"Updated the knowledge on {topic.strip()!r}.")
            st.rerun()
    for entry in research.knowledge(model_id):
        with st.expander(safe_markdown(f"{entry.topic} (version {entry.version})")):
            for version in research.knowledge(model_id, entry.topic, with_history=True):
                status = "in force" if version.superseded_at is None else f"superseded {version.to_dict()['superseded_at']}"
                st.markdown(f"**v{version.version}** ({status}): {safe_markdown(cited(version.conclusion))}")

with directives_tab:
    st.caption(literal(f"{research.core_path}: injected first into every prompt of every session.")
               + ("" if research.directives_saved else " Not written yet: these are the default directives, in force "
                  "until you save your own there."))
    edited = st.text_area("Core directives", value=research.directives(), height=300)
    if st.button("Save directives", type="primary"):  # not on_click: its args would hold the text before the edit
        attempt(research.save_directives, edited, success="Saved the core directives.")
        st.rerun()

with conversation_tab:
    live = research.messages(model_id, session)
    everything = research.messages(model_id, session, include_compacted=True)
    used, limit = sum(m.tokens for m in live), forest.settings.session_token_limit
    st.progress(min(1.0, used / limit), text=f"{used:,} of {limit:,} tokens (compaction at "
                                              f"{forest.settings.compaction_ratio:.0%})")
    st.caption(f"{counted(len(live), 'live message')}; {len(everything) - len(live)} compacted (kept in episodic memory)")
    st.button("Compact now", disabled=len(live) < 2, on_click=compact_now)
    for message in live:
        with st.chat_message("assistant" if message.role != "user" else "user"):
            st.markdown(("**Summary of earlier messages.** " if message.role == "summary" else "")
                        + safe_markdown(cited(message.content)))
