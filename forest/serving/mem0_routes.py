"""mem0's HTTP routes on the server (docs/mem0.md): its platform API as MemoryClient 2.2 calls it
(/v1, /v3) and its open-source server's routes (/memories, /search, /reset), thin over
forest.compat.mem0's Mem0Api, the memory tool's engine calls. Errors are mem0's {"error": ...}
with a 4xx; `Authorization: Token <key>` is accepted by the server's gate beside Bearer."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from forest.compat.mem0.api import Mem0Api
from forest.errors import ForestError, NotFound, ServiceUnavailable
from forest.serving.replies import error, json_body
from forest.service import MemoryForest


def mem0_routes(forest: MemoryForest) -> list[Route]:
    routes = _Mem0Routes(Mem0Api(forest))
    platform = [
        ("/v1/ping/", routes.ping, ["GET"]),
        ("/v3/memories/add/", routes.add, ["POST"]),
        ("/v3/memories/search/", routes.search, ["POST"]),
        ("/v3/memories/", routes.get_all, ["POST"]),
        ("/v1/memories/", routes.delete_all, ["DELETE"]),
        ("/v1/memories/{memory_id}/history/", routes.history, ["GET"]),
        ("/v1/memories/{memory_id}/", routes.memory, ["GET", "PUT", "DELETE"]),
        ("/v1/batch/", routes.batch, ["PUT", "DELETE"]),
        ("/v1/entities/", routes.entities, ["GET"]),
        ("/v2/entities/{entity_type}/{entity_id}/", routes.delete_entity, ["DELETE"]),
        ("/v1/event/{event_id}/", routes.event, ["GET"]),
    ]
    open_source = [
        ("/memories", routes.oss_memories, ["GET", "POST"]),
        ("/memories", routes.delete_all, ["DELETE"]),
        ("/memories/{memory_id}/history", routes.history, ["GET"]),
        ("/memories/{memory_id}", routes.memory, ["GET", "PUT", "DELETE"]),
        ("/search", routes.oss_search, ["POST"]),
        ("/reset", routes.reset, ["POST"]),
    ]
    return [Route(path, handler, methods=methods) for path, handler, methods in platform + open_source]


class _Mem0Routes:
    def __init__(self, api: Mem0Api) -> None:
        self.api = api

    async def _run(self, call: Callable[[], Any]) -> Response:
        """The engine call on a worker thread; its ForestError as mem0's error reply."""
        try:
            result = await anyio.to_thread.run_sync(call)
        except NotFound as exc:
            return error(404, str(exc))
        except ServiceUnavailable as exc:
            return error(503, str(exc))
        except ForestError as exc:
            return error(400, str(exc))
        return JSONResponse(result)

    async def ping(self, request: Request) -> Response:
        # MemoryClient needs an org and a project; one server is one of each (docs/mem0.md).
        return JSONResponse({"status": "ok", "org_id": ORG_ID, "project_id": PROJECT_ID})

    # --- the platform API (MemoryClient) ----------------------------------------------------
    async def add(self, request: Request) -> Response:
        body, problem = await _object_body(request)
        if problem:
            return problem
        return await self._run(lambda: self.api.add(
            body.get("messages"), user_id=body.get("user_id"), agent_id=body.get("agent_id"),
            run_id=body.get("run_id"), metadata=body.get("metadata"), infer=body.get("infer", True) is not False,
            timestamp=body.get("timestamp")))

    async def search(self, request: Request) -> Response:
        body, problem = await _object_body(request)
        if problem:
            return problem
        return await self._run(lambda: {"results": self.api.search(
            body.get("query"), body.get("filters"), body.get("top_k", 10), body.get("threshold"))})

    async def get_all(self, request: Request) -> Response:
        body, problem = await _object_body(request)
        if problem:
            return problem
        page, size = (_int(request.query_params.get(k, body.get(k, default))) for k, default in
                      (("page", 1), ("page_size", 100)))

        def link(number: int) -> str:
            query = urlencode({"page": number, "page_size": size})
            return f"{request.url.remove_query_params(['page', 'page_size'])}?{query}"

        def listed() -> dict[str, Any]:
            count, results = self.api.get_all(body.get("filters"), page, size)
            return {"count": count, "next": link(page + 1) if page * size < count else None,
                    "previous": link(page - 1) if page > 1 else None, "results": results}
        return await self._run(listed)

    async def memory(self, request: Request) -> Response:
        ref = request.path_params["memory_id"]
        if request.method == "GET":
            return await self._run(lambda: self.api.get(ref))
        if request.method == "DELETE":
            return await self._run(lambda: self.api.delete(ref) or {"message": "Memory deleted successfully!"})
        body, problem = await _object_body(request)
        if problem:
            return problem
        return await self._run(lambda: self.api.update(ref, body.get("text"), body.get("metadata")))

    async def history(self, request: Request) -> Response:
        return await self._run(lambda: self.api.history(request.path_params["memory_id"]))

    async def delete_all(self, request: Request) -> Response:
        scope = _scope(request)
        return await self._run(lambda: {"message": f"{self.api.delete_all(**scope)} memories deleted"})

    async def batch(self, request: Request) -> Response:
        body, problem = await _object_body(request)
        if problem:
            return problem
        action = "update" if request.method == "PUT" else "delete"
        return await self._run(lambda: {
            "message": f"Successfully {action}d {self.api.batch(action, body.get('memories'))} memories"})

    async def entities(self, request: Request) -> Response:
        user_id = request.query_params.get("user_id")

        def listed() -> dict[str, Any]:
            found = self.api.entities(user_id)
            totals = {f"total_{kind}s": sum(e["type"] == kind for e in found) for kind in ("user", "agent", "run")}
            return {"count": len(found), "next": None, "previous": None, "results": found, **totals,
                    "total_apps": 0}
        return await self._run(listed)

    async def delete_entity(self, request: Request) -> Response:
        kind, name = request.path_params["entity_type"], request.path_params["entity_id"]
        user_id = request.query_params.get("user_id")
        return await self._run(lambda: {
            "message": f"Entity deleted successfully ({self.api.delete_entity(kind, name, user_id)} memories)"})

    async def event(self, request: Request) -> Response:
        return await self._run(lambda: self.api.event(request.path_params["event_id"]))

    # --- mem0's open-source server ----------------------------------------------------------
    async def oss_memories(self, request: Request) -> Response:
        if request.method == "GET":
            filters = {k: v for k, v in _scope(request).items() if v is not None}
            return await self._run(lambda: {"results": self.api.get_all(filters, 1, 200)[1]})
        body, problem = await _object_body(request)
        if problem:
            return problem
        # The open-source server answers when the memories are written (its Memory.add is synchronous).
        return await self._run(lambda: {"results": self.api.add(
            body.get("messages"), user_id=body.get("user_id"), agent_id=body.get("agent_id"),
            run_id=body.get("run_id"), metadata=body.get("metadata"), infer=body.get("infer") is not False,
            wait_seconds=OSS_ADD_WAIT_SECONDS)["results"]})

    async def oss_search(self, request: Request) -> Response:
        body, problem = await _object_body(request)
        if problem:
            return problem
        entities = {k: body[k] for k in ("user_id", "agent_id", "run_id") if body.get(k) is not None}
        filters = {**(body.get("filters") or {}), **entities} if isinstance(body.get("filters") or {}, dict) \
            else body.get("filters")
        return await self._run(lambda: {"results": self.api.search(body.get("query"), filters,
                                                                   body.get("top_k") or 10)})

    async def reset(self, request: Request) -> Response:
        """Scoped, unlike mem0's (which empties the whole store): one user's memories, named by
        ?user_id= or the JSON body; on a server many users share, a reset of all is refused."""
        user_id = request.query_params.get("user_id")
        if user_id is None and request.headers.get("content-length", "0") != "0":
            body, problem = await _object_body(request)
            if problem:
                return problem
            user_id = body.get("user_id")
        if not user_id:
            return error(400, "reset erases one user's memories here: name the user (POST /reset?user_id=...); "
                              "a reset of every user's memories is refused on a shared server")
        return await self._run(lambda: {"message": f"Memories of {user_id} reset "
                                                   f"({self.api.delete_all(user_id)} erased)"})


ORG_ID, PROJECT_ID = "memory-forest", "personal-memory"
# The open-source server's add answers once written; the write queue usually takes well under this.
OSS_ADD_WAIT_SECONDS = 120.0


async def _object_body(request: Request) -> tuple[dict[str, Any], Response | None]:
    body, problem = await json_body(request)
    if problem is None and not isinstance(body, dict):
        problem = error(400, "the body must be a JSON object")
    return body, problem


def _scope(request: Request) -> dict[str, str | None]:
    return {k: request.query_params.get(k) for k in ("user_id", "agent_id", "run_id")}


def _int(value: Any) -> Any:
    """A page number from a query string (text) or a body (a number); anything else as it came,
    for Mem0Api to refuse."""
    return int(value) if isinstance(value, str) and value.isdigit() else value
