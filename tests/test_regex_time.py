"""No regular expression that sees user or document text backtracks: every pattern in forest/ and
forest/ingest/ (module-level compiled ones, those inside rule tables, and every literal handed to a re.*
call) is fed adversarial input (long runs of blanks, repeated near-matches of its own words, runs
of one character) at n and 8n characters and must take about 8 times as long, not 64 (quadratic)
or 512 (cubic); the text paths (redaction, the privacy rules, triple extraction, sentence splitting,
conflict detection, ...) take 100,000-character adversarial inputs under a CPU-time limit; and
the faces answer the freezing message ("my", 3,990 blanks, "x") at once: the CLI, MCP, REST and the
OpenAI endpoint, on real processes and real HTTP.

Time is CPU time of this thread (time.thread_time), so a busy machine slows nothing down here.
With FOREST_ADVERSARIAL_TABLE=<file> the faces' answers are written there as JSON;
bench/bad_input_table.py prints them beside the other bad input.
"""
from __future__ import annotations

import ast
import asyncio
import importlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import ROOT
from testkit.processes import forest_env, free_port

PACKAGES = ("forest",)
SMALL, FACTOR = 300, 8
LINEAR_RATIO = 24        # 8x the input: linear takes ~8x; quadratic ~64x, cubic ~512x
NOISE_FLOOR = 0.004      # seconds: below this at 8n, a ratio is timer noise
# Calls whose pattern is built at run time, and why that is linear.
BUILT_AT_RUN_TIME = {
    ("forest/personal/graph.py", "search"): "an entity key, re.escape'd, between fixed one-character lookarounds",
    ("forest/personal/tags.py", "sub"): "a phrase, re.escape'd: a literal",
    ("forest/personal/graph.py", "compile"): "_rule() compiles the rule table at import (in the globals, walked)",
    ("forest/research/claims/negation.py", "search"): "a word, re.escape'd, and a fixed list of suffixes between lookarounds",
    ("forest/personal/recall.py", "search"): "a speaker's name, re.escape'd, between fixed one-character lookarounds",
}
RE_CALLS = ("compile", "search", "match", "fullmatch", "sub", "subn", "split", "findall", "finditer")


