"""Serving the tools: one MCP server definition, over stdio or streamable HTTP, with REST and an
OpenAI-compatible chat endpoint next to MCP on the same HTTP app.

HTTP routes:  /mcp (MCP streamable HTTP)  ·  POST /tools/<name> (REST, JSON; GET for read-only tools)  ·  /openapi.json
              POST /v1/chat/completions, GET /v1/models (OpenAI-compatible)  ·  /health
              GET /calls (this process's latest calls, for the workbench's Server page)

Security: loopback by default. Any other bind address needs FOREST_API_TOKEN, and then every
route but /health requires `Authorization: Bearer <token>`. Request bodies over MAX_BODY_BYTES
are refused; a POST body must be declared application/json and nest at most MAX_JSON_DEPTH deep.
Errors are JSON with a message, never a traceback. With rate_limit set, calls over it get 429 with
Retry-After on every route but /health (forest.serving.rate_limit).
"""
from __future__ import annotations

import functools
import inspect
import ipaddress
import json
import logging
import secrets
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from forest.errors import ConfigError, ForestError
from forest.redaction import redact, secret_format
from forest.service import MemoryForest
from forest.serving.rate_limit import RateLimit
from forest.serving.mem0_routes import mem0_routes
from forest.serving.replies import error as _error
from forest.serving.replies import json_body as _json_body
from forest.serving.tools import ForestTools, Unavailable, UnknownId, translated
from forest.limits import MAX_BODY_BYTES

log = logging.getLogger("forest.serving.http")

INSTRUCTIONS = (
    "Memory Forest: long documents stored as trees (summaries above, original passages in the leaves). "
    "Call retrieve_memory first; explore_memory_node on a SUMMARY_NODE to go one level deeper; "
    "LEAF_CHUNK content is the source text, cite it with its 'citation' (page, section). "
    "ask_memory runs the whole loop and returns an answer with cited nodes; give it a session_id to work "
    "inside a research session (directives, briefing, remembered steps, conflict reconciliation). "
    "get_research_briefing shows the session's notes; search_episodic_memory finds earlier steps and "
    "folded notes; update_semantic_knowledge records a lasting conclusion. "
    "Personal memory (per user_id): call process_memory with each user message to get what is known "
    "about the user (and to remember what is private); memory adds, searches, updates, deletes and "
    "shows history; get_user_graph shows the user's knowledge graph.")


CHAT_ROUTE = "/v1/chat/completions"
# A failed tool call's HTTP status by its ToolError class; any other is the caller's input (400).
# 503: the database could not be reached; the same call may be sent again.
_STATUS = {UnknownId: 404, Unavailable: 503}


class CallLog:
    """The latest calls (tools over MCP or REST, and OpenAI-compatible chats) with their timings and,
    for a failed one, its message (shown on the workbench's Server page)."""

    def __init__(self, size: int = 200) -> None:
        self._calls: deque[dict[str, Any]] = deque(maxlen=size)
        self._lock = threading.Lock()

    def add(self, **call: Any) -> None:
        # GET /calls shows what callers sent: an id or message holding a secret is kept masked
        if isinstance(call.get("model_id"), str) and secret_format(call["model_id"]):
            call["model_id"] = "[SECRET]"
        if call.get("error"):
            call["error"] = redact(call["error"]).text
        with self._lock:
            self._calls.appendleft({"at": time.strftime("%H:%M:%S"), **call})

    @contextmanager
    def record(self, tool: str, model_id: str | None) -> Iterator[None]:
        start, error = time.perf_counter(), "interrupted"
        try:
            yield
            error = None
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            raise
        finally:
            self.add(tool=tool, model_id=model_id, ok=error is None, ms=round((time.perf_counter() - start) * 1000, 1),
                     error=error)

    def latest(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._calls)


class _ForestMCP(MCPServer):
    """Arguments that fail the input schema are reported in one line per field, as REST reports them
    ("top_k: Input should be a valid integer"), not as pydantic's multi-line dump."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                raise
            raise ToolError(f"Error executing tool {name}: {_tool_message(exc)}") from exc.__cause__


def build_mcp(forest: MemoryForest, calls: CallLog | None = None) -> MCPServer:
    """The one server definition: every tool of forest.serving.tools, with its schema and description."""
    # WARNING: at INFO the SDK logs two lines per MCP session into the host process (the workbench).
    server = _ForestMCP("memory-forest", instructions=INSTRUCTIONS, version="0.4", log_level="WARNING")
    tools = ForestTools(forest)
    for name in ForestTools.NAMES:
        server.add_tool(_timed(getattr(tools, name), name, calls) if calls else getattr(tools, name), name=name)
    return server


def _timed(fn, name: str, calls: CallLog):
    """The tool, recording each call's duration and outcome in `calls` (same signature for MCP)."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(*args, **kwargs):
            with calls.record(name, kwargs.get("model_id", kwargs.get("user_id"))):
                return await fn(*args, **kwargs)
        return run_async

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with calls.record(name, kwargs.get("model_id", kwargs.get("user_id"))):
            return fn(*args, **kwargs)
    return run


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


