"""Server: the embedded MCP / REST / OpenAI endpoint, its tools, its latest calls, client configs."""
import inspect
import json
import sys
from pathlib import Path

import streamlit as st

from forest.server import ThreadServer
from forest.tools import ForestTools
from pages.shared import get_forest, get_server, page_header

forest = get_forest()
server = get_server(forest)
page_header("Server")
if not isinstance(server, ThreadServer):
    st.warning(f"The endpoint is not running: {server}")
    st.stop()

st.success(f"Running on {server.url}")
st.code(f"MCP (streamable HTTP)  {server.url}/mcp\nREST                   {server.url}/tools/<tool>\n"
        f"OpenAPI                {server.url}/openapi.json\nOpenAI-compatible      {server.url}/v1", language=None)

st.subheader("Tools")
st.dataframe([{"tool": name, "description": inspect.getdoc(getattr(ForestTools, name)).split("\n")[0]}
              for name in ForestTools.NAMES], hide_index=True)


@st.fragment(run_every=2.0)
def latest_calls() -> None:
    st.subheader("Latest calls")
    st.caption("Tool calls over MCP and REST, and OpenAI-compatible chats; a failed call says why.")
    calls = server.calls.latest()
    if calls:
        st.dataframe(calls[:50], hide_index=True)
    else:
        st.caption("No calls yet.")


latest_calls()

st.subheader("Client configuration")
forest_command = str(Path(sys.executable).parent / "forest")
stdio = {"mcpServers": {"memory-forest": {"command": forest_command, "args": ["serve", "--transport", "stdio"],
                                          "env": {"FOREST_DATA_DIR": str(Path(forest.settings.data_dir).resolve())}}}}
st.markdown("Claude Desktop (`claude_desktop_config.json`) or Cursor (`~/.cursor/mcp.json`), over stdio:")
st.code(json.dumps(stdio, indent=2), language="json")
st.caption("A stdio server is a process of its own, and one process owns an embedded store: it is refused while "
           "this workbench runs on the same data folder. Meanwhile connect over HTTP (below), or share the store "
           "through a `chroma run` server (settings chroma_host, chroma_port).")
st.markdown("Over HTTP, to this endpoint:")
st.code(json.dumps({"mcpServers": {"memory-forest": {"url": f"{server.url}/mcp"}}}, indent=2), language="json")
st.markdown("OpenAI clients:")
st.code(f'from openai import OpenAI\nclient = OpenAI(base_url="{server.url}/v1", api_key="unused on loopback")\n'
        'client.chat.completions.create(model="<model_id>", messages=[{"role": "user", "content": "..."}])',
        language="python")
