"""Replies every HTTP route shares: the JSON error, and the JSON body or the error to send instead."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from forest.errors import InvalidInput
from forest.validation import parse_json


async def json_body(request: Request) -> tuple[Any, Response | None]:
    """The request's JSON body, or the error response to send instead. The body must be declared
    application/json: a browser sends that from another page only after a CORS preflight, which
    this server never grants, while a text/plain or form post needs none."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        return None, error(415, "send the body as JSON, with Content-Type: application/json")
    try:
        return parse_json(await request.body(), "the body"), None
    except InvalidInput as exc:
        return None, error(400, str(exc))


def error(status: int, message: str, allow: str | None = None) -> JSONResponse:
    """The JSON error reply; `allow` lists the methods a 405 names (HEAD gets no body to read)."""
    return JSONResponse({"error": message}, status_code=status, headers={"Allow": allow} if allow else None)