def _source_files() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _walk(value: Any, found: dict[tuple[str, int], re.Pattern[str]], seen: set[int], depth: int = 0) -> None:
    """Compiled patterns in a module's globals, inside tuples, lists, dicts and the package's own objects."""
    if depth > 4 or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, re.Pattern):
        found.setdefault((value.pattern, value.flags), value)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _walk(item, found, seen, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            _walk(item, found, seen, depth + 1)
    elif hasattr(value, "__dict__") and not isinstance(value, type) \
            and type(value).__module__.startswith(PACKAGES):
        for item in vars(value).values():
            _walk(item, found, seen, depth + 1)


def _re_calls(path: Path, in_functions: bool = False) -> Iterator[tuple[str, ast.Call]]:
    """The re.* calls of a file (only those inside function bodies: compiled at run time)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] \
        if in_functions else [tree]
    seen = set()
    for root in roots:
        for node in ast.walk(root):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and id(node) not in seen \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" \
                    and node.func.attr in RE_CALLS:
                seen.add(id(node))
                yield node.func.attr, node


def all_patterns() -> dict[str, re.Pattern[str]]:
    """Every pattern of the packages, named by where it was found."""
    found: dict[tuple[str, int], re.Pattern[str]] = {}
    where: dict[tuple[str, int], str] = {}
    for path in _source_files():
        module = importlib.import_module(_module_name(path))
        before = set(found)
        for name, value in vars(module).items():
            if not (isinstance(value, type) or callable(value) and not isinstance(value, re.Pattern)):
                _walk(value, found, set())
        for key in set(found) - before:
            where[key] = f"{_module_name(path)}"
        for _, call in _re_calls(path):
            if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                pattern = re.compile(call.args[0].value)
                key = (pattern.pattern, pattern.flags)
                found.setdefault(key, pattern)
                where.setdefault(key, f"{_module_name(path)} (line {call.lineno})")
    return {f"{where[key]}: {key[0][:80]!r}": pattern for key, pattern in found.items()}


PATTERNS = all_patterns()
ATOMS = (" ", "\t", "\n", "a", "A", "1", "-", ".", "_", "/", ":", "'", "我", "的", "，", "a ", "1 ", "1-", "a.", "#",
         "(", "[", "\\", "=", "@")


def adversarial(pattern: re.Pattern[str], n: int) -> Iterator[tuple[str, str]]:
    """Runs of one character, and the pattern's own words after a run of blanks, repeated with
    separators, before runs of letters and digits: where backtracking patterns go quadratic."""
    for atom in ATOMS:
        yield f"{atom!r} * n", atom * (n // len(atom)) + "x!"
    words = sorted(set(re.findall(r"[A-Za-z]{2,}|[\u4e00-\u9fff]+", pattern.pattern)))[:40]
    for word in words:
        yield f"{word!r} + blanks", word + " " * n + "x"
        for sep in (" ", "-", ", ", ""):
            yield f"({word!r} + {sep!r}) * n", (word + sep) * (n // (len(word) + len(sep)))
        yield f"'A' + ('-' + {word!r}) * n", "A" + ("-" + word) * (n // (len(word) + 1)) + "_"
        yield f"{word!r} + 'a' * n", word + "a" * n + "!"
        yield f"{word!r} + '1' * n", word + "1" * n + "!"


def cpu_seconds(run: Callable[[], Any]) -> float:
    began = time.thread_time()
    run()
    return time.thread_time() - began


def _scan(pattern: re.Pattern[str], text: str) -> None:
    for _ in pattern.finditer(text):
        pass


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_that_sees_text_takes_linear_time(name: str) -> None:
    pattern = PATTERNS[name]
    timed = sorted(((cpu_seconds(lambda: _scan(pattern, text)), label) for label, text in adversarial(pattern, SMALL)),
                   reverse=True)
    big = dict(adversarial(pattern, SMALL * FACTOR))
    for small, label in timed[:3]:  # the slowest inputs, at 8 times the length
        large = cpu_seconds(lambda: _scan(pattern, big[label]))
        assert large < NOISE_FLOOR or large / max(small, 1e-5) < LINEAR_RATIO, \
            f"{name} on {label}: {small * 1000:.1f} ms at {SMALL} characters, {large * 1000:.1f} ms at {SMALL * FACTOR}"


def test_the_patterns_were_found_and_none_is_built_from_text_unseen() -> None:
    """The collection above is complete: patterns made at import are in the modules' globals (walked
    above); a re.* call inside a function whose pattern is not a string literal is compiled at run
    time, so it is listed in BUILT_AT_RUN_TIME with why it is linear."""
    assert len(PATTERNS) > 150
    dynamic = set()
    for path in _source_files():
        for function, call in _re_calls(path, in_functions=True):
            argument = call.args[0] if call.args else None
            if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
                dynamic.add((str(path.relative_to(ROOT)), function))
    assert dynamic == set(BUILT_AT_RUN_TIME)


# --- the text paths on 100,000 characters ----------------------------------------------------------
LONG = 100_000
LONG_INPUTS = {
    "my + blanks + x": "my" + " " * LONG + "x",
    "pin + blanks + x": "PIN" + " " * LONG + "x",
    "blank lines": "\n" * LONG,
    "password is, repeated": "my password is " * (LONG // 15),
    "hyphenated capitals": "Ab-" * (LONG // 3),
    "digits": "1" * LONG,
    "digit groups": "1234 " * (LONG // 5),
    "begin markers": "-----BEGIN PRIVATE KEY-----" * (LONG // 27),
    "url prefixes": "://a:" * (LONG // 5),
    "token prefixes": "eyJ" * (LONG // 3),
    "sk- prefixes": "sk-" * (LONG // 3),
    "密码是, repeated": "密码是" * (LONG // 3),
    "的, repeated": "的" * LONG,
    "sentence without a stop": "I love my sister and " * (LONG // 21),
    "commas and blanks": ", " * (LONG // 2),
}


def _text_paths() -> dict[str, Callable[[str], Any]]:
    from forest.storage.fulltext.fts5 import index_text
    from forest.tree.leaves import split_long
    from forest.models.llm import json_object
    from forest.personal.graph import TripleExtractor
    from forest.personal.privacy import rule_decision
    from forest.redaction import redact
    from forest.personal.tags import extract_tags
    from forest.personal.timeframe import periods_in
    from forest.research.claims import Statement, detect_conflicts
    from forest.text import split_sentences, tokenize

    def json_reply(text: str) -> Any:
        try:
            return json_object(text)[0]
        except ValueError:
            return None

    return {
        "redact": redact, "privacy rules": rule_decision, "tokenize": tokenize, "split_sentences": split_sentences,
        "triples": lambda text: TripleExtractor(None).extract(text, speaker="ann"),
        "periods": periods_in, "tags": lambda text: extract_tags("ann", [text], [], 20),
        "conflicts": lambda text: detect_conflicts([Statement("node:1", text, "a"), Statement("node:2", text, "b")]),
        "index_text": lambda text: index_text("LEAF_CHUNK", "", text), "leaf pieces": lambda text: split_long(text, 1200),
        "Claude's JSON": json_reply,
    }


SLOW_TEXT_PATHS = {"conflicts", "privacy rules", "redact", "triples"}  # 1 s of CPU or more each


def test_every_text_path_marked_slow_exists():
    assert SLOW_TEXT_PATHS <= set(_text_paths())  # a path renamed would quietly leave the slow tier


@pytest.mark.parametrize("path", [pytest.param(path, marks=pytest.mark.slow) if path in SLOW_TEXT_PATHS else path
                                  for path in sorted(_text_paths())])
def test_the_text_paths_take_100k_adversarial_characters_in_linear_time(path: str) -> None:
    run = _text_paths()[path]
    for label, text in LONG_INPUTS.items():
        spent = cpu_seconds(lambda: run(text))
        assert spent < 5.0, f"{path} on {label}: {spent:.1f} s for {len(text):,} characters"


def test_the_freezing_message_is_redacted_at_once() -> None:
    from forest.redaction import redact

    text = "my" + " " * 2500 + "x"   # did not finish in 60 s
    assert cpu_seconds(lambda: redact(text)) < 0.1


def test_the_secret_scanners_patterns_only_see_bounded_windows() -> None:
    """detect-secrets' own patterns are not ours to rewrite, and some backtrack (a JWT's lazy tail,
    an npm token's ".+"): they only see windows of at most MAX_TOKEN characters of one token, so
    each window costs a bounded time and a text a linear one."""
    from forest.redaction import MAX_TOKEN, _plugins, _windows

    for plugin in _plugins():
        for regex in plugin.denylist:
            for label, text in adversarial(regex, 4 * MAX_TOKEN):
                for _, window in _windows(text):
                    assert len(window) <= MAX_TOKEN
                    spent = cpu_seconds(lambda: list(plugin.analyze_string(window)))
                    assert spent < 0.02, f"{type(plugin).__name__} on a window of {label}: {spent * 1000:.0f} ms"


# --- the faces ------------------------------------------------------------------------------------
BLANKS = "my" + " " * 3990 + "x"                # the freezing message, at the input limit
NEAR_MATCHES = "My password is Ab-" + "Cd-Ef, " * 560 + "ok"
ROWS = {"adversarial regex input: 'my', 3,990 blanks, 'x'": BLANKS,
        "adversarial regex input: 'My password is Ab-' + 'Cd-Ef, ' x 560": NEAR_MATCHES}
ANSWER_WITHIN = 120.0  # seconds: a request's timeout
OBSERVED: dict[str, dict[str, dict[str, str]]] = {}
FOREST = str(Path(sys.executable).parent / "forest")


@pytest.fixture(scope="module")
def served(tmp_path_factory, embedder):
    from forest import MemoryForest
    from forest.serving.http import ThreadServer

    data_dir = tmp_path_factory.mktemp("adversarial") / "store"
    forest = MemoryForest(data_dir=data_dir, embedder=embedder)
    forest.ingest_text("alice", "notes", "Bebop is fast jazz with complex harmonies.")
    server = ThreadServer(forest, port=free_port()).start()
    yield server.url, data_dir
    server.stop()
    forest.close()


@pytest.fixture(scope="module", autouse=True)
def write_observed() -> Iterator[None]:
    yield
    if target := os.environ.get("FOREST_ADVERSARIAL_TABLE"):
        Path(target).write_text(json.dumps({"rows": OBSERVED}, ensure_ascii=False, indent=1), encoding="utf-8")


def _mcp_process(url: str, text: str) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def call():
        client = create_mcp_http_client()
        async with client, streamable_http_client(url + "/mcp", http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("process_memory", {"user_id": "ann", "input": text})

    result = asyncio.run(call())
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def _answer(face: str, text: str, url: str, data_dir: Path) -> str:
    """The face's answer to `text`, in words; asserts it is a success."""
    if face == "CLI":
        done = subprocess.run([FOREST, "personal", "process", text, "--user-id", "ann", "--json"], capture_output=True,
                              text=True, timeout=ANSWER_WITHIN, env=forest_env(data_dir.parent / "cli"))
        assert done.returncode == 0, done.stderr
        return f"status {json.loads(done.stdout)['status']}"
    if face == "MCP":
        return f"status {_mcp_process(url, text)['status']}"
    with httpx.Client(base_url=url, timeout=ANSWER_WITHIN) as http:
        if face == "REST":
            reply = http.post("/tools/process_memory", json={"user_id": "ann", "input": text})
            assert reply.status_code == 200, reply.text
            return f"status {reply.json()['status']}"
        reply = http.post("/v1/chat/completions", json={"model": "alice", "messages": [{"role": "user", "content": text}]})
        assert reply.status_code == 200, reply.text
        return f"HTTP 200, {len(reply.json()['choices'][0]['message']['content'])} characters"