MIN_TOKEN_CHARS = 24
MIN_TOKEN_DISTINCT = 12
TOKEN_ADVICE = 'make one with `python -c "import secrets; print(secrets.token_urlsafe(32))"`'


def check_public_token(token: str | None, host: str) -> None:
    """A server bound off loopback answers anyone who can reach it and holds the token: the token
    must be one nobody guesses (long, and not a word or a repeated pattern)."""
    if not token:
        raise ConfigError(f"binding {host} (not loopback) needs an API token: set FOREST_API_TOKEN ({TOKEN_ADVICE})")
    if len(token) < MIN_TOKEN_CHARS or len(set(token)) < MIN_TOKEN_DISTINCT:
        raise ConfigError(f"binding {host} (not loopback) needs a strong API token: FOREST_API_TOKEN must have at "
                          f"least {MIN_TOKEN_CHARS} characters, {MIN_TOKEN_DISTINCT} of them different "
                          f"({TOKEN_ADVICE})")


def build_http_app(forest: MemoryForest, host: str = "127.0.0.1", token: str | None = None,
                   calls: CallLog | None = None) -> Any:
    """MCP, REST and OpenAI routes in one ASGI app, behind the token and size gate."""
    token = token or forest.settings.api_token
    if not is_loopback(host):
        check_public_token(token, host)
    calls = calls or CallLog()
    mcp = build_mcp(forest, calls)
    security = (TransportSecuritySettings(enable_dns_rebinding_protection=False) if not is_loopback(host)
                else None)
    # Stateless: a session kept in one process's memory is unknown to the others behind one port
    # (`forest serve --workers N`, a load balancer) and to the process that replaces a crashed one,
    # so a client's next request got "Session not found" and a retried write was done twice. Every
    # tool takes what it needs in its arguments; progress still streams in the request's reply.
    app: Starlette = mcp.streamable_http_app(host=host, transport_security=security, stateless_http=True,
                                             max_request_body_size=MAX_BODY_BYTES)
    rest = _Rest(mcp, forest, calls)
    app.router.routes.extend([
        Route("/health", lambda request: JSONResponse({"status": "ok"})),
        Route("/calls", lambda request: JSONResponse({"calls": calls.latest()})),
        Route("/openapi.json", rest.openapi),
        Route("/tools/{name}", rest.call, methods=["GET", "POST"]),
        Route("/v1/models", rest.models),
        Route(CHAT_ROUTE, rest.chat, methods=["POST"]),
        *mem0_routes(forest),
    ])
    app.state.calls = calls
    # The rate limit inside the gate: only calls the token check let in are counted.
    limited = RateLimit(app, forest.settings, token) if forest.settings.rate_limit else app
    return _Gate(limited, token, is_loopback(host))


class _Gate:
    """ASGI middleware in front of every route.

    - A token, when set, is required on every route but /health.
    - On a loopback bind without a token, the Host (and any Origin) must be loopback too, so a web
      page cannot reach the tools through DNS rebinding.
    - A browser request another site started is refused (Sec-Fetch-Site: cross-site): an <img> or a
      form on any page would otherwise reach the tools, and such requests may carry no Origin at all.
    - Bodies over MAX_BODY_BYTES are refused, whether they declare a length or arrive chunked.
    """

    def __init__(self, app, token: str | None, loopback: bool) -> None:
        self.app = app
        self.token = token
        self.loopback = loopback
        self.state = app.state

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.token and scope.get("path") != "/health":
            # mem0's clients send "Token <key>"; the same API token either way
            scheme, _, given = headers.get("authorization", "").partition(" ")
            if scheme not in ("Bearer", "Token") or not secrets.compare_digest(given.encode(), self.token.encode()):
                return await _error(401, "missing or wrong bearer token")(scope, receive, send)
        if _cross_site(headers):
            return await _error(403, "cross-site browser requests are refused")(scope, receive, send)
        if self.loopback and not self.token and not (
                _names_loopback(headers.get("host", ""))
                and _names_loopback(headers.get("origin", "").split("://")[-1] or "localhost")):
            return await _error(403, "only loopback hosts and origins may call this server")(scope, receive, send)
        length = headers.get("content-length")
        if length and length.isdigit() and int(length) > MAX_BODY_BYTES:
            return await _error(413, f"request body over {MAX_BODY_BYTES:,} bytes")(scope, receive, send)
        if length is None and scope.get("method") in ("POST", "PUT", "PATCH"):
            # Chunked: read it here, within the limit, then hand it on as one message.
            body, more = b"", True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                body += message.get("body", b"")
                more = message.get("more_body", False)
                if len(body) > MAX_BODY_BYTES:
                    return await _error(413, f"request body over {MAX_BODY_BYTES:,} bytes")(scope, receive, send)
            replayed = False

            async def replay():
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            return await self.app(scope, replay, send)
        return await self.app(scope, receive, send)


