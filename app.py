"""Memory Forest workbench (Streamlit): the pages in pages/, over the one engine in forest/.

The engine, its MCP / REST / OpenAI endpoint (a background thread) and the ingestion queue are
shared by every session of this process (pages/shared.py)."""
import streamlit as st

from forest import ForestError
from forest.server import ThreadServer
from pages.shared import get_forest, get_queue, get_server, seed_samples

st.set_page_config(page_title="Memory Forest", layout="wide")
try:
    forest = get_forest()
except ForestError as exc:  # another process owns the store: say so instead of a traceback
    st.title("Memory Forest")
    st.error(str(exc))
    st.stop()
server = get_server(forest)
seed_samples(forest, get_queue(forest))
with st.sidebar:
    if isinstance(server, ThreadServer):
        st.caption(f"Agent endpoint running: {server.url}/mcp")
    else:
        st.caption(f"Agent endpoint not running: {server}")

page = st.navigation([
    st.Page("pages/library.py", title="Library", icon=":material/library_books:", default=True),
    st.Page("pages/tree.py", title="Forest", icon=":material/account_tree:"),
    st.Page("pages/ask.py", title="Ask", icon=":material/question_answer:"),
    st.Page("pages/research.py", title="Research memory", icon=":material/psychology:"),
    st.Page("pages/reconcile.py", title="Reconcile", icon=":material/balance:"),
    st.Page("pages/memory.py", title="Personal memory", icon=":material/person:"),
    st.Page("pages/server.py", title="Server", icon=":material/hub:"),
])
page.run()
