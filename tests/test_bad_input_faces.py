"""Bad input on every face: the CLI (a `forest` subprocess), MCP (the SDK's client over streamable
HTTP), REST (/tools/...), the OpenAI-compatible /v1/chat/completions and the workbench (the Library
page under Streamlit's AppTest, and the ingest queue it hands uploads to), each given every class of
bad input it can take.

Every cell asserts one clear line (exit code, HTTP status, MCP is_error or the page's message; no
traceback, no pydantic dump, no "internal error") and that nothing was written: every table of the
store's SQLite and the vectors of its embedded Chroma hold as many rows after the call as before.
With FOREST_BAD_INPUT_TABLE=<file> the messages seen are written to that file as JSON;
bench/bad_input_table.py runs this file that way and prints the table in docs/security.md.
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import streamlit as st
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from streamlit.testing.v1 import AppTest

from conftest import ROOT, shown
from testkit.processes import forest_env, free_port
from testkit.topics import topic_text
from testkit.workbench import use_model_id
from forest import MemoryForest, NotFound
from forest.tree.archive_io import FORMAT, MAX_IMPORT_NODES, VERSION
from forest.serving.jobs import IngestQueue
from forest.serving.http import MAX_BODY_BYTES, ThreadServer

FOREST = str(Path(sys.executable).parent / "forest")
FACES = ("CLI", "MCP", "REST", "OpenAI", "workbench")
LIMIT = 20_000  # max_document_chars on every face
MISSING = 999_999
BEYOND = 2**63  # one past SQLite's INTEGER range
OTHER_TENANT, NONEXISTENT = "another tenant's id", "nonexistent id"
BOB_WORDS = ("bob", "plants", "chlorophyll", "photosynthesis")  # what an isolation error must not show
OBSERVED: dict[str, dict[str, dict[str, str]]] = {}

Ids = dict[str, int]
Args = dict[str, Any] | Callable[[Ids], dict[str, Any]]


@dataclass(frozen=True)
class Seen:
    how: str      # "exit 1", "HTTP 400", "is_error", "st.error", ...
    message: str


@dataclass
class Face:
    """What a cell needs: the face's store, its ids (alice's and bob's) and its way in."""
    data_dir: Path
    ids: Ids
    files: dict[str, Path]
    url: str = ""
    forest: MemoryForest | None = None
    app: AppTest | None = None


def _resolve(args: Args, ids: Ids) -> dict[str, Any]:
    return args(ids) if callable(args) else args


# --- the cells, one kind per way in ------------------------------------------------------------

@dataclass(frozen=True)
class Cli:
    argv: tuple[str, ...]  # {name} placeholders: ids and file paths
    expect: str

    def run(self, face: Face) -> Seen:
        argv = [a.format(**face.ids, **face.files) for a in self.argv]
        done = subprocess.run([FOREST, *argv], capture_output=True, text=True, timeout=300,
                              env=forest_env(face.data_dir, FOREST_MAX_DOCUMENT_CHARS=str(LIMIT)))
        assert done.returncode in (1, 2) and not done.stdout, (done.returncode, done.stdout)
        return Seen(f"exit {done.returncode}", done.stderr.strip().removeprefix("forest: "))


