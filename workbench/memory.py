"""Personal memory for one user_id: try process_memory and its debug trace, the user's knowledge
graph drawn with pyvis, the memories with their history, and the write queue's state."""
import json

import streamlit as st

from forest import ForestError
from forest.views.graph_view import graph_html
from forest.markdown_safety import literal, safe_markdown
from forest.text import counted, truncate
from forest.validation import check_scope_id
from workbench import place
from workbench.shared import confirmed, get_forest, notify, page_header

forest = get_forest()
personal = forest.personal
page_header("Personal memory")


def typed() -> None:
    value = st.session_state["user_id_box"].strip()
    try:
        place.put("user_id", check_scope_id(value, "user_id") if value else None)
    except ForestError as exc:
        st.session_state["user_id_error"] = f"Not a user_id: {exc}."


user_id = place.get("user_id") or ""
try:
    if user_id:
        check_scope_id(user_id, "user_id")
except ForestError as exc:
    st.warning(literal(f"The link's user_id cannot be: {exc}.") + " Type one in the sidebar.")
    user_id = ""
place.show("user_id_box", user_id)
st.sidebar.text_input("user_id", key="user_id_box", on_change=typed,
                      help="The person whose memories you want to see or write (letters, digits, . : @ / - _).")
if "user_id_error" in st.session_state:
    st.sidebar.error(st.session_state.pop("user_id_error"))
if not user_id:
    st.info("Type a user_id in the sidebar: the person whose memories you want to see or write.")
    st.stop()
if not personal.enabled:
    st.warning("Memory is switched off (MEMORY_ENABLED=false): nothing is read or written.")

# Keyed: the open tab survives reruns, and hidden tabs are not drawn (a graph drawn in a hidden tab
# has no size to centre itself in).
try_tab, graph_tab, memories_tab, queue_tab = st.tabs(["process_memory", "Graph", "Memories", "Write queue"],
                                                      key="memory_tab", on_change="rerun")
with try_tab:
    with st.form("process"):
        text = st.text_area("Message", height=80, placeholder="灿灿是小朱的女儿 · I live in Berlin")
        debug = st.checkbox("Debug trace (runs synchronously and explains every stage)")
        sent = st.form_submit_button("Process", type="primary")
    if sent:
        try:
            if debug:
                st.code(personal.debug_process_memory(user_id, text), language="text")
            else:
                context = personal.process_memory(user_id, text).to_dict()  # as the agent receives it
                found = context["vector_chunks"] or context["graph_relations"]
                st.markdown(f"**What the agent is told** ({context['metadata']['retrieval_time_ms']} ms)" if found
                            else "**Nothing known about this yet.**")
                if context["vector_chunks"]:
                    st.dataframe([{"memory": c["memory"], "score": c["score"]}
                                  for c in sorted(context["vector_chunks"], key=lambda c: -c["score"])],
                                 hide_index=True)
                    st.caption("Sorted by similarity to the message; the agent receives them ranked by words and "
                               "meaning together (the JSON below).")
                if context["graph_relations"]:
                    st.dataframe(context["graph_relations"], hide_index=True)
                st.caption("The message is written in the background: the Write queue tab shows what was kept.")
                with st.expander("As the agent receives it (JSON)"):
                    st.json(context)
        except ForestError as exc:
            st.error(literal(str(exc)))

if graph_tab.open:
    with graph_tab:
        graph = personal.user_graph(user_id).to_dict()
        if graph["relations"]:
            st.iframe(graph_html(graph["relations"], speaker=user_id), height=540)
            st.dataframe(graph["relations"], hide_index=True)
        else:
            st.info("No relations yet: they are extracted from stored memories ('X is Y's daughter', '我喜欢X'...).")

if memories_tab.open:
    with memories_tab:
        records = personal.memories(user_id)
        st.caption(counted(len(records), "memory"))
        for record in reversed(records):
            with st.expander(safe_markdown(f"#{record.id} · {truncate(record.memory, 90)}")):
                # Only what is set: most memories belong to the user alone, with no metadata.
                scope = [f"{what} `{value}`" for what, value in (("agent", record.agent_id), ("run", record.run_id))
                         if value]
                if record.metadata:
                    scope.append(f"metadata `{json.dumps(record.metadata, ensure_ascii=False)}`")
                if scope:
                    st.markdown(safe_markdown(" · ".join(scope)))
                history = personal.memory_tool("history", user_id, memory_id=record.id).to_dict()
                st.dataframe(history["payload"]["history"], hide_index=True)
                if confirmed(f"Delete memory #{record.id}", f"“{truncate(record.memory, 200)}” is forgotten.",
                             key=f"delete-memory-{record.id}"):
                    reply = personal.memory_tool("delete", user_id, memory_id=record.id, actor="workbench")
                    if reply.ok:
                        notify(f"Deleted memory #{record.id}.")
                    else:
                        notify(f"Memory #{record.id} was not deleted: {reply.payload.message}", failed=True)
                    st.rerun()
        if records and confirmed("Clear all of this user's memory",
                                 f"All {counted(len(records), 'memory')} of {user_id!r}, their history, graph, tags and "
                                 "queued writes are forgotten. This cannot be undone.", key=f"clear-memory-{user_id}"):
            removed = personal.clear_user_memory(user_id).memories_removed
            notify(f"Cleared the memory of {user_id!r}: {counted(removed, 'memory')} removed.")
            st.rerun()


def write_queue() -> None:
    """Polls once a second while writes are pending, then reruns the page (new memories, new graph)."""
    queue = personal.write_queue(user_id)
    state = queue.state
    st.caption(f"pending {state.pending} · done {state.done} · failed {state.failed}")
    st.dataframe([{"input": truncate(d.input, 120), "status": d.status, "attempts": d.attempts,
                   "privacy": (d.decision or {}).get("privacy", {}).get("label"),
                   "action": (d.decision or {}).get("action"), "error": d.error}
                  for d in queue.items], hide_index=True)
    if state.pending:
        st.session_state["memory_writes_pending"] = True
    elif st.session_state.pop("memory_writes_pending", False):
        st.rerun()


if queue_tab.open:
    with queue_tab:
        pending = personal.write_queue(user_id).state.pending
        st.fragment(run_every=1.0 if pending else None)(write_queue)()
