"""What every workbench page shares: once per process, the engine, its HTTP endpoint and the
ingestion queue (st.cache_resource: thread-safe objects shared by all sessions); per session, the
model_id, the research session and the notices of what the last action did."""
from __future__ import annotations

import atexit
import importlib
import logging
from pathlib import Path

import streamlit as st

from forest import ForestError, MemoryForest
from forest.serving.jobs import IngestQueue
from forest.serving.http import ThreadServer
from forest.markdown_safety import literal, safe_markdown
from forest.validation import check_model_id, check_session_id
from workbench import place

SAMPLE_MODEL_ID = "demo"
log = logging.getLogger("forest.workbench")


# No spinners of their own: app.py shows one while the first session starts them.
@st.cache_resource(show_spinner=False)
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


class SeparateEndpoint:
    """With a server store the agents' endpoint is not in this process: agents call `forest serve`
    processes of their own (any number), so their load never slows the pages. This is where the
    workbench looks for one (the settings `forest serve` starts with)."""

    def __init__(self, host: str, port: int, token: str | None) -> None:
        self.url = f"http://{host}:{port}"
        self.token = token


@st.cache_resource(show_spinner=False)
def get_server(_forest: MemoryForest) -> ThreadServer | SeparateEndpoint | str:
    """Started once per process, stopped when the process exits; a message if it cannot start."""
    settings = _forest.settings
    if settings.server_database:
        return SeparateEndpoint(settings.server_host, settings.server_port, settings.api_token)
    if settings.server_port == 0:
        return "disabled (server_port = 0)"
    try:
        server = ThreadServer(_forest, settings.server_host, settings.server_port, settings.api_token).start()
    except ForestError as exc:
        return str(exc)
    atexit.register(server.stop)
    return server


@st.cache_resource(show_spinner=False)
def get_queue(_forest: MemoryForest) -> IngestQueue:
    queue = IngestQueue(_forest)
    atexit.register(queue.shutdown)
    return queue


def start() -> ThreadServer | SeparateEndpoint | str:
    """The engine, its endpoint (or why it is not running) and, on an empty store, the samples."""
    forest = get_forest()
    server = get_server(forest)
    seed_samples(forest, get_queue(forest))
    table_modules()
    return server


@st.cache_resource(show_spinner=False)
def table_modules() -> None:
    """Once per process, while the engine starts: what Streamlit imports for a first table (pandas,
    pyarrow: slow to import), which the first page showing one would otherwise make a person wait for."""
    for name in ("pandas", "pyarrow"):
        importlib.import_module(name)


@st.cache_resource(show_spinner=False)
def seed_samples(_forest: MemoryForest, _queue: IngestQueue) -> int:
    """Once per process: an empty store gets the sample papers (model_id 'demo'), in the background."""
    folder = Path(_forest.settings.samples_dir or "")
    if not _forest.settings.samples_dir or not folder.is_dir() or _forest.model_ids():
        return 0
    samples = sorted(p for p in folder.iterdir()
                     if p.suffix.lower() in _forest.supported_suffixes and p.name != "README.md")
    for sample in samples:
        _queue.submit(sample, SAMPLE_MODEL_ID)
    return len(samples)


def building_model_ids(forest: MemoryForest) -> list[str]:
    """model_ids whose first documents are still queued or building (the sample's, on a new store)."""
    return list(dict.fromkeys(j.model_id for j in get_queue(forest).jobs() if j.status in ("queued", "running")))


NEW_MODEL_ID = "➕ New model_id…"
MODEL_ID_HELP = ("A model_id owns one forest: an agent's, a project's or a person's. Its archives, research "
                 "sessions and notes are kept apart from every other model_id's, and the agent endpoint "
                 "answers each model_id from its own.")


def pick_model_id(forest: MemoryForest, allow_new: bool = False) -> str | None:
    """The model_id the page works on: the place's (the URL's, else the session's), shown and changed
    in the sidebar. Pages that create (allow_new) also offer a new model_id, made by name on purpose:
    one is never switched to by a typo. A model_id the store does not hold, named by a link, is said
    plainly and never replaced by another."""
    # A model_id whose first archives still build has nothing to read yet, but one can add to it.
    known = list(dict.fromkeys(forest.model_ids() + (building_model_ids(forest) if allow_new else [])))
    wanted = place.get("model_id")
    if wanted is None and known:
        wanted = known[0]
        place.put("model_id", wanted)
    try:
        named = check_model_id(wanted) if wanted is not None else None
    except ForestError as exc:
        st.error(literal(f"The link names a model_id that cannot be: {exc}.") + " Choose one in the sidebar.")
        named = None
    new = [named] if allow_new and named is not None and named not in known else []
    options = known + new
    if named is not None and named not in options:
        st.warning(f"This store has no model_id {named!r}" + (f" (it holds {', '.join(map(repr, known))})" if known
                   else "") + ": choose one in the sidebar. Nothing was switched for you.")
    choices = options + [NEW_MODEL_ID] if allow_new else options
    if not choices:
        return None
    naming = allow_new and st.session_state.get("naming_model_id", False)
    place.show("model_id_pick", NEW_MODEL_ID if naming else named if named in options else None)

    def picked() -> None:
        value = st.session_state["model_id_pick"]
        st.session_state["naming_model_id"] = value == NEW_MODEL_ID
        if value not in (None, NEW_MODEL_ID):
            place.put("model_id", value)

    value = st.sidebar.selectbox("model_id", choices, index=None, key="model_id_pick", help=MODEL_ID_HELP,
                                 placeholder="Choose a model_id", on_change=picked,
                                 format_func=lambda m: f"{m} (new, empty)" if m in new else m)
    if value == NEW_MODEL_ID:
        _name_new_model_id(known)
        return None
    return value


