"""Memory Forest workbench (Streamlit). Pages arrive with the workbench issue; this page shows the
forests in the default store and the embedded MCP / REST / OpenAI endpoint, through the same
engine the CLI uses."""
import atexit

import streamlit as st

from forest import ForestError, MemoryForest
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


st.set_page_config(page_title="Memory Forest", layout="wide")
st.title("Memory Forest")
forest = get_forest()
server = get_server(forest)
with st.sidebar:
    st.subheader("Agent endpoint")
    if isinstance(server, ThreadServer):
        st.success("running")
        st.code(f"MCP     {server.url}/mcp\nREST    {server.url}/tools/<tool>  ({server.url}/openapi.json)\n"
                f"OpenAI  {server.url}/v1", language=None)
    else:
        st.warning(f"MCP server not running: {server}")
model_ids = forest.model_ids()
if not model_ids:
    st.info("No archives yet. Ingest a document with `forest ingest PATH --model-id M`.")
else:
    model_id = st.selectbox("model_id", model_ids)
    st.dataframe([a.to_dict() for a in forest.archives(model_id)], hide_index=True)