def _cross_site(headers: dict[str, str]) -> bool:
    """A request a web page on another site made. Browsers send Sec-Fetch-Site on every request (no
    Origin on a GET <img>, for instance); an Origin of "null" comes from sandboxed or file: pages.
    Clients that are not browsers (curl, SDKs, MCP clients) send neither header."""
    return headers.get("sec-fetch-site", "").lower() == "cross-site" or headers.get("origin", "") == "null"


def _names_loopback(netloc: str) -> bool:
    """Whether a Host or Origin names this machine: localhost or a loopback address (127.0.0.2 as
    well as 127.0.0.1), never a name that DNS could point here."""
    netloc = netloc.strip().lower()
    host = netloc[1:].split("]")[0] if netloc.startswith("[") else netloc.split(":")[0]
    return host == "localhost" or (bool(host) and is_loopback(host))


class _Rest:
    """REST parity for the MCP tools, and the OpenAI-compatible chat endpoint."""

    def __init__(self, mcp: MCPServer, forest: MemoryForest, calls: CallLog) -> None:
        self.mcp = mcp
        self.forest = forest
        self.calls = calls

    async def call(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in ForestTools.NAMES:
            return _error(404, f"no tool named {name!r}; see /openapi.json")
        # GET (and HEAD, which Starlette routes with it) only reads: a tool that writes or calls a
        # model runs on POST alone.
        if request.method != "POST" and name not in ForestTools.READ_ONLY:
            return _error(405, f"{name} has side effects (writes or model calls): call it with POST and a JSON body",
                          allow="POST")
        if request.method == "POST":
            args, problem = await _json_body(request)
            if problem:
                return problem
            if not isinstance(args, dict):
                return _error(400, "the body must be a JSON object of arguments")
        else:
            args = dict(request.query_params)
        try:
            result = await self.mcp.call_tool(name, args)
        except UnexpectedToolError as exc:
            log.error("tool %s crashed", name, exc_info=exc.__cause__)
            return _error(500, f"internal error in {name}")
        except ToolError as exc:
            return _error(_STATUS.get(type(exc.__cause__), 400), _tool_message(exc))
        return JSONResponse(result.structured_content)

    async def openapi(self, request: Request) -> Response:
        paths: dict[str, Any] = {}
        for tool in await self.mcp.list_tools():
            schema = tool.input_schema
            params = [{"name": key, "in": "query", "required": key in schema.get("required", []),
                       "description": prop.get("description", ""), "schema": prop}
                      for key, prop in schema.get("properties", {}).items()]
            responses = {"200": {"description": "the tool's result (JSON)"},
                         "400": {"description": "bad arguments"}, "404": {"description": "unknown id"},
                         "503": {"description": "the database could not be reached: send the call again"}}
            paths[f"/tools/{tool.name}"] = {
                "post": {"operationId": f"{tool.name}_post", "description": tool.description,
                         "requestBody": {"content": {"application/json": {"schema": schema}}},
                         "responses": responses}}
            if tool.name in ForestTools.READ_ONLY:
                paths[f"/tools/{tool.name}"]["get"] = {
                    "operationId": tool.name, "summary": (tool.description or "").split(".")[0],
                    "description": tool.description, "parameters": params, "responses": responses}
        return JSONResponse({"openapi": "3.1.0", "info": {"title": "Memory Forest tools", "version": "0.4"},
                             "paths": paths})

    async def models(self, request: Request) -> Response:
        ids = await anyio.to_thread.run_sync(self.forest.model_ids)
        return JSONResponse({"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "memory-forest"} for m in ids]})

    async def chat(self, request: Request) -> Response:
        body, problem = await _json_body(request)
        if problem:
            return problem
        model_id, question, problem = _chat_request(body)
        if problem:
            self.calls.add(tool=CHAT_ROUTE, model_id=model_id or None, ok=False, ms=0.0, error=problem)
            return _error(400, problem)
        try:
            with self.calls.record(CHAT_ROUTE, model_id):
                state = await anyio.to_thread.run_sync(self.forest.ask, model_id, question)
        except ForestError as exc:
            return _error(_STATUS.get(type(translated(exc)), 400), str(exc))
        created = int(time.time())
        reply_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        extra = {"cited_nodes": [c.to_dict() for c in state.cited], "answered_by": state.answered_by,
                 "trace": [s.to_dict() for s in state.steps]}
        if body.get("stream"):
            return StreamingResponse(_stream(reply_id, created, model_id, state.answer, extra),
                                     media_type="text/event-stream")
        return JSONResponse({
            "id": reply_id, "object": "chat.completion", "created": created, "model": model_id,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": state.answer},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            "memory_forest": extra})


def _chat_request(body: Any) -> tuple[str, str, str | None]:
    if not isinstance(body, dict):
        return "", "", "the body must be a JSON object"
    model_id = body.get("model")
    if not isinstance(model_id, str) or not model_id.strip():
        return "", "", "'model' must name the model_id whose memory answers"
    messages = body.get("messages")
    if not isinstance(messages, list):
        return model_id, "", "'messages' must be a list"
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return model_id, "", "no user message to answer"
    content = users[-1].get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if not all(isinstance(t, str) for t in texts):
            return model_id, "", "text content parts need a string 'text'"
        content = " ".join(texts)
    if not isinstance(content, str) or not content.strip():
        return model_id, "", "the last user message has no text"
    return model_id, content, None


async def _stream(reply_id: str, created: int, model_id: str, answer: str, extra: dict):
    def chunk(delta: dict, finish: str | None = None, **more: Any) -> str:
        payload = {"id": reply_id, "object": "chat.completion.chunk", "created": created, "model": model_id,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **more}
        return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for line in answer.splitlines(keepends=True):
        yield chunk({"content": line})
    yield chunk({}, "stop", memory_forest=extra)
    yield "data: [DONE]\n\n"


def _tool_message(error: ToolError) -> str:
    """The cause in one line: our own message, or which arguments failed validation and why."""
    cause = error.__cause__
    if isinstance(cause, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in cause.errors())
    return str(cause) if isinstance(cause, ToolError) else str(error)


class ThreadServer:
    """The HTTP app served by uvicorn from a background thread (the workbench embeds one)."""

    def __init__(self, forest: MemoryForest, host: str = "127.0.0.1", port: int = 8765,
                 token: str | None = None) -> None:
        import uvicorn

        self.calls = CallLog()
        self.forest = forest
        app = build_http_app(forest, host, token, self.calls)
        self.host, self.port = host, port
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                                    lifespan="on", timeout_graceful_shutdown=3))
        self.thread = threading.Thread(target=self.server.run, name="forest-http", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, wait_seconds: float = 20.0) -> "ThreadServer":
        self.forest.resume_pending_writes()
        self.thread.start()
        deadline = time.monotonic() + wait_seconds
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise ForestError(f"the HTTP server could not start on {self.url} (port in use?)")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve_stdio(forest: MemoryForest) -> None:
    forest.resume_pending_writes()
    build_mcp(forest).run("stdio")


def serve_http(forest: MemoryForest, host: str, port: int, token: str | None = None) -> None:
    import uvicorn

    forest.resume_pending_writes()
    uvicorn.run(build_http_app(forest, host, token), host=host, port=port, log_level="info")


def serve_http_workers(host: str, port: int, workers: int) -> None:
    """`workers` processes on one port (uvicorn's supervisor), each with an engine of its own
    (worker_app), sharing a server store; settings reach them through the environment."""
    import uvicorn

    uvicorn.run("forest.serving.http:worker_app", factory=True, host=host, port=port, workers=workers,
                log_level="info")


def worker_app() -> Any:
    """One uvicorn worker's app: an engine on the settings of the environment."""
    forest = MemoryForest()
    forest.own_store()
    forest.resume_pending_writes()
    return build_http_app(forest, forest.settings.server_host)