@dataclass(frozen=True)
class Mcp:
    tool: str
    args: Args
    expect: str

    def run(self, face: Face) -> Seen:
        async def call():
            client = create_mcp_http_client()
            async with client, streamable_http_client(face.url + "/mcp", http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await session.call_tool(self.tool, _resolve(self.args, face.ids))

        result = asyncio.run(call())
        assert result.is_error and len(result.content) == 1
        prefix = f"Error executing tool {self.tool}: "
        assert result.content[0].text.startswith(prefix), result.content[0].text
        return Seen("is_error", result.content[0].text.removeprefix(prefix))


@dataclass(frozen=True)
class Http:
    """A raw request: REST tools, the OpenAI endpoint, or the MCP endpoint given bytes no client sends."""
    path: str
    expect: str
    status: int = 400
    json: Args | None = None
    content: bytes | None = None
    params: dict[str, str] | None = None
    method: str = "GET"  # with params; HEAD's reply has no body: the cell shows its Allow header
    content_type: str = "application/json"

    def run(self, face: Face) -> Seen:
        headers = {"content-type": self.content_type, "accept": "application/json, text/event-stream"}
        with httpx.Client(base_url=face.url, timeout=120) as http:
            if self.method == "HEAD":
                reply = http.head(self.path, params=self.params)
                assert reply.status_code == self.status and not reply.content, reply
                return Seen(f"HTTP {reply.status_code}", f"no body (HEAD); Allow: {reply.headers['allow']}")
            if self.params is not None:
                reply = http.get(self.path, params=self.params)
            elif self.json is not None:
                reply = http.post(self.path, json=_resolve(self.json, face.ids))
            else:
                reply = http.post(self.path, content=self.content, headers=headers)
        assert reply.status_code == self.status, reply.text
        error = reply.json()["error"]
        return Seen(f"HTTP {reply.status_code}", error if isinstance(error, str) else error["message"])


def _pick_model_id(app: AppTest, value: str) -> None:
    """Pick an existing model_id in the sidebar; the choice must hold on the first try."""
    use_model_id(app, value)
    assert app.sidebar.selectbox(key="model_id_pick").value == value


def _uploader(app: AppTest, label: str):
    return next(f for f in app.file_uploader if f.label == label)


def _click(app: AppTest, label: str) -> AppTest:
    return next(b for b in app.button if b.label == label).click().run()


@dataclass(frozen=True)
class _PageFile:
    name: str
    content: bytes
    expect: str


class Upload(_PageFile):
    """A file given to the Library page's uploader, built by the ingest queue in the background."""

    def run(self, face: Face) -> Seen:
        app = face.app
        uploader = _uploader(app, "Documents (PDF, text, Markdown)")
        uploader.set_value([(self.name, self.content, "application/octet-stream")])
        _click(app, "Ingest")
        label = f"{self.name}: "  # the Library names a job by its file
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert not app.exception   # no traceback on the page
            errors = [shown(e.value) for e in app.error if shown(e.value).startswith(label)]
            if errors:
                assert "forest-upload-" not in errors[0]  # names the file, not the server's copy of it
                return Seen("st.error", errors[0].removeprefix(label))
            time.sleep(0.2)
            app.run()
        raise AssertionError(f"the Library page never showed why {self.name} failed")


@dataclass(frozen=True)
class TypedModelId:
    """A new model_id named in the Library page's sidebar."""
    value: str
    expect: str

    def run(self, face: Face) -> Seen:
        app = face.app
        use_model_id(app, self.value)
        assert not app.exception
        errors = [shown(e.value) for e in app.sidebar.error]
        assert len(errors) == 1 and not app.file_uploader, errors  # refused: no upload, no import
        _pick_model_id(app, "alice")
        return Seen("st.error", errors[0])


class ImportFile(_PageFile):
    """A file given to the Library page's "Import an exported archive"."""

    def run(self, face: Face) -> Seen:
        app = face.app
        _uploader(app, "Import an exported archive").set_value([(self.name, self.content, "application/json")])
        _click(app.run(), "Import")
        label = f"{self.name}: "  # imported in the background: the job names its file
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert not app.exception
            errors = [shown(e.value) for e in app.error if shown(e.value).startswith(label)]
            if errors:
                break
            time.sleep(0.2)
            app.run()
        _uploader(app, "Import an exported archive").set_value([])
        app.run()
        assert len(errors) == 1, [e.value for e in app.error]
        return Seen("st.error", errors[0].removeprefix(label))


@dataclass(frozen=True)
class QueuedAppend:
    """An append the page's archive picker cannot offer, given to its ingest queue directly."""
    archive_id: Callable[[Ids], int]
    expect: str

    def run(self, face: Face) -> Seen:
        queue = IngestQueue(face.forest)
        try:
            job = queue.submit(face.files["good"], "alice", append_to=self.archive_id(face.ids))
            deadline = time.monotonic() + 60
            while queue.busy() and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            queue.shutdown()
        assert job.status == "failed" and job.archive_id is None, job
        return Seen("job failed", job.error)


Cell = Cli | Mcp | Http | Upload | TypedModelId | ImportFile | QueuedAppend


def _add(model_id: str = "alice", text: str = "Bebop is fast jazz.") -> dict[str, str]:
    return {"model_id": model_id, "name": "notes", "text": text}


def _chat(content: Any, model: Any = "alice") -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": content}]}


def _export(nodes: list[dict[str, Any]], fmt: str = FORMAT) -> bytes:
    return json.dumps({"format": fmt, "version": VERSION, "archive": {"name": "imported"}, "nodes": nodes}).encode()


def _bad_model_id(value: str, engine: str, **overrides: Cell) -> dict[str, Cell]:
    """One model_id on every face: the CLI's --model-id and add_document's (both a write), the OpenAI
    endpoint's model, the Library page's sidebar."""
    return {"CLI": Cli(("ingest", "{good}", "--model-id", value), engine),
            "MCP": Mcp("add_document", _add(value), engine),
            "REST": Http("/tools/add_document", engine, json=_add(value)),
            "OpenAI": Http("/v1/chat/completions", engine, json=_chat("Who played bebop?", value)),
            "workbench": TypedModelId(value, engine), **overrides}


def _unknown_ids(archive: str | int, node: str | int) -> dict[str, Cell]:
    """Calls naming ids alice does not own (a key of the face's ids, or a number): deleting an archive
    (CLI), reading a node (MCP), an archive's tree (REST), appending to an archive (workbench)."""
    def pick(ids: Ids, value: str | int) -> int:
        return ids[value] if isinstance(value, str) else value

    expect = "not found for model_id 'alice'"
    return {
        "CLI": Cli(("delete", f"{{{archive}}}" if isinstance(archive, str) else str(archive), "--model-id", "alice"),
                   expect),
        "MCP": Mcp("get_memory_node", lambda ids: {"model_id": "alice", "node_id": pick(ids, node)}, expect),
        "REST": Http("/tools/get_archive_tree", expect, 404,
                     json=lambda ids: {"model_id": "alice", "archive_id": pick(ids, archive)}),
        "workbench": QueuedAppend(lambda ids: pick(ids, archive), expect),
    }


BLANK = b"  \n\t \n"
HUGE_BODY = json.dumps(_add(text="x" * MAX_BODY_BYTES)).encode()
BIG = ("word " * (LIMIT // 5 + 100)).encode()
CORRUPT_PDF = random.Random(14).randbytes(4096)
NOT_JSON = b"{this is not json"
WRONG_FORMAT = _export([{"ref": 1, "node_type": "LEAF_CHUNK"}], fmt="some-other-tool")
TOO_MANY = _export([{"ref": i} for i in range(MAX_IMPORT_NODES + 1)])
NESTED = b"[" * 1000 + b"]" * 1000
_LEAF = {"ref": 1, "parent_ref": None, "node_type": "LEAF_CHUNK", "summary": "s", "summary_source": "test",
         "leaf_index": 0, "first_leaf": 0, "last_leaf": 0}
LONG_EXPORT = _export([{**_LEAF, "content": "word " * (LIMIT // 5 + 1)}])
CRAFTED = json.dumps({**json.loads(_export([{**_LEAF, "content": "Bebop is fast jazz."}])),
                      "archive": {"name": "crafted", "settings": {"documents": ["x"]}}}).encode()
LONG_QUERY = "q" * 4001
TOO_LONG_ID = "x" * 201
CONTROL_ID = "bad\tid"
HUGE_INT = b"9" * 5000   # past the interpreter's own limit of 4,300 digits
HUGE_INT_EXPORT = _export([{**_LEAF, "content": "Bebop is fast jazz."}]).replace(b'"leaf_index": 0', b'"leaf_index": ' + HUGE_INT)
SURROGATE_EXPORT = _export([{**_LEAF, "content": "Bebop is fast jazz."}]).replace(b"fast jazz", b"fast \\ud800 jazz")
LONE_SURROGATE = "x\udcff"   # a byte that is not UTF-8 in argv, as Python reads it
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"   # a 40-character AWS secret access key
KEY_AS_NAME = "sk_proj_Zq8mW2xR7tY4uI9oP3aS6dF1gH5jK0lL"   # an identifier that is a key

# Rows: input classes; columns: faces. A face without a way to give that input has no cell.
CELLS: dict[str, dict[str, Cell]] = {
    "empty / whitespace document": {
        "CLI": Cli(("ingest", "{blank}", "--model-id", "alice"), "the file is empty"),
        "MCP": Mcp("add_document", _add(text=BLANK.decode()), "is empty"),
        "REST": Http("/tools/add_document", "is empty", json=_add(text=BLANK.decode())),
        "OpenAI": Http("/v1/chat/completions", "has no text", json=_chat(BLANK.decode())),
        "workbench": Upload("blank.txt", BLANK, "the file is empty"),
    },
    "unsupported file type (.docx)": {
        "CLI": Cli(("ingest", "{docx}", "--model-id", "alice"), "unsupported file type .docx"),
        "workbench": Upload("notes.docx", b"PK\x03\x04" + CORRUPT_PDF, "unsupported file type .docx"),
    },
    "corrupt PDF (random bytes)": {
        "CLI": Cli(("ingest", "{pdf}", "--model-id", "alice"), "not a PDF"),
        "workbench": Upload("broken.pdf", CORRUPT_PDF, "not a PDF"),
    },
    f"document over max_document_chars ({LIMIT:,})": {
        "CLI": Cli(("ingest", "{big}", "--model-id", "alice"), "over the limit of 20,000"),
        "MCP": Mcp("add_document", _add(text=BIG.decode()), "over the limit of 20,000"),
        "REST": Http("/tools/add_document", "over the limit of 20,000", json=_add(text=BIG.decode())),
        "workbench": Upload("big.txt", BIG, "over the limit of 20,000"),
    },
    "request body over 8 MB": {
        "MCP": Http("/mcp", "request body over", 413, content=HUGE_BODY),
        "REST": Http("/tools/add_document", "request body over", 413, content=HUGE_BODY),
        "OpenAI": Http("/v1/chat/completions", "request body over", 413, content=HUGE_BODY),
    },
    "empty model_id": _bad_model_id(
        "", "model_id is required",
        OpenAI=Http("/v1/chat/completions", "'model' must name the model_id", json=_chat("Who played bebop?", ""))),
    "model_id over 200 characters": _bad_model_id(TOO_LONG_ID, "model_id has 201 characters; it must be at most 200"),
    "model_id with a control character": _bad_model_id(CONTROL_ID, "no tabs, line breaks"),
    OTHER_TENANT: _unknown_ids("bob_archive", "bob_leaf"),
    NONEXISTENT: _unknown_ids(MISSING, MISSING),
    "id beyond 64 bits (2^63)": _unknown_ids(BEYOND, BEYOND),
    "id below 1 (0)": _unknown_ids(0, 0),
    "negative top_k / budget": {
        "CLI": Cli(("context", "bebop", "--model-id", "alice", "--budget", "-5"), "budget must be positive"),
        "MCP": Mcp("retrieve_memory", {"model_id": "alice", "query": "bebop", "top_k": -1},
                   "top_k must be between 1 and 200, got -1"),
        "REST": Http("/tools/search_memory", "top_k must be between 1 and 200, got -1",
                     json={"model_id": "alice", "query": "bebop", "top_k": -1}),
    },
    "non-integer top_k": {
        "CLI": Cli(("retrieve", "bebop", "--model-id", "alice", "--top-k", "ten"), "invalid int value"),
        "MCP": Mcp("retrieve_memory", {"model_id": "alice", "query": "bebop", "top_k": "ten"},
                   "top_k: Input should be a valid integer"),
        "REST": Http("/tools/retrieve_memory", "top_k: Input should be a valid integer",
                     params={"model_id": "alice", "query": "bebop", "top_k": "ten"}),
    },
    "threshold outside 0-1 (5, NaN)": {
        "CLI": Cli(("ingest", "{good}", "--model-id", "alice", "--threshold", "5"), "merge_threshold is a 0-1"),
        "MCP": Mcp("explore_memory_node", lambda ids: {"model_id": "alice", "node_id": ids["alice_leaf"],
                                                       "query": "bebop", "threshold": 5},
                   "threshold is a 0-1 relevance score, got 5"),
        "REST": Http("/tools/explore_memory_node", "threshold is a 0-1 relevance score, got nan",
                     params={"model_id": "alice", "node_id": "1", "query": "bebop", "threshold": "nan"}),
    },
    "malformed JSON body": {
        "MCP": Http("/mcp", "Parse error", content=b"{not json"),
        "REST": Http("/tools/add_document", "the body is not JSON", content=b"{not json"),
        "OpenAI": Http("/v1/chat/completions", "the body is not JSON", content=b"{not json"),
    },
    "wrong JSON types": {
        "MCP": Mcp("retrieve_memory", {"model_id": 5, "query": ["bebop"]}, "model_id: Input should be a valid string"),
        "REST": Http("/tools/retrieve_memory", "model_id: Input should be a valid string",
                     json={"model_id": 5, "query": ["bebop"]}),
        "OpenAI": Http("/v1/chat/completions", "'messages' must be a list",
                       json={"model": "alice", "messages": "Who played bebop?"}),
    },
    "query over 4,000 characters": {
        "CLI": Cli(("retrieve", LONG_QUERY, "--model-id", "alice"), "over the limit of 4,000"),
        "MCP": Mcp("retrieve_memory", {"model_id": "alice", "query": LONG_QUERY},
                   "the query has 4,001 characters, over the limit of 4,000"),
        "REST": Http("/tools/retrieve_memory", "the query has 4,001 characters, over the limit of 4,000",
                     json={"model_id": "alice", "query": LONG_QUERY}),
        "OpenAI": Http("/v1/chat/completions", "over the limit of 4,000", json=_chat(LONG_QUERY)),
    },
    "archive import: not JSON": {
        "CLI": Cli(("import", "{not_json}", "--model-id", "alice"), "notes.json is not JSON"),
        "workbench": ImportFile("notes.json", NOT_JSON, "notes.json is not JSON"),
    },
    "archive import: another format": {
        "CLI": Cli(("import", "{wrong_format}", "--model-id", "alice"), "not a Memory Forest archive export"),
        "workbench": ImportFile("other.json", WRONG_FORMAT, "not a Memory Forest archive export"),
    },
    f"archive import: over {MAX_IMPORT_NODES:,} nodes": {
        "CLI": Cli(("import", "{too_many}", "--model-id", "alice"), "imports are limited to 100,000"),
        "workbench": ImportFile("huge.json", TOO_MANY, "imports are limited to 100,000"),
    },
    "JSON nested 1,000 deep": {
        "CLI": Cli(("import", "{nested}", "--model-id", "alice"), "nested.json nests deeper than 64 levels"),
        "MCP": Http("/mcp", "Parse error: recursion limit exceeded", content=NESTED),
        "REST": Http("/tools/list_archives", "the body nests deeper than 64 levels", content=NESTED),
        "OpenAI": Http("/v1/chat/completions", "the body nests deeper than 64 levels", content=NESTED),
        "workbench": ImportFile("nested.json", NESTED, "nested.json nests deeper than 64 levels"),
    },
    "an integer of 5,000 digits": {
        "CLI": Cli(("import", "{huge_int}", "--model-id", "alice"), "an integer of 5,000 digits"),
        "MCP": Http("/mcp", "Parse error: number out of range",
                    content=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "retrieve_memory", '
                            b'"arguments": {"model_id": "alice", "query": "bebop", "top_k": ' + HUGE_INT + b'}}}'),
        "REST": Http("/tools/search_memory", "an integer of 5,000 digits",
                     content=b'{"model_id": "alice", "query": "bebop", "top_k": ' + HUGE_INT + b'}'),
        "OpenAI": Http("/v1/chat/completions", "an integer of 5,000 digits",
                       content=json.dumps(_chat("Who played bebop?")).encode()[:-1] + b', "n": ' + HUGE_INT + b'}'),
        "workbench": ImportFile("digits.json", HUGE_INT_EXPORT, "an integer of 5,000 digits"),
    },
    "a lone surrogate (\\ud800) in text": {
        "CLI": Cli(("retrieve", LONE_SURROGATE, "--model-id", "alice"), "the query holds a lone surrogate (U+DCFF)"),
        "MCP": Http("/mcp", "Parse error",
                    content=b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add_research_note", '
                            b'"arguments": {"model_id": "alice", "session_id": "s", "text": "x\\ud800"}}}'),
        "REST": Http("/tools/process_memory", "holds a lone surrogate (U+D800)",
                     content=b'{"user_id": "ann", "input": "I like \\ud800 jazz"}'),
        "OpenAI": Http("/v1/chat/completions", "holds a lone surrogate (U+D800)",
                       content=b'{"model": "alice", "messages": [{"role": "user", "content": "bebop \\ud800"}]}'),
        "workbench": ImportFile("surrogate.json", SURROGATE_EXPORT, "holds a lone surrogate (U+D800)"),
    },
    "POST body sent as text/plain (no CORS preflight)": {
        "REST": Http("/tools/add_document", "Content-Type: application/json", 415,
                     content=json.dumps(_add()).encode(), content_type="text/plain"),
        "OpenAI": Http("/v1/chat/completions", "Content-Type: application/json", 415,
                       content=json.dumps(_chat("Who played bebop?")).encode(), content_type="text/plain"),
    },
    "HEAD of a tool that writes": {
        "REST": Http("/tools/add_document", "Allow: POST", 405, params=_add(model_id="carol"), method="HEAD"),
    },
    "ingest: a named pipe (FIFO) instead of a file": {
        "CLI": Cli(("ingest", "{fifo}", "--model-id", "alice"), "is a named pipe (FIFO), not a file"),
    },
    "archive import: /dev/zero": {
        "CLI": Cli(("import", "/dev/zero", "--model-id", "alice"), "/dev/zero is a character device, not a file"),
    },
    f"archive import: passages over max_document_chars ({LIMIT:,})": {
        "CLI": Cli(("import", "{long_export}", "--model-id", "alice"), "over the limit of 20,000"),
        "workbench": ImportFile("long.json", LONG_EXPORT, "over the limit of 20,000"),
    },
    "archive import: crafted settings (documents [\"x\"])": {
        "CLI": Cli(("import", "{crafted}", "--model-id", "alice"), "documents entry 1 must be an object"),
        "workbench": ImportFile("crafted.json", CRAFTED, "documents entry 1 must be an object"),
    },
    "personal memory: empty input": {
        "CLI": Cli(("personal", "process", "   ", "--user-id", "ann"), "the input is empty"),
        "MCP": Mcp("process_memory", {"user_id": "ann", "input": "   "}, "the input is empty"),
        "REST": Http("/tools/process_memory", "the input is empty", json={"user_id": "ann", "input": "   "}),
    },
    "personal memory: input over 4,000 characters": {
        "CLI": Cli(("personal", "process", "I like jazz. " * 400, "--user-id", "ann"), "over the limit of 4,000"),
        "MCP": Mcp("process_memory", {"user_id": "ann", "input": "I like jazz. " * 400},
                   "the input has 5,200 characters, over the limit of 4,000"),
        "REST": Http("/tools/process_memory", "the input has 5,200 characters, over the limit of 4,000",
                     json={"user_id": "ann", "input": "I like jazz. " * 400}),
    },
    "personal memory: user_id with a control character": {
        "CLI": Cli(("personal", "process", "I like jazz", "--user-id", CONTROL_ID), "user_id must be 1-200"),
        "MCP": Mcp("process_memory", {"user_id": CONTROL_ID, "input": "I like jazz"}, "user_id must be 1-200"),
        "REST": Http("/tools/process_memory", "user_id must be 1-200",
                     json={"user_id": CONTROL_ID, "input": "I like jazz"}),
    },
    # The faults below used to get the tool schema's message on MCP and REST and the engine's elsewhere.
    "personal memory: empty user_id": {
        "CLI": Cli(("personal", "process", "I like jazz", "--user-id", ""), "user_id is required"),
        "MCP": Mcp("process_memory", {"user_id": "", "input": "I like jazz"}, "user_id is required"),
        "REST": Http("/tools/process_memory", "user_id is required", json={"user_id": "", "input": "I like jazz"}),
    },
    "personal memory: user_id ending in a line break": {
        "CLI": Cli(("personal", "process", "I like jazz", "--user-id", "ann\n"), "user_id must be 1-200"),
        "MCP": Mcp("process_memory", {"user_id": "ann\n", "input": "I like jazz"}, "user_id must be 1-200"),
        "REST": Http("/tools/process_memory", "user_id must be 1-200",
                     json={"user_id": "ann\n", "input": "I like jazz"}),
    },
    "empty query": {
        "CLI": Cli(("retrieve", "", "--model-id", "alice"), "the query is empty"),
        "MCP": Mcp("retrieve_memory", {"model_id": "alice", "query": ""}, "the query is empty"),
        "REST": Http("/tools/search_memory", "the query is empty", json={"model_id": "alice", "query": ""}),
    },
    "empty session_id": {
        "CLI": Cli(("memory", "brief", "--model-id", "alice", "--session", ""), "session_id is required"),
        "MCP": Mcp("get_research_briefing", {"model_id": "alice", "session_id": ""}, "session_id is required"),
        "REST": Http("/tools/ask_memory", "session_id is required",
                     json={"model_id": "alice", "question": "Who played bebop?", "session_id": ""}),
    },
    # ids are stored, logged and shown in clear: one shaped like a key is refused, and not repeated
    "model_id shaped like a key (an AWS secret)": _bad_model_id(AWS_SECRET, "model_id looks like a secret (API_KEY)"),
    "personal memory: user_id or agent_id shaped like a key (an AWS secret)": {
        "CLI": Cli(("personal", "process", "I like jazz", "--user-id", AWS_SECRET), "user_id looks like a secret"),
        "MCP": Mcp("process_memory", {"user_id": AWS_SECRET, "input": "I like jazz"}, "user_id looks like a secret"),
        "REST": Http("/tools/process_memory", "agent_id looks like a secret",
                     json={"user_id": "ann", "agent_id": AWS_SECRET, "input": "I like jazz"}),
    },
    "personal memory: a metadata key that is a provider key": {
        "MCP": Mcp("process_memory", {"user_id": "ann", "input": "I like jazz", "metadata": {KEY_AS_NAME: 1}},
                   "a metadata key looks like a secret"),
        "REST": Http("/tools/process_memory", "a metadata key looks like a secret",
                     json={"user_id": "ann", "input": "I like jazz", "metadata": {KEY_AS_NAME: 1}}),
    },
}


# --- the stores --------------------------------------------------------------------------------

def snapshot(data_dir: Path) -> dict[str, int]:
    """Rows in every table of the store's SQLite, and the collections and vectors of its Chroma."""
    counts: dict[str, int] = {}
    with closing(sqlite3.connect(f"file:{data_dir / 'forest.sqlite3'}?mode=ro", uri=True)) as db:
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            counts[table] = db.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
    with closing(sqlite3.connect(f"file:{data_dir / 'chroma' / 'chroma.sqlite3'}?mode=ro", uri=True)) as db:
        for table in ("collections", "embeddings"):  # not its bookkeeping (a client start logs a row)
            counts[f"chroma.{table}"] = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    assert counts["archives"] and counts["chroma.embeddings"]  # the stores read are the populated ones
    return counts


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bad-files")
    contents = {"good": ("jazz.md", topic_text("jazz").encode()), "blank": ("blank.txt", BLANK),
                "docx": ("notes.docx", b"PK\x03\x04" + CORRUPT_PDF), "pdf": ("broken.pdf", CORRUPT_PDF),
                "big": ("big.txt", BIG), "not_json": ("notes.json", NOT_JSON),
                "wrong_format": ("other.json", WRONG_FORMAT), "too_many": ("huge.json", TOO_MANY),
                "nested": ("nested.json", NESTED), "long_export": ("long.json", LONG_EXPORT),
                "crafted": ("crafted.json", CRAFTED), "huge_int": ("digits.json", HUGE_INT_EXPORT),
                "surrogate": ("surrogate.json", SURROGATE_EXPORT)}
    for name, content in contents.values():
        (folder / name).write_bytes(content)
    os.mkfifo(folder / "pipe.md")
    return {"fifo": folder / "pipe.md", **{key: folder / name for key, (name, _) in contents.items()}}


@pytest.fixture(scope="module")
def cli_face(tmp_path_factory, files) -> Face:
    """A store of its own, written by the CLI (no process of the test holds it open)."""
    data_dir = tmp_path_factory.mktemp("cli") / "store"
    plants = files["good"].with_name("plants.md")
    plants.write_text(topic_text("photosynthesis"), encoding="utf-8")
    ids: Ids = {}
    for owner, path in (("alice", files["good"]), ("bob", plants)):
        done = subprocess.run([FOREST, "ingest", str(path), "--model-id", owner, "--json"], capture_output=True,
                              text=True, timeout=300, env=forest_env(data_dir))
        assert done.returncode == 0, done.stderr
        ids[f"{owner}_archive"] = json.loads(done.stdout)[0]["id"]
    return Face(data_dir, ids, files)


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder, files) -> Iterator[Face]:
    """One server (MCP, REST and OpenAI on one HTTP app) over a store with alice's and bob's archives."""
    data_dir = tmp_path_factory.mktemp("served") / "store"
    forest = MemoryForest(data_dir=data_dir, embedder=embedder, chunk_size=300, max_document_chars=LIMIT)
    alice = forest.ingest_text("alice", "jazz", topic_text("jazz"))
    bob = forest.ingest_text("bob", "plants", topic_text("photosynthesis"))
    leaf = {owner: next(n.id for n in forest.tree(owner, a.id) if n.is_leaf) for owner, a in (("alice", alice),
                                                                                             ("bob", bob))}
    server = ThreadServer(forest, port=free_port()).start()
    yield Face(data_dir, {"alice_archive": alice.id, "bob_archive": bob.id, "alice_leaf": leaf["alice"],
                          "bob_leaf": leaf["bob"]}, files, url=server.url, forest=forest)
    server.stop()
    forest.close()


@pytest.fixture(scope="module")
def workbench_face(served, tmp_path_factory) -> Iterator[Face]:
    """The Library page on the served store (as `make run` would open it beside its endpoint)."""
    tmp = tmp_path_factory.mktemp("workbench")
    with pytest.MonkeyPatch.context() as patch:
        for key, value in {"FOREST_DATA_DIR": str(served.data_dir), "FOREST_SERVER_PORT": "0",
                           "FOREST_MAX_DOCUMENT_CHARS": str(LIMIT), "FOREST_SAMPLES_DIR": str(tmp / "none"),
                           "FOREST_CORE_FILE": str(tmp / "CORE.md")}.items():
            patch.setenv(key, value)
        st.cache_resource.clear()
        app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()   # opens on the Library
        _pick_model_id(app, "alice")
        assert not app.exception and app.dataframe  # alice's archive is listed: the page is live
        yield replace(served, app=app)
        st.cache_resource.clear()


FIXTURES = {"CLI": "cli_face", "MCP": "served", "REST": "served", "OpenAI": "served", "workbench": "workbench_face"}


@pytest.fixture(scope="module", autouse=True)
def write_observed() -> Iterator[None]:
    yield
    if target := os.environ.get("FOREST_BAD_INPUT_TABLE"):
        rows = {row: OBSERVED[row] for row in CELLS if row in OBSERVED}
        Path(target).write_text(json.dumps({"faces": FACES, "rows": rows}, ensure_ascii=False, indent=1),
                                encoding="utf-8")


# --- the matrix --------------------------------------------------------------------------------

def assert_clear(seen: Seen, expect: str) -> None:
    """One line that says what is wrong, never a crash's text."""
    message = seen.message
    assert message and "\n" not in message, seen
    for crash in ("Traceback", 'File "', "internal error", "validation error for", "errors.pydantic.dev",
                  "Error executing tool"):
        assert crash not in message, seen
    assert expect.lower() in message.lower(), (expect, seen)


# Cells measured at 1 s of CPU or more (bench/bench_test_tiers.py): CLI cells whose `forest` process
# loads the engine before it refuses, and the first cell of the MCP and workbench faces, which pays
# for starting their server.
SLOW_CLI_ROWS = {
    "empty / whitespace document", "unsupported file type (.docx)", "corrupt PDF (random bytes)",
    "document over max_document_chars (20,000)", "threshold outside 0-1 (5, NaN)", "JSON nested 1,000 deep",
    "archive import: not JSON", "archive import: another format", "archive import: over 100,000 nodes",
    "archive import: /dev/zero", "archive import: passages over max_document_chars (20,000)",
    'archive import: crafted settings (documents ["x"])', "ingest: a named pipe (FIFO) instead of a file",
    "personal memory: empty input", "personal memory: input over 4,000 characters",
    "personal memory: user_id with a control character", "model_id shaped like a key (an AWS secret)",
    "personal memory: user_id or agent_id shaped like a key (an AWS secret)",
}
SLOW_CELLS = {(row, "CLI") for row in SLOW_CLI_ROWS} | {("empty / whitespace document", face)
                                                         for face in ("MCP", "workbench")}


def test_every_cell_marked_slow_is_in_the_matrix():
    """A row renamed would quietly move its cells back into the fast tier."""
    assert SLOW_CELLS <= {(row, face) for row, cells in CELLS.items() for face in cells}


@pytest.mark.parametrize("row, face", [
    pytest.param(row, face, marks=pytest.mark.slow) if (row, face) in SLOW_CELLS else (row, face)
    for row, cells in CELLS.items() for face in FACES if face in cells])
def test_bad_input_gives_a_clear_error_and_writes_nothing(row: str, face: str, request) -> None:
    target: Face = request.getfixturevalue(FIXTURES[face])
    cell = CELLS[row][face]
    before = snapshot(target.data_dir)
    seen = cell.run(target)
    assert_clear(seen, cell.expect)
    assert AWS_SECRET[8:24] not in seen.message and KEY_AS_NAME[8:24] not in seen.message, seen  # never echoed
    if row == OTHER_TENANT:  # exactly what an id that exists nowhere gets, and nothing of bob's
        assert not any(word in seen.message.lower() for word in BOB_WORDS), seen
        missing = CELLS[NONEXISTENT][face].run(target)
        assert re.sub(r"\d+", "N", seen.message) == re.sub(r"\d+", "N", missing.message), (seen, missing)
    assert snapshot(target.data_dir) == before
    OBSERVED.setdefault(row, {})[face] = {"how": seen.how, "message": seen.message}


def test_ids_beyond_sqlite_integers_are_not_found_on_every_path(served) -> None:
    """Ids SQLite cannot even bind (the engine used to crash with OverflowError) are unknown ids."""
    forest, before = served.forest, snapshot(served.data_dir)
    for action in ("history", "update", "delete"):
        reply = forest.personal.memory_tool(action, "ann", memory_id=BEYOND, text="I like jazz").to_dict()
        assert reply["status"] == "fallback" and reply["payload"]["error"] == f"memory {BEYOND} not found for this user"
    for attempt in (lambda: forest.research.reconcile_nodes("alice", served.ids["alice_leaf"], BEYOND),
                    lambda: forest.join_archives("alice", [served.ids["alice_archive"], BEYOND]),
                    lambda: forest.explore("alice", BEYOND, "bebop")):
        with pytest.raises(NotFound, match=str(BEYOND)):
            attempt()
    assert snapshot(served.data_dir) == before
