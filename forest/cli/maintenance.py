"""Upkeep commands: doctor, reembed, config."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from forest.cli.common import EXIT_ERROR, add_command, emit

if TYPE_CHECKING:
    from forest.config import Settings
    from forest.service import MemoryForest


def register(subparsers: argparse._SubParsersAction) -> None:
    doctor = add_command(subparsers, "doctor", check_stores, help="report (and repair) drift between the stores")
    doctor.add_argument("--repair", action="store_true")

    reembed = add_command(subparsers, "reembed", reembed_events,
                          help="re-embed a model_id's episodic events with the configured embedder")
    reembed.add_argument("--model-id", required=True)

    config = add_command(subparsers, "config", None, help="print the configuration in force")
    config.set_defaults(run_without_engine=show_config)  # the settings alone: the engine is not loaded


def check_stores(forest: MemoryForest, args: argparse.Namespace) -> int:
    report = forest.doctor(repair_drift=args.repair).to_dict()

    def text(r: dict[str, Any]) -> str:
        q = r["write_queue"]
        queue = (f"personal write queue: {q['pending']} pending ({q['retrying']} waiting to retry), "
                 f"{q['done']} done, {q['failed']} failed" + (f"; newest error: {q['last_error']}" if q["last_error"] else ""))
        if r["healthy"]:
            return f"healthy: SQLite and the vector store agree\n{queue}\n"
        lines = [queue, f"stale builds (archives): {r['stale_builds']}" if r["stale_builds"] else "",
                 *(f"vectors without a node ({m}): {len(ids)}" for m, ids in r["orphan_vectors"].items()),
                 *(f"nodes without a vector ({m}): {len(ids)}" for m, ids in r["missing_vectors"].items()),
                 f"nodes with a wrong path or depth: {len(r['bad_paths'])}" if r["bad_paths"] else "",
                 *(f"readable by other users: {entry}" for entry in r["loose_permissions"]),
                 *(f"archive {a} has malformed settings: {'; '.join(problems)}"
                   for a, problems in r["bad_settings"].items()),
                 "repaired" if r["repaired"] else "run `forest doctor --repair` to fix"]
        return "\n".join(line for line in lines if line) + "\n"

    emit(args, report, text)
    return 0 if report["healthy"] or report["repaired"] else EXIT_ERROR


def reembed_events(forest: MemoryForest, args: argparse.Namespace) -> int:
    done = {"model_id": args.model_id, "events_reembedded": forest.research.reembed(args.model_id)}
    return emit(args, done, lambda d: f"re-embedded {d['events_reembedded']} episodic events of {d['model_id']}\n")


def show_config(settings: Settings, args: argparse.Namespace) -> int:
    return emit(args, settings.describe(), lambda described: "".join(
        f"{key} = {value}\n" for key, value in described.items()))
