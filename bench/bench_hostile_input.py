"""Hostile input against real processes, timed: what `forest import` does with /dev/zero, a 9 MB
single-leaf export and a 3,000-deep chain (and `forest tree` on it); what the HTTP server answers to
JSON nested 1,000 deep, to HEAD on a tool that writes, and to a text/plain POST; how long
`forest delete` and `forest doctor` wait while another process's Claude summary hangs; and what
`forest library import` does with a library naming a FIFO, a Zotero item reaching outside its
storage folder, .bib fields of growing size, and two imports of one folder at once.

    python -m bench.bench_hostile_input     # ~2-4 min; run it with PYTHONPATH set to another
                                            # checkout to print that code's row for each case
    python -m bench.bench_hostile_input libraries   # only these parts (libraries, imports, http, slow_writer)
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

from testkit.processes import forest_env, free_port
from testkit.topics import topic_text
from testkit.fake_anthropic import FakeAnthropic
from testkit.library import paper
from testkit.zotero_factory import IMPORTED_FILE, ZoteroLibrary

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


def library_import(library: Path, data_dir: Path, timeout: float = 120) -> tuple[str, float, dict]:
    """(outcome, seconds, the --json report or {}) of one `forest library import`."""
    started = time.perf_counter()
    try:
        done = subprocess.run([FOREST, "library", "import", str(library), "--model-id", "m", "--json"],
                              env=forest_env(data_dir), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"still running after {timeout:.0f} s", time.perf_counter() - started, {}
    report = json.loads(done.stdout) if done.returncode == 0 else {}
    return f"exit {done.returncode}", time.perf_counter() - started, report


def refusal(report: dict) -> str:
    return "; ".join(m["reason"] for m in report.get("missing", []))[:90] or \
        f"imported {report.get('counts', {}).get('imported', '?')}"


def libraries(folder: Path) -> None:
    folder = folder / "libraries"
    paper(folder / "papers" / "jazz.pdf", "jazz")
    os.mkfifo(folder / "pipe.pdf")
    (folder / "fifo.bib").write_text(f"@misc{{p, title = {{Pipe}}, file = {{{folder / 'pipe.pdf'}}}}}\n"
                                     "@misc{j, title = {Jazz}, file = {papers/jazz.pdf}}", encoding="utf-8")
    how, seconds, report = library_import(folder / "fifo.bib", folder / "store1", 60)
    print(ROW.format("library import: .bib naming a FIFO", how, f"{seconds:.1f} s", refusal(report)), flush=True)

    paper(folder / "out" / "secret.pdf", "volcanoes", marker="SECRETMARKER")
    zotero = ZoteroLibrary(folder / "Zotero")
    item = zotero.item("journalArticle", "ESCAPE01", {"title": "Escape"})
    zotero.attachment("ESCAPDF1", item, IMPORTED_FILE, "storage:../../../out/secret.pdf", "PDF")
    zotero.close()
    (folder / "Zotero" / "storage" / "ESCAPDF1").mkdir(parents=True)   # Zotero makes one for each attachment
    how, seconds, report = library_import(folder / "Zotero", folder / "store2")
    leaked = any(b"SECRETMARKER" in p.read_bytes() for p in (folder / "store2").rglob("*") if p.is_file())
    print(ROW.format("library import: storage:../../../out/secret.pdf", how, f"{seconds:.1f} s",
                     f"secret in the store: {'yes' if leaked else 'no'}; {refusal(report)}"[:90]), flush=True)

    for megabytes in (0.25, 1, 4, 16):   # the .bib reader alone: LaTeX in the abstract of an entry with a PDF
        bib = folder / f"field{megabytes}.bib"
        bib.write_text("@misc{k, title = {T}, file = {k.pdf}, abstract = {"
                       + "word {\\'e} " * int(megabytes * 1e6 / 10) + "}}", encoding="utf-8")
        how, seconds, said = timed([sys.executable, "-P", "-c", "import sys; from forest.library import read_bibtex; "
                                    "print(len(read_bibtex(sys.argv[1]).entries))", str(bib)],
                                   {**os.environ}, 60)
        print(ROW.format(f".bib reader: a {megabytes} MB LaTeX field", how, f"{seconds:.1f} s",
                         "read" if how == "exit 0" else said), flush=True)

    for name in ("a", "b", "c"):
        paper(folder / "two" / f"{name}.pdf", "photosynthesis", marker=name)
    started = time.perf_counter()
    runs = [subprocess.Popen([FOREST, "library", "import", str(folder / "two"), "--model-id", "m", "--json"],
                             env=forest_env(folder / "store3"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(2)]
    for run in runs:
        run.wait(timeout=600)
    listed = subprocess.run([FOREST, "archives", "--model-id", "m", "--json"], env=forest_env(folder / "store3"),
                            capture_output=True, text=True)
    print(ROW.format("two concurrent library imports of 3 PDFs", "exit " + "/".join(str(r.returncode) for r in runs),
                     f"{time.perf_counter() - started:.1f} s",
                     f"{len(json.loads(listed.stdout or '[]'))} archives (3 expected)"), flush=True)


def main() -> None:
    print(f"code: {os.environ.get('PYTHONPATH') or 'installed'}")
    print(ROW.format("case", "outcome", "time", "message"))
    parts = {"libraries": libraries, "imports": imports, "http": http, "slow_writer": slow_writer}
    with tempfile.TemporaryDirectory() as tmp:
        for name in sys.argv[1:] or parts:      # the parts named, else all
            parts[name](Path(tmp))


if __name__ == "__main__":
    main()
