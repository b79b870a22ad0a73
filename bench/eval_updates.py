"""Precision and recall of superseding on labelled (earlier, later) statement pairs from real
conversation, on dev and held-out, for this checkout and a base commit in the same run, with McNemar.
Three sets (bench/update_sets.py; how each was chosen and labelled, its source and license are in
the file):
- locomo: bench/data/update_pairs.json, LoCoMo turns of one speaker about one attribute (4 changes);
- cdconv: bench/data/update_pairs_cdconv.json, Chinese chatbot statements from CDConv whose later
  one its annotators marked as contradicting the earlier (half) or not (half);
- multiwoz: bench/data/update_pairs_multiwoz.json, English turns of one MultiWOZ visitor whose
  annotated wishes change value (half: "19:00" then "actually let's try 18:00") or only grow.

Each pair is written as its speaker would say it, through process_memory and the write worker (the
privacy filter off, offline models): the earlier turn, then the later one, for a user of its own.
A pair is predicted superseded when the later write changed the earlier memory: its history has an
UPDATE or DELETE, or it states fewer facts than before (today's rules retire single facts).

Run: `python -m bench.eval_updates [--against main] [--set locomo|cdconv|multiwoz|all]
[--split dev|heldout] [--llm-url URL --llm-model M]` (the base runs from a temporary git worktree through bench/baseline.py; `--against
none` measures this checkout only). With `--llm-url` the new rules are measured a second time with
that OpenAI-compatible server deciding (`local`: llama.cpp's server on Gemma 3 270M, from the
`llm-server` extra: a base model of 270M parameters, which shows the path works, not what a capable
model decides).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.update_sets import SETS, SPLITS, load_pairs

# A write with a small local model deciding makes two requests of up to a few hundred tokens each.
WRITE_SECONDS = 1800
LOCAL_MAX_TOKENS = 256


def predict(pairs: list[dict[str, Any]], **llm: Any) -> list[bool]:
    """Whether this checkout's write path supersedes the earlier statement of each pair (`llm`:
    settings of an LLM to decide, e.g. llm="openai", llm_base_url=..., llm_model=...)."""
    from forest import MemoryForest
    from forest.config import load_settings

    with tempfile.TemporaryDirectory(prefix="forest-updates-") as tmp:
        settings = load_settings({"data_dir": Path(tmp) / "store"}, environ={}).replace(memory_privacy_filter=False,
                                                                                       **llm)
        forest = MemoryForest(settings)
        personal, predicted = forest.personal, []
        try:
            for n, pair in enumerate(pairs):
                user = f"{pair['speaker'].lower()}-{n}"
                personal.process_memory(user, pair["earlier"], observed_at=1_000_000.0)
                written(personal)
                earlier = [m.id for m in personal.store.memories(user)]
                facts_before = sum(len(f) for f in personal.store.facts_of(user, earlier).values())
                personal.process_memory(user, pair["later"], observed_at=1_000_000.0 + 86_400)
                written(personal)
                changed = any(e.event in ("UPDATE", "DELETE") for m in earlier for e in personal.store.history(user, m))
                facts_after = sum(len(f) for f in personal.store.facts_of(user, earlier).values())
                predicted.append(changed or facts_after < facts_before)
                if llm and (n + 1) % 25 == 0:   # a small local model takes seconds a pair
                    print(f"  {n + 1} of {len(pairs)} pairs decided with {llm.get('llm_model')}", file=sys.stderr,
                          flush=True)
        finally:
            personal.stop()
            forest.close()
    return predicted


def written(personal: Any) -> None:
    """Wait for the write queue; a write a slow model keeps longer than WRITE_SECONDS stops the run."""
    if not personal.drain(WRITE_SECONDS):
        raise SystemExit(f"a write was not done within {WRITE_SECONDS} s")


def scores(pairs: list[dict[str, Any]], predicted: list[bool]) -> dict[str, float | int]:
    truth = [p["should_supersede"] for p in pairs]
    tp = sum(t and p for t, p in zip(truth, predicted))
    fp = sum(p and not t for t, p in zip(truth, predicted))
    fn = sum(t and not p for t, p in zip(truth, predicted))
    return {"pairs": len(pairs), "positives": sum(truth), "tp": tp, "fp": fp, "fn": fn,
            "precision": tp / (tp + fp) if tp + fp else float("nan"),
            "recall": tp / (tp + fn) if tp + fn else float("nan")}


def report(pairs: list[dict[str, Any]], versions: dict[str, list[bool]], splits: list[str]) -> None:
    """P/R of each version per split (of `splits`), and McNemar on the pairs each gets right, of each
    version against the first."""
    from bench.flat_baselines import mcnemar_exact
    for split in splits:
        index = [i for i, p in enumerate(pairs) if p["split"] == split]
        part = [pairs[i] for i in index]
        print(f"{split}: {len(part)} pairs, {sum(p['should_supersede'] for p in part)} should supersede")
        right = {}
        for name, predicted in versions.items():
            got = [predicted[i] for i in index]
            s = scores(part, got)
            right[name] = [g == p["should_supersede"] for g, p in zip(got, part)]
            print(f"  {name:<14} precision {s['precision']:.3f}  recall {s['recall']:.3f}  "
                  f"(tp {s['tp']}, fp {s['fp']}, fn {s['fn']})")
        (a, ra), *others = right.items()
        for b, rb in others:
            only_a, only_b, p = mcnemar_exact(ra, rb)
            print(f"  McNemar (right per pair): {a} only {only_a}, {b} only {only_b}, p = {p:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="main", help="git ref of today's rules, or 'none'")
    parser.add_argument("--set", default="all", choices=[*SETS, "all"], help="which labelled set to measure")
    parser.add_argument("--split", default="all", choices=[*SPLITS, "all"], help="which split to measure")
    parser.add_argument("--llm-url", help="also measure the new rules with an OpenAI-compatible server deciding "
                        "(its API root, e.g. http://127.0.0.1:8080/v1); 'local': start llama.cpp's on Gemma 3 270M")
    parser.add_argument("--llm-model", default="", help="the model the --llm-url server answers as")
    parser.add_argument("--json-out", help="'-': print this checkout's predictions as JSON (used for the base run)")
    args = parser.parse_args()
    chosen = list(SETS) if args.set == "all" else [args.set]
    splits = list(SPLITS) if args.split == "all" else [args.split]
    sets = {name: [p for p in load_pairs(SETS[name]) if p["split"] in splits] for name in chosen}
    ours = {name: predict(pairs) for name, pairs in sets.items()}
    if args.json_out == "-":
        json.dump({"predicted": ours}, sys.stdout)
        return
    base: dict[str, list[bool]] = {}
    if args.against != "none":
        from bench.baseline import measure_against
        base = measure_against(args.against, Path(__file__).resolve(),
                                 ["--set", args.set] + (["--split", args.split] if args.split != "all" else []))["predicted"]
    decided = with_llm(sets, args.llm_url, args.llm_model) if args.llm_url else {}
    for name, pairs in sets.items():
        if len(sets) > 1:
            print(f"== {name} ({SETS[name].name})")
        versions = {f"today ({args.against})": base[name]} if base else {}
        report(pairs, {**versions, "new": ours[name], **{label: got[name] for label, got in decided.items()}},
               splits)


def with_llm(sets: dict[str, list[dict[str, Any]]], url: str, model: str) -> dict[str, dict[str, list[bool]]]:
    """label -> set -> this checkout's predictions with the LLM at `url` deciding ('local': llama.cpp's
    server on Gemma 3 270M, started for the run from the `llm-server` extra)."""
    with contextlib.ExitStack() as stack:
        settings = {"llm": "openai", "llm_base_url": url, "llm_model": model}
        if url == "local":
            from testkit.llama_server import MODEL_ALIAS, LlamaServer, missing
            if missing():
                sys.exit(f"--llm-url local needs {' and '.join(missing())}: `make llm-server`")
            scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="forest-updates-llm-"))
            server = stack.enter_context(LlamaServer(Path(scratch)))
            # a base model rambles to its token cap: LOCAL_MAX_TOKENS keeps each request to seconds
            settings = {**settings, "llm_base_url": server.url, "llm_model": MODEL_ALIAS,
                        "llm_max_tokens": LOCAL_MAX_TOKENS}
        label = f"new, {settings['llm_model'] or url} deciding"
        return {label: {name: predict(pairs, **settings) for name, pairs in sets.items()}}

if __name__ == "__main__":
    main()
