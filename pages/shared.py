"""What every workbench page shares, once per process: the engine, its HTTP endpoint, the
ingestion queue (st.cache_resource: thread-safe objects shared by all sessions)."""
from __future__ import annotations

import atexit

import streamlit as st

from forest import ForestError, MemoryForest
from forest.jobs import IngestQueue
from forest.server import ThreadServer


@st.cache_resource
def get_forest() -> MemoryForest:
    return MemoryForest()


@st.cache_resource
def get_server(_forest: MemoryForest) -> ThreadServer | str:
    """Started once per process, stopped when the process exits; a message if it cannot start."""
    settings = _forest.settings
    if settings.server_port == 0:
        return "disabled (server_port = 0)"
    try:
        server = ThreadServer(_forest, settings.server_host, settings.server_port, settings.api_token).start()
    except ForestError as exc:
        return str(exc)
    atexit.register(server.stop)
    return server


@st.cache_resource
def get_queue(_forest: MemoryForest) -> IngestQueue:
    queue = IngestQueue(_forest)
    atexit.register(queue.shutdown)
    return queue


def pick_model_id(forest: MemoryForest, allow_new: bool = False) -> str | None:
    """The model_id the page works on (sidebar), remembered across pages in the session."""
    known = forest.model_ids()
    current = st.session_state.get("model_id") or (known[0] if known else "")
    if allow_new:
        value = st.sidebar.text_input("model_id", value=current, help="an existing model_id or a new one")
        if known:
            st.sidebar.caption("existing: " + ", ".join(known))
    else:
        if not known:
            return None
        value = st.sidebar.selectbox("model_id", known, index=known.index(current) if current in known else 0)
    value = (value or "").strip()
    if value:
        st.session_state["model_id"] = value
    return value or None
