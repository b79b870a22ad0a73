"""Memory: the personal memory service (seeds 003, 004) for one user_id: try process_memory and
its debug trace, the user's knowledge graph drawn with pyvis, the memories with their history,
and the write queue's state."""
import json

import streamlit as st

from forest import ForestError
from forest.personal.graph_view import graph_html
from pages.shared import get_forest

forest = get_forest()
personal = forest.personal
st.title("Memory Forest")
st.header("Personal memory")
user_id = st.sidebar.text_input("user_id", value=st.session_state.get("user_id", "")).strip()
if not user_id:
    st.info("Type a user_id in the sidebar: the person whose memories you want to see or write.")
    st.stop()
st.session_state["user_id"] = user_id
if not personal.enabled:
    st.warning("Memory is switched off (MEMORY_ENABLED=false): nothing is read or written.")

try_tab, graph_tab, memories_tab, queue_tab = st.tabs(["process_memory", "Graph", "Memories", "Write queue"])
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
                st.json(personal.process_memory(user_id, text))
                st.caption("The write happens in the background: see the Write queue tab.")
        except ForestError as exc:
            st.error(str(exc))

with graph_tab:
    graph = personal.user_graph(user_id)
    if graph["relations"]:
        st.iframe(graph_html(graph["relations"], speaker=user_id), height=540)
        st.dataframe(graph["relations"], hide_index=True)
    else:
        st.info("No relations yet: they are extracted from stored memories ('X is Y's daughter', '我喜欢X'...).")

with memories_tab:
    records = personal.memories(user_id)
    st.caption(f"{len(records)} memories")
    for record in reversed(records):
        with st.expander(f"#{record.id} · {record.memory[:90]}"):
            st.markdown(f"scope: agent `{record.agent_id}`, run `{record.run_id}` · metadata "
                        f"`{json.dumps(record.metadata, ensure_ascii=False)}`")
            st.dataframe(personal.memory_tool("history", user_id, memory_id=record.id)["payload"]["history"],
                         hide_index=True)
            if st.button("Delete", key=f"delete-{record.id}"):
                st.json(personal.memory_tool("delete", user_id, memory_id=record.id, actor="workbench"))
                st.rerun()
    if records and st.button("Clear all of this user's memory"):
        st.json(personal.clear_user_memory(user_id))
        st.rerun()

with queue_tab:
    queue = personal.write_queue(user_id)
    state = queue["state"]
    st.caption(f"pending {state['pending']} · done {state['done']} · failed {state['failed']}")
    st.dataframe([{"input": d["input"][:120], "status": d["status"], "attempts": d["attempts"],
                   "privacy": (d["decision"] or {}).get("privacy", {}).get("label"),
                   "action": (d["decision"] or {}).get("action"), "error": d["error"]}
                  for d in queue["items"]], hide_index=True)