ORDINARY = "I like jazz. " * 306   # as long as the adversarial messages: the time to compare with
BASELINE: dict[str, float] = {}


def _timed(face: str, text: str, url: str, data_dir: Path) -> tuple[str, float]:
    began = time.monotonic()
    answer = _answer(face, text, url, data_dir)
    return answer, time.monotonic() - began


@pytest.mark.slow
@pytest.mark.parametrize("row, face", [(row, face) for row in ROWS for face in ("CLI", "MCP", "REST", "OpenAI")])
def test_every_face_answers_adversarial_input_as_fast_as_an_ordinary_message(row: str, face: str, served) -> None:
    """About as fast as an ordinary message of the same length: the embedder's own time differs
    between texts (up to 2x here) and a busy machine slows both; the freezing message alone took
    minutes."""
    url, data_dir = served
    if face not in BASELINE:
        BASELINE[face] = _timed(face, ORDINARY, url, data_dir)[1]
    answer, took = _timed(face, ROWS[row], url, data_dir)
    assert took < 4 * BASELINE[face] + 30, f"{face} took {took:.0f} s, an ordinary message {BASELINE[face]:.0f} s"
    assert "fallback" not in answer
    OBSERVED.setdefault(row, {})[face] = {
        "how": "answered", "message": f"{answer} in {took:.1f} s (ordinary message: {BASELINE[face]:.1f} s)"}