def _name_new_model_id(known: list[str]) -> None:
    def create() -> None:
        name = st.session_state.get("new_model_id_name", "").strip()
        try:
            check_model_id(name)
        except ForestError as exc:
            st.session_state["new_model_id_error"] = str(exc)
            return
        st.session_state["naming_model_id"] = False
        place.put("model_id", name)
        st.session_state["new_model_id_name"] = ""

    with st.sidebar.form("new_model_id", border=False):
        st.text_input("Name of the new model_id", key="new_model_id_name", placeholder="thesis, alice, agent-7")
        st.form_submit_button("Create", on_click=create)
    if "new_model_id_error" in st.session_state:
        st.sidebar.error(st.session_state.pop("new_model_id_error"))


def models_line(forest: MemoryForest) -> str:
    """Which LLM and embedder are in force, in one line (URLs without secrets)."""
    used = forest.models_in_use()
    llm, embedder = used["llm"], used["embedder"]
    if llm["provider"] == "offline":
        llm_text = "offline (extractive summaries, the offline policy and rules; no LLM configured)"
    else:
        llm_text = f"{llm['provider']} · {llm['model']} at {llm['url']}"
    where = f"at {embedder['url']}" if embedder["url"] else "in this process"
    return f"LLM: {llm_text} — embedder: {embedder['provider']} · {embedder['model']} ({embedder['dim']} dimensions) {where}"


def page_header(header: str) -> None:
    """What every page starts with, under app.py's shell (the app's name is in the navigation)."""
    st.header(header)


def page_start(forest: MemoryForest, header: str, allow_new: bool = False) -> str:
    """Header and the model_id of a page; stops the page while there is none. Pages that read
    archives offer the existing model_ids; pages that create (allow_new) can name a new one."""
    page_header(header)
    model_id = pick_model_id(forest, allow_new)
    if not model_id:
        building = building_model_ids(forest)
        if st.session_state.get("naming_model_id"):
            st.info("Name the new model_id in the sidebar and press Create. " + MODEL_ID_HELP)
        elif forest.model_ids():
            pass   # a model_id the store does not hold: pick_model_id said so
        elif building:
            st.info(f"The first archives of model_id {building[0]!r} are being built (the sample paper, on a "
                    "new store): they appear here in a minute or so. The Library page shows the progress.")
        else:
            st.info("No archives yet: add documents on the Library page.")
        st.stop()
    if allow_new and model_id not in forest.model_ids() and model_id not in building_model_ids(forest):
        others = ", ".join(repr(m) for m in forest.model_ids())
        st.info(f"model_id {model_id!r} is new and has no archives yet: upload documents to build its forest."
                + (f" The archives of {others} are unchanged: pick them in the sidebar." if others else ""))
    return model_id


def page_failed(title: str, exc: Exception) -> None:
    """What a page shows when it fails unexpectedly: one message, no traceback (that goes to the
    workbench's log). The engine's own errors say what is wrong in words, so they are shown as such."""
    log.error("the %s page failed", title, exc_info=exc)
    if isinstance(exc, ForestError):
        st.error(literal(f"The {title} page stopped: {exc}"))
    else:
        st.error(f"The {title} page stopped on an unexpected error ({type(exc).__name__}); the details are in "
                 "the workbench's log. Reload the page to try again, or open another page from the sidebar.")


def notify(text: str, *, failed: bool = False) -> None:
    """Say what an action did: shown as a toast by the next run of app.py (which follows the action's
    st.rerun, or runs right after an on_click callback)."""
    st.session_state.setdefault("notices", []).append((text, "⚠️" if failed else "✅"))


def show_notices() -> None:
    for text, icon in st.session_state.pop("notices", []):
        st.toast(literal(text), icon=icon, duration="long")


def confirmed(label: str, consequence: str, key: str) -> bool:
    """A destructive action behind a confirmation: `label` opens a popover that says what will happen,
    and only its "Yes" button acts. `key` names the item: each item has a popover of its own, so one
    left open never offers the next item, and "Yes" closes it. A button holds for one run, so no
    confirmation carries over to the next item either."""
    opened = f"{key}:popover"

    def close() -> None:
        st.session_state[opened] = False

    with st.popover(label, icon=":material/delete:", key=opened, on_change="rerun"):
        st.markdown(safe_markdown(consequence))
        return st.button(f"Yes, {label[0].lower()}{label[1:]}", key=key, type="primary", on_click=close)


def pick_session(forest: MemoryForest, model_id: str) -> str:
    """The research session the page works in: the place's, shown and changed in the sidebar. A name
    that cannot be a session is flagged under the field; the page goes on in the session it was in."""
    known = forest.research.sessions(model_id)
    current = place.get("session") or (known[0] if known else "default")
    try:
        check_session_id(current)
    except ForestError as exc:
        st.warning(literal(f"The link's research session cannot be: {exc}.") + " This page is in session 'default'.")
        current = "default"
    place.put("session", current)
    place.show("research_session_box", current)

    def typed() -> None:
        value = st.session_state["research_session_box"].strip() or "default"
        try:
            place.put("session", check_session_id(value))
        except ForestError as exc:
            st.session_state["research_session_error"] = f"Not a session name: {exc}. Still in {current!r}."

    st.sidebar.text_input("Research session", key="research_session_box", on_change=typed,
                          help="notes, history and conversation are kept per session")
    if "research_session_error" in st.session_state:
        st.sidebar.error(st.session_state.pop("research_session_error"))
    if known:
        st.sidebar.caption(safe_markdown("sessions: " + ", ".join(known[:10])))
    return current
