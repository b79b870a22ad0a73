"""Where a researcher is: the model_id and, where a page has them, the archive, the node, the research
session, the question and the user_id. The place lives in the URL's query (`/tree?model_id=scholar&
archive=3&node=264`), so a reload, a bookmark, back/forward and a copied link return to it, and in
the session, because a page switch starts the next page with an empty query: app.py calls `keep()`
first in every run, which takes what the URL says and puts back what the switch dropped.

The URL wins over the session: a link opened, or a step back in the browser's history, moves the
researcher to the place it names. Widgets show the place (`show`, before they are drawn) and move it
(`moved`, as their on_change), so a page never keeps a second copy of it that could disagree."""
from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

import streamlit as st

from forest.markdown_safety import literal

# In the URL in this order; a new model_id leaves the rest behind (they belong to the old one).
KEYS = ("model_id", "archive", "node", "session", "q", "user_id")
BELONG_TO_MODEL_ID = ("archive", "node", "session", "q")
_REMEMBERED = "place"
_LINKED = "place_linked"


def keep() -> None:
    """Every run, before the page: the URL's place is remembered; what a page switch dropped from
    the URL is put back (replacing the history entry the switch made, not adding one)."""
    remembered: dict[str, str] = st.session_state.setdefault(_REMEMBERED, {})
    url = st.query_params
    st.session_state.setdefault(_LINKED, {key for key in KEYS if key in url})   # what the session opened on
    if "model_id" in url and url["model_id"] != remembered.get("model_id"):
        for key in BELONG_TO_MODEL_ID:   # a link to another model_id: the old one's archive is no place there
            if key not in url:
                remembered.pop(key, None)
    for key in KEYS:
        if key in url:
            remembered[key] = url[key]
        elif key in remembered:
            url[key] = remembered[key]


def get(key: str) -> str | None:
    value = st.session_state.get(_REMEMBERED, {}).get(key)
    return value or None


def linked(key: str) -> bool:
    """Whether the place's `key` is still the one the link (or reload) this session opened on gave."""
    return key in st.session_state.get(_LINKED, set())


def get_id(key: str) -> int | None:
    """An id of the place (archive, node); None if absent. A value that is no id is dropped with a
    warning rather than failing the page (it came from a URL a person may have typed)."""
    value = get(key)
    if value is None:
        return None
    if value.isascii() and value.isdigit() and 0 < len(value) < 19:
        return int(value)
    st.warning(literal(f"The link's {key} {value[:40]!r} is not an id: it was left out."))
    put(key, None)
    return None


def put(key: str, value: object | None) -> None:
    """Move the place: `value` (None, or "", removes the key); a new model_id leaves the old one's
    archive, node, session and question behind."""
    remembered: dict[str, str] = st.session_state.setdefault(_REMEMBERED, {})
    st.session_state.setdefault(_LINKED, set()).discard(key)
    text = "" if value is None else str(value)
    if key == "model_id" and text != remembered.get("model_id"):
        for other in BELONG_TO_MODEL_ID:
            _drop(remembered, other)
    if text:
        remembered[key] = text
        st.query_params[key] = text
    else:
        _drop(remembered, key)


def _drop(remembered: dict[str, str], key: str) -> None:
    remembered.pop(key, None)
    if key in st.query_params:
        del st.query_params[key]


def show(widget_key: str, value: object) -> None:
    """Before a keyed widget is drawn: it shows `value`, the place's (a link or the history may have
    moved the place since the widget was last drawn)."""
    st.session_state[widget_key] = value


def moved(key: str, widget_key: str, convert: Callable[[object], object] = lambda v: v) -> Callable[[], None]:
    """The on_change of a widget that moves the place's `key` to the widget's value."""
    def move() -> None:
        put(key, convert(st.session_state.get(widget_key)))
    return move


def link(page: str, **where: object) -> str:
    """A page's address for a place, from the server's root ("/tree?model_id=...&archive=3&node=264"):
    what a citation's link opens."""
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    query = [(key, str(where[key])) for key in KEYS if where.get(key) not in (None, "")]
    return (f"/{base}" if base else "") + f"/{page}" + (f"?{urlencode(query)}" if query else "")


def absolute(path: str) -> str:
    """`path` (from link) on the host the browser reached this app at: a link to copy elsewhere."""
    url = st.context.url or ""
    return ("/".join(url.split("/", 3)[:3]) if url.startswith("http") else "") + path
