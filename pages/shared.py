"""What every workbench page shares, once per process: the engine, its HTTP endpoint, the
ingestion queue (st.cache_resource: thread-safe objects shared by all sessions)."""
from __future__ import annotations

import atexit
from pathlib import Path

import streamlit as st

from forest import ForestError, MemoryForest
from forest.jobs import IngestQueue
from forest.server import ThreadServer
from ingest import SUPPORTED_SUFFIXES

SAMPLE_MODEL_ID = "demo"


@st.cache_resource
def get_forest() -> MemoryForest:
    """The process's engine; a ForestError (not cached, so a rerun retries) when another process
    owns the store."""
    forest = MemoryForest()
    try:
        forest.own_store()
    except ForestError:
        forest.close()
        raise
    return forest


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


@st.cache_resource
def seed_samples(_forest: MemoryForest, _queue: IngestQueue) -> int:
    """Once per process: an empty store gets the sample papers (model_id 'demo'), in the background."""
    folder = Path(_forest.settings.samples_dir or "")
    if not _forest.settings.samples_dir or not folder.is_dir() or _forest.model_ids():
        return 0
    samples = sorted(p for p in folder.iterdir() if p.suffix.lower() in SUPPORTED_SUFFIXES and p.name != "README.md")
    for sample in samples:
        _queue.submit(sample, SAMPLE_MODEL_ID)
    return len(samples)


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


def page_start(forest: MemoryForest, header: str, allow_new: bool = False) -> str:
    """Title, header and the model_id of a page; stops the page while there is none. Pages that
    read archives offer the existing model_ids; pages that create (allow_new) take any name."""
    st.title("Memory Forest")
    st.header(header)
    model_id = pick_model_id(forest, allow_new)
    if not model_id:
        st.info("Type a model_id in the sidebar: the owner of the forest you are building." if allow_new
                else "No archives yet: add documents on the Library page.")
        st.stop()
    return model_id


def pick_session(forest: MemoryForest, model_id: str) -> str:
    """The research session the page works in (sidebar), remembered across pages."""
    known = forest.research.sessions(model_id)
    current = st.session_state.get("research_session") or (known[0] if known else "default")
    value = st.sidebar.text_input("Research session", value=current,
                                  help="notes, history and conversation are kept per session").strip() or "default"
    if known:
        st.sidebar.caption("sessions: " + ", ".join(known[:10]))
    st.session_state["research_session"] = value
    return value
