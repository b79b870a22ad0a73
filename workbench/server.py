"""Server: the embedded MCP / REST / OpenAI endpoint, its tools, its latest calls, client configs."""
import inspect
import json
import sys
import urllib.request
from pathlib import Path

import streamlit as st

from forest.text import counted
from forest.serving.tools import ForestTools
from workbench.shared import SeparateEndpoint, get_forest, get_server, page_header

forest = get_forest()
server = get_server(forest)
page_header("Server")
if isinstance(server, str):
    st.warning(f"The endpoint is not running: {server}")
    st.stop()


def separate_endpoint_calls(endpoint: SeparateEndpoint) -> list[dict] | None:
    """The latest calls of the `forest serve` process answering at the endpoint's URL; None if none answers."""
    headers = {"Authorization": f"Bearer {endpoint.token}"} if endpoint.token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{endpoint.url}/calls", headers=headers),
                                    timeout=1.0) as reply:
            return json.loads(reply.read())["calls"]
    except (OSError, ValueError, KeyError):
        return None


if isinstance(server, SeparateEndpoint):
    st.info("This store lives on a database server, so the agents' endpoint is not part of the workbench: agents "
            "call `forest serve` processes of their own, any number of them on any host, and their load never "
            "slows these pages. Start them beside the workbench with the same settings (docs/server-stack.md):")
    st.code(f"forest serve --transport http --port {server.url.rsplit(':', 1)[1]} --workers 2   # or one process per "
            "host behind a load balancer\nforest personal worker   # more writers of personal memory, if needed",
            language="bash")
else:
    st.success(f"Running on {server.url}")
st.code(f"MCP (streamable HTTP)  {server.url}/mcp\nREST                   {server.url}/tools/<tool>\n"
        f"OpenAPI                {server.url}/openapi.json\nOpenAI-compatible      {server.url}/v1\n"
        f"mem0 (platform API)    {server.url}/v1/memories/, /v3/memories/ …   (docs/mem0.md)", language=None)

st.subheader("Models")
st.caption("What every face of this store uses: summaries, the agent's steps, reconciliation, personal memory; "
           "`forest models --check` sends each one request.")
st.dataframe([{"part": part, **{k: v for k, v in described.items() if k != "note"}}
              for part, described in forest.models_in_use().items()], hide_index=True)

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
    if isinstance(server, SeparateEndpoint):
        calls = separate_endpoint_calls(server)
        if calls is None:
            st.warning(f"No `forest serve` process answers at {server.url}: start one as above.")
            return
        st.caption(f"Those of the process answering at {server.url}.")
    else:
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
    queue = state.queue
    running, pending, done, failed = st.columns(4)
    if isinstance(server, SeparateEndpoint):  # the serve processes and workers write; this one only reads
        running.metric("workers", "elsewhere")
    else:
        # The worker starts with the first write of this process; pending items without it are a fault.
        running.metric("worker", "running" if state.running else "idle" if not queue.pending else "not running")
    pending.metric("queued", queue.pending)
    done.metric("written", queue.done)
    failed.metric("failed", queue.failed)
    if state.last_error:
        st.warning(f"{counted(state.failures, 'failure')} since start (each retried later); the latest: "
                   f"{state.last_error}")


personal_writer()

st.subheader("Client configuration")
st.markdown("Over HTTP, to this endpoint (Claude Desktop, Cursor and other MCP clients):")
st.code(json.dumps({"mcpServers": {"memory-forest": {"url": f"{server.url}/mcp"}}}, indent=2), language="json")
st.markdown("OpenAI clients:")
st.code(f'from openai import OpenAI\nclient = OpenAI(base_url="{server.url}/v1", api_key="unused on loopback")\n'
        'client.chat.completions.create(model="<model_id>", messages=[{"role": "user", "content": "..."}])',
        language="python")
st.markdown("Programs written for mem0 (its `MemoryClient`, or `forest.compat.mem0.Memory` in place of `mem0.Memory`):")
st.code(f'from mem0 import MemoryClient\nclient = MemoryClient(host="{server.url}", api_key="unused on loopback")\n'
        'client.add([{"role": "user", "content": "..."}], user_id="ann")\n'
        'client.search("...", filters={"user_id": "ann"})', language="python")
settings = forest.settings
environment = {"FOREST_DATA_DIR": str(Path(settings.data_dir).resolve())}
if isinstance(server, SeparateEndpoint):
    st.markdown("Over stdio, a client starts Memory Forest itself; on this server store any number of them run "
                "beside the workbench (put the database password where the URL shows ***):")
    environment |= {"FOREST_DATABASE_URL": settings.describe()["database_url"],
                    "FOREST_VECTOR_STORE": settings.vector_store,
                    **({"FOREST_QDRANT_URL": settings.qdrant_url} if settings.qdrant_url else {})}
else:
    st.markdown("Over stdio, **only while this workbench is not running**: a stdio server is a process of its own, "
                "and one process owns an embedded store, so it is refused while the workbench has this data folder "
                "open. Use it for a client that starts Memory Forest itself when the workbench is closed, or share "
                "the store through a `chroma run` server (settings chroma_host, chroma_port) or a database server "
                "(docs/server-stack.md).")
forest_command = str(Path(sys.executable).parent / "forest")
stdio = {"mcpServers": {"memory-forest": {"command": forest_command, "args": ["serve", "--transport", "stdio"],
                                          "env": environment}}}
st.code(json.dumps(stdio, indent=2), language="json")
