"""Memory Forest workbench (Streamlit): the pages in workbench/, over the one engine in forest/.

Every page runs through this script, whatever URL opened it: st.navigation picks the page from the
URL (/ask runs workbench/ask.py), after the shell (title, icon, wide layout, navigation, endpoint
status); the engine starts under a loading message, then the page runs. The engine, its MCP / REST /
OpenAI endpoint (a background thread) and the ingestion queue are shared by every session of this
process (workbench/shared.py)."""
import streamlit as st

from workbench import place

# An emoji favicon is drawn locally; a Material icon would be fetched from Google's font host.
st.set_page_config(page_title="Memory Forest", page_icon="🌳", layout="wide")
PAGES = [  # workbench/<file>.py (URL path /<file>), title, Material icon, what the page is for (its tooltip)
    ("library", "Library", "library_books", "Upload documents, watch them build, manage archives."),
    ("tree", "Forest", "account_tree", "An archive's tree: click a node, replay the merges, overlay a query."),
    ("ask", "Ask", "question_answer", "The answer loop, one step at a time, with its citations."),
    ("compare", "Compare", "table_chart", "Papers side by side: each one's cited answer to each question."),
    ("research", "Research memory", "psychology",
     "A research session's briefing, notes, history, knowledge and conversation."),
    ("reconcile", "Reconcile", "balance", "Find and review conflicting passages; keep the conclusion as a finding."),
    ("memory", "Personal memory", "person", "A user's memories, knowledge graph and write queue."),
    ("server", "Server", "hub", "The agent endpoint: its URLs, tools, latest calls and client configurations."),
]
listed = [st.Page(f"workbench/{name}.py", title=title, icon=f":material/{icon}:", help=purpose)
          for name, title, icon, purpose in PAGES]
# "/" opens the Library at its own URL (/library), so every page, the first included, has one address.
home = st.Page(lambda: st.switch_page(listed[0]), title="Memory Forest", url_path="start", default=True,
               visibility="hidden")
page = st.navigation([home, *listed])
place.keep()  # the researcher's place (model_id, archive, node, ...) from the URL, or back into it

with st.spinner("Starting Memory Forest: opening the store and the agent endpoint…"):
    from forest import ForestError  # the engine's imports are the slow part of a first start
    from workbench.shared import SeparateEndpoint, page_failed, show_notices, start

    try:
        server = start()
    except ForestError as exc:  # another process owns the store: say so instead of a traceback
        st.title("Memory Forest")
        st.error(str(exc))
        st.stop()
with st.sidebar:
    if isinstance(server, str):
        st.caption(f"Agent endpoint not running: {server}")
    elif isinstance(server, SeparateEndpoint):
        st.caption(f"Agent endpoint: `forest serve` processes of their own ({server.url}/mcp)")
    else:
        st.caption(f"Agent endpoint running: {server.url}/mcp")
show_notices()
try:
    page.run()
except Exception as exc:  # a page's unexpected failure: one message here, the traceback in the log
    page_failed(page.title, exc)
