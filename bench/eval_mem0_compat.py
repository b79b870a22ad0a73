"""LoCoMo (../shared/eval/locomo, CC BY-NC 4.0) written and searched three ways, each on a fresh
store with the same settings: does speaking mem0 change what the service finds?

1. process_memory, then the memory tool's search (what bench/eval_locomo.py measures);
2. mem0ai's MemoryClient (the real client, 2.2) against a real `forest serve` subprocess: each turn
   an asynchronous add (infer=True: the privacy-filtered, extracting write path) with its time as
   `timestamp`, every event waited for, then `search` with filters {"user_id": ...} and top_k 5;
3. forest.compat.mem0.Memory: `add` per turn, then `search` the same way.

Each turn is "[session date] speaker: text" with metadata {dia_id}, the privacy filter off, as in
bench/eval_locomo.py. recall@5: a question counts when any of its evidence turns is among the 5
returned (the "any" rule); the script prints it per way and the largest difference between ways.
Run: `python -m bench.eval_mem0_compat` (`--conversations 1-2` is the default).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["MEM0_TELEMETRY"] = "False"   # read when mem0 is imported: nothing leaves the machine

import httpx
from bench.eval_locomo import DATA, TOP_K, conversations, evidence_questions, service_search, turns, write_conversation
from mem0 import MemoryClient

from forest import MemoryForest, load_settings
from forest.compat.mem0 import Memory

TOKEN = "bench-mem0-compat-" + "Zq81LrT5vXw3Np7K"
SETTINGS = {"memory_privacy_filter": False}


def through_process_memory(samples: list[dict], data_dir: Path) -> list[list[float]]:
    forest = MemoryForest(load_settings({"data_dir": data_dir, **SETTINGS}, environ={}))
    try:
        scores = []
        for sample in samples:
            write_conversation(forest.personal, sample)
            scores.append(score(sample, lambda user, q: service_search(forest.personal, user, q)))
        return scores
    finally:
        forest.close()


def through_memory_client(samples: list[dict], data_dir: Path) -> list[list[float]]:
    url, server = start_serve(data_dir)
    try:
        client = MemoryClient(api_key=TOKEN, host=url)
        scores = []
        for sample in samples:
            user = sample["sample_id"]
            events = [client.add(text, user_id=user, metadata={"dia_id": dia_id}, timestamp=at)["event_id"]
                      for dia_id, text, at in turns(sample["conversation"])]
            wait_for(url, events)
            scores.append(score(sample, lambda u, q: client.search(q, filters={"user_id": u},
                                                                    top_k=TOP_K)["results"]))
        return scores
    finally:
        server.terminate()
        server.wait(timeout=60)


def through_compat_memory(samples: list[dict], data_dir: Path) -> list[list[float]]:
    memory = Memory({"data_dir": data_dir, **SETTINGS})
    try:
        scores = []
        for sample in samples:
            for dia_id, text, at in turns(sample["conversation"]):
                memory.add(text, user_id=sample["sample_id"], metadata={"dia_id": dia_id}, timestamp=at)
            scores.append(score(sample, lambda u, q: memory.search(q, filters={"user_id": u},
                                                                    top_k=TOP_K)["results"]))
        return scores
    finally:
        memory.close()


def score(sample: dict, search) -> list[float]:
    """Per question with evidence: 1.0 when any evidence turn is among the TOP_K returned."""
    user = sample["sample_id"]
    return [float(bool(evidence & {(m.get("metadata") or {}).get("dia_id") for m in search(user, qa["question"])}))
            for qa, evidence in evidence_questions(sample)]


def start_serve(data_dir: Path) -> tuple[str, subprocess.Popen]:
    """`forest serve --transport http` on its own store (the settings through the environment)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOREST_")}
    env.update({"FOREST_DATA_DIR": str(data_dir), "FOREST_API_TOKEN": TOKEN,
                **{f"FOREST_{k.upper()}": str(v).lower() for k, v in SETTINGS.items()}})
    server = subprocess.Popen([str(Path(sys.executable).parent / "forest"), "serve", "--transport", "http",
                               "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        if server.poll() is not None:
            raise SystemExit(f"forest serve exited with {server.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return url, server
        except httpx.HTTPError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("forest serve did not start")


def wait_for(url: str, events: list[str]) -> None:
    """Until every event has SUCCEEDED (the server's write queue has written each turn)."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Token {TOKEN}"}, timeout=60) as session:
        for event_id in events:
            while (status := session.get(f"/v1/event/{event_id}/").json()["status"]) in ("PENDING", "RUNNING"):
                time.sleep(0.2)
            if status != "SUCCEEDED":
                raise SystemExit(f"event {event_id}: {status}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", default="1-2", help="a range of conversation numbers, e.g. 1-2")
    args = parser.parse_args()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    samples = [data[i] for i in conversations(args.conversations, len(data))]
    ways = {"process_memory + memory tool search": through_process_memory,
            "mem0 MemoryClient -> forest serve": through_memory_client,
            "forest.compat.mem0.Memory": through_compat_memory}
    recall = {}
    with tempfile.TemporaryDirectory() as root:
        for n, (way, run) in enumerate(ways.items()):
            began = time.perf_counter()
            per_question = [s for conversation in run(samples, Path(root) / f"store{n}") for s in conversation]
            recall[way] = statistics.mean(per_question)
            print(f"{way}: recall@{TOP_K} {recall[way]:.3f} over {len(per_question)} questions "
                  f"({time.perf_counter() - began:.0f} s)", file=sys.stderr)
    print(f"LoCoMo conversations {args.conversations}, recall@{TOP_K} (any evidence turn among the {TOP_K}):")
    print("| way | recall@5 |\n|---|---|")
    for way, value in recall.items():
        print(f"| {way} | {value:.3f} |")
    print(f"largest difference between ways: {max(recall.values()) - min(recall.values()):.3f}")


if __name__ == "__main__":
    main()
