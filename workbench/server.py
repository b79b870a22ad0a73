"""Server: the embedded MCP / REST / OpenAI endpoint, its tools, its latest calls, client configs."""
import inspect
import json
import sys
from pathlib import Path

import streamlit as st

from forest.serving.http import ThreadServer
from forest.text import counted
from forest.serving.tools import ForestTools
from workbench.shared import get_forest, get_server, page_header

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
st.caption("What an agent connected to the endpoint can call, as its client describes them to the model.")


def described(tool: str) -> str:
    """The tool's description whole: its docstring's first paragraph, unwrapped."""
    return " ".join(inspect.getdoc(getattr(ForestTools, tool)).split("\n\n")[0].split())


st.markdown("\n".join(f"- **`{name}`** — {described(name)}" for name in ForestTools.NAMES))


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


@st.fragment(run_every=5.0)
def personal_writer() -> None:
    st.subheader("Personal memory writer")
    state = forest.personal.worker_state()
    queue = state["queue"]
    running, pending, done, failed = st.columns(4)
    # The worker starts with the first write of this process; pending items without it are a fault.
    running.metric("worker", "running" if state["running"] else "idle" if not queue["pending"] else "not running")
    pending.metric("queued", queue["pending"])
    done.metric("written", queue["done"])
    failed.metric("failed", queue["failed"])
    if state["last_error"]:
        st.warning(f"{counted(state['failures'], 'failure')} since start (each retried later); the latest: "
                   f"{state['last_error']}")


personal_writer()

st.subheader("Client configuration")
st.markdown("Over HTTP, to this endpoint (Claude Desktop, Cursor and other MCP clients):")
st.code(json.dumps({"mcpServers": {"memory-forest": {"url": f"{server.url}/mcp"}}}, indent=2), language="json")
st.markdown("OpenAI clients:")
st.code(f'from openai import OpenAI\nclient = OpenAI(base_url="{server.url}/v1", api_key="unused on loopback")\n'
        'client.chat.completions.create(model="<model_id>", messages=[{"role": "user", "content": "..."}])',
        language="python")
st.markdown("Over stdio, **only while this workbench is not running**: a stdio server is a process of its own, "
            "and one process owns an embedded store, so it is refused while the workbench has this data folder "
            "open. Use it for a client that starts Memory Forest itself when the workbench is closed, or share "
            "the store through a `chroma run` server (settings chroma_host, chroma_port).")
forest_command = str(Path(sys.executable).parent / "forest")
stdio = {"mcpServers": {"memory-forest": {"command": forest_command, "args": ["serve", "--transport", "stdio"],
                                          "env": {"FOREST_DATA_DIR": str(Path(forest.settings.data_dir).resolve())}}}}
st.code(json.dumps(stdio, indent=2), language="json")
