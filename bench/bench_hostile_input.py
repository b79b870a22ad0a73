"""Hostile input against real processes, timed: what `forest import` does with /dev/zero, a 9 MB
single-leaf export and a 3,000-deep chain (and `forest tree` on it); what the HTTP server answers to
JSON nested 1,000 deep, to HEAD on a tool that writes, and to a text/plain POST; how long
`forest delete` and `forest doctor` wait while another process's Claude summary hangs.

    python bench/bench_hostile_input.py     # ~2-4 min; run it with PYTHONPATH set to another
                                            # checkout to print that code's row for each case
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import forest_env, free_port, topic_text  # noqa: E402
from fake_anthropic import FakeAnthropic  # noqa: E402

FOREST = str(Path(sys.executable).parent / "forest")
ROW = "{:<44} {:>7}  {:>8}  {}"


def chain(depth: int, content: str = "Bebop is fast jazz.") -> dict:
    nodes = [{"ref": i, "parent_ref": i - 1 if i else None, "node_type": "SUMMARY_NODE", "summary": f"level {i}",
              "summary_source": "bench", "first_leaf": 0, "last_leaf": 0} for i in range(depth)]
    nodes.append({"ref": depth, "parent_ref": depth - 1 if depth else None, "node_type": "LEAF_CHUNK",
                  "summary": "the leaf", "summary_source": "bench", "content": content, "leaf_index": 0,
                  "first_leaf": 0, "last_leaf": 0})
    return {"format": "memory-forest-archive", "version": 1, "archive": {"name": "chain"}, "nodes": nodes}


def timed(argv: list[str], env: dict[str, str], timeout: float = 600,
          memory: int | None = None) -> tuple[str, float, str]:
    """(exit code, seconds, the last line of stderr, else the first of stdout) of one command,
    its address space limited to `memory` bytes if given."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    started = time.perf_counter()
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                              preexec_fn=limit if memory else None)
    except subprocess.TimeoutExpired:
        return "killed", time.perf_counter() - started, f"still running after {timeout:.0f} s"
    said = (done.stderr.strip().splitlines() or [""])[-1] if done.returncode else \
        (done.stdout.strip().splitlines() or [""])[0]
    return f"exit {done.returncode}", time.perf_counter() - started, said[:90]


def imports(folder: Path) -> None:
    env = forest_env(folder / "store")
    (folder / "big.json").write_text(json.dumps(chain(0, "word " * 1_800_000)), encoding="utf-8")
    (folder / "deep.json").write_text(json.dumps(chain(3000)), encoding="utf-8")
    # /dev/zero never ends: a reader without a bound is stopped by a 4 GB address space (or at 30 s)
    for case, argv, timeout, memory in (
            ("import /dev/zero", ["import", "/dev/zero"], 30, 4 << 30),
            ("import a 9 MB single-leaf export", ["import", str(folder / "big.json")], 200, None),
            ("import a 3,000-deep chain", ["import", str(folder / "deep.json"), "--json"], 600, None)):
        how, seconds, said = timed([FOREST, *argv, "--model-id", "m"], env, timeout, memory)
        print(ROW.format(case, how, f"{seconds:.1f} s", said), flush=True)
    listed = subprocess.run([FOREST, "archives", "--model-id", "m", "--json"], env=env, capture_output=True, text=True)
    deep = [a["id"] for a in json.loads(listed.stdout or "[]") if a["depth"] == 3000]
    if deep:
        how, seconds, said = timed([FOREST, "tree", str(deep[0]), "--model-id", "m"], env)
        print(ROW.format("forest tree on the 3,000-deep chain", how, f"{seconds:.1f} s",
                         f"{said.strip()[:40]} ..." if how == "exit 0" else said), flush=True)


def http(folder: Path) -> None:
    port = free_port()
    server = subprocess.Popen([FOREST, "serve", "--transport", "http", "--port", str(port)],
                              env=forest_env(folder / "served"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"{url}/health", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        nested = "[" * 1000 + "]" * 1000
        note = {"model_id": "m", "session_id": "s", "kind": "finding", "text": "planted"}
        with httpx.Client(base_url=url, timeout=60) as client:
            for case, send in (
                    ("POST /tools/list_archives, JSON 1,000 deep",
                     lambda: client.post("/tools/list_archives", content=nested,
                                         headers={"content-type": "application/json"})),
                    ("POST /v1/chat/completions, JSON 1,000 deep",
                     lambda: client.post("/v1/chat/completions", content=nested,
                                         headers={"content-type": "application/json"})),
                    ("HEAD /tools/add_research_note",
                     lambda: client.head("/tools/add_research_note", params=note)),
                    ("POST /tools/add_research_note as text/plain",
                     lambda: client.post("/tools/add_research_note", content=json.dumps(note),
                                         headers={"content-type": "text/plain"}))):
                started = time.perf_counter()
                try:
                    reply = send()
                except httpx.HTTPError as exc:  # the server dropped the connection
                    print(ROW.format(case, "no reply", f"{time.perf_counter() - started:.2f} s",
                                     f"{type(exc).__name__}: {exc}"), flush=True)
                    continue
                said = reply.text.strip().splitlines()[0][:70] if reply.text.strip() else "(no body)"
                print(ROW.format(case, f"HTTP {reply.status_code}", f"{time.perf_counter() - started:.2f} s", said),
                      flush=True)
            notes = client.post("/tools/get_research_briefing", json={"model_id": "m", "session_id": "s"})
            planted = "planted" in notes.text
            print(ROW.format("  ...notes the HEAD or text/plain wrote", "", "", "one or more" if planted else "none"))
    finally:
        server.terminate()
        server.wait(timeout=30)
        log = server.stderr.read()
        print(ROW.format("  ...tracebacks in the server's log", "", "", log.count("Traceback")), flush=True)


def slow_writer(folder: Path) -> None:
    data_dir = folder / "slow"
    for name, topic in (("jazz", "jazz"), ("plants", "photosynthesis")):
        (folder / f"{name}.md").write_text(topic_text(topic), encoding="utf-8")
    first = subprocess.run([FOREST, "ingest", str(folder / "jazz.md"), "--model-id", "m", "--json"],
                           env=forest_env(data_dir), capture_output=True, text=True, timeout=600)
    doomed = json.loads(first.stdout)[0]["id"]
    with FakeAnthropic() as fake:
        fake.hang = lambda prompt: fake.held == 0  # its first summary hangs until the client's 60 s timeout
        env = forest_env(data_dir, ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=fake.url)
        slow = subprocess.Popen([FOREST, "ingest", str(folder / "plants.md"), "--model-id", "m"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        fake.hung.wait(120)
        for case, argv in (("delete beside a hanging Claude ingest", ["delete", str(doomed), "--model-id", "m"]),
                           ("doctor beside a hanging Claude ingest", ["doctor"])):
            how, seconds, said = timed([FOREST, *argv], forest_env(data_dir), 300)
            print(ROW.format(case, how, f"{seconds:.1f} s", said), flush=True)
        slow.wait(timeout=600)


def main() -> None:
    print(f"code: {os.environ.get('PYTHONPATH') or 'installed'}")
    print(ROW.format("case", "outcome", "time", "message"))
    with tempfile.TemporaryDirectory() as tmp:
        imports(Path(tmp))
        http(Path(tmp))
        slow_writer(Path(tmp))


if __name__ == "__main__":
    main()
