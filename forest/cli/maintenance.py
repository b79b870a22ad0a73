"""Upkeep commands: doctor, reembed, store copy, models, config."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forest.cli.common import EXIT_ERROR, ProgressBar, add_command, add_group, emit
from forest.errors import ConfigError

if TYPE_CHECKING:
    from forest.config import Settings
    from forest.service import MemoryForest


def register(subparsers: argparse._SubParsersAction) -> None:
    doctor = add_command(subparsers, "doctor", check_stores, help="report (and repair) drift between the stores")
    doctor.add_argument("--repair", action="store_true")

    reembed = add_command(subparsers, "reembed", reembed_model_id,
                          help="re-embed a model_id (its nodes and episodic events) with the configured embedder, "
                               "after a change of embedder")
    reembed.add_argument("--model-id", required=True)
    reembed.add_argument("--no-progress", action="store_true")

    store = add_group(subparsers, "store", help="move the whole store (copy)")
    copy = add_command(store, "copy", copy_store, help="copy the store into an empty one: SQLite + Chroma to "
                       "PostgreSQL + pgvector or Qdrant, and back; vectors are copied, not embedded again")
    copy.add_argument("--to-database", metavar="URL",
                      help="the target database (postgresql://... or sqlite:///...); default: the SQLite file "
                           "of --to-data-dir")
    copy.add_argument("--to-vector-store", choices=("chroma", "pgvector", "qdrant"),
                      help="default: pgvector with a PostgreSQL target, else chroma (embedded in --to-data-dir)")
    copy.add_argument("--to-qdrant-url", metavar="URL", help="the Qdrant server (or local directory) to copy into")
    copy.add_argument("--to-data-dir", type=Path,
                      help="the target's data directory (kept PDFs; an embedded Chroma and SQLite); default: this one")
    copy.set_defaults(vector_snapshots=False)

    models = add_command(subparsers, "models", None, help="the installed models and stores by kind, those in "
                         "force, and (--check) whether the configured embedder and LLM answer")
    models.add_argument("--check", action="store_true", help="send the configured embedder and LLM one request each")
    models.set_defaults(run_without_engine=show_models)

    config = add_command(subparsers, "config", None, help="print the configuration in force")
    config.set_defaults(run_without_engine=show_config)  # the settings alone: the engine is not loaded


def check_stores(forest: MemoryForest, args: argparse.Namespace) -> int:
    report = forest.doctor(repair_drift=args.repair).to_dict()

    def text(r: dict[str, Any]) -> str:
        q = r["write_queue"]
        queue = (f"personal write queue: {q['pending']} pending ({q['retrying']} waiting to retry), "
                 f"{q['done']} done, {q['failed']} failed" + (f"; newest error: {q['last_error']}" if q["last_error"] else ""))
        if r["healthy"]:
            return f"healthy: the database and the vector store agree\n{queue}\n"
        lines = [queue, f"stale builds (archives): {r['stale_builds']}" if r["stale_builds"] else "",
                 *(f"vectors without a node ({m}): {len(ids)}" for m, ids in r["orphan_vectors"].items()),
                 *(f"nodes without a vector ({m}): {len(ids)}" for m, ids in r["missing_vectors"].items()),
                 f"nodes with a wrong path or depth: {len(r['bad_paths'])}" if r["bad_paths"] else "",
                 *(f"readable by other users: {entry}" for entry in r["loose_permissions"]),
                 *(f"archive {a} has malformed settings: {'; '.join(problems)}"
                   for a, problems in r["bad_settings"].items()),
                 *(f"graph mirror drift for user {user}: {d['missing']} missing, {d['extra']} extra, "
                   f"{d['stale']} stale edges" for user, d in r["graph_drift"].items()),
                 f"graph mirror unreachable: {r['graph_error']}" if r["graph_error"] else "",
                 "repaired" if r["repaired"] else "run `forest doctor --repair` to fix"]
        return "\n".join(line for line in lines if line) + "\n"

    emit(args, report, text)
    return 0 if report["healthy"] or report["repaired"] else EXIT_ERROR


def reembed_model_id(forest: MemoryForest, args: argparse.Namespace) -> int:
    with ProgressBar(not args.no_progress and sys.stderr.isatty(), f"reembed {args.model_id}") as bar:
        done = forest.reembed(args.model_id, progress=bar.update)
    return emit(args, done, lambda d: (
        f"re-embedded {d['nodes_reembedded']} nodes and {d['events_reembedded']} episodic events of "
        f"{d['model_id']} with {d['embedder']} ({d['vectors_of_other_embedders_dropped']} vectors of another "
        "embedder dropped)\n"))


def show_models(settings: Settings, args: argparse.Namespace) -> int:
    from forest.models import catalog

    report: dict[str, Any] = {"installed": catalog.installed(settings)}
    if args.check:
        report["checked"] = catalog.check(settings)

    def text(r: dict[str, Any]) -> str:
        lines = [f"{p['kind']:<13} {p['name']:<14} {'* in use' if p['in_use'] else '':<9} {p['package'] or ''}"
                 for p in r["installed"]]
        for c in r.get("checked", []):
            where = f" at {c['url']}" if c.get("url") else ""
            what = f"{c['provider']}" + (f" {c['model']}" if c.get("model") else "") + where
            how = f"; structure asked as {c['structured_output']}" if c.get("structured_output") else ""
            if c.get("refused_forms"):
                how += f", the server having refused {', '.join(c['refused_forms'])}"
            lines.append(f"{c['kind']}: {what}: " + (f"answers ({c['ms']} ms{how})" if c["ok"] else f"FAILED: {c['error']}"))
        return "\n".join(lines) + "\n"

    emit(args, report, text)
    return 0 if all(c["ok"] for c in report.get("checked", [])) else EXIT_ERROR


def show_config(settings: Settings, args: argparse.Namespace) -> int:
    return emit(args, settings.describe(), lambda described: "".join(
        f"{key} = {value}\n" for key, value in described.items()))


def copy_store(forest: MemoryForest, args: argparse.Namespace) -> int:
    if not args.to_database and not args.to_data_dir:
        raise ConfigError("name the target: --to-database URL, --to-data-dir DIR, or both")
    server = bool(args.to_database) and not args.to_database.startswith("sqlite:")
    target = forest.settings.replace(
        database_url=args.to_database or f"sqlite:///{Path(args.to_data_dir).resolve() / 'forest.sqlite3'}",
        vector_store=args.to_vector_store or ("pgvector" if server else "chroma"),
        qdrant_url=args.to_qdrant_url, data_dir=args.to_data_dir)
    if target.vector_store == "chroma" and target.chroma_path == forest.settings.chroma_path \
            and not target.chroma_host:
        raise ConfigError("the target's embedded Chroma would be this store's own: give --to-data-dir")
    with ProgressBar(sys.stderr.isatty() and not args.json, "copy") as bar:
        report = forest.copy_store(target, bar.update)
    checks = report["checks"]
    return emit(args, report, lambda r: (
        f"copied {sum(r['rows'].values()):,} rows and {sum(r['vectors'].values()):,} vectors; checked: rows and "
        f"vectors equal, {checks['found_by_own_vector']} of {checks['nodes_searched']} sampled nodes found first by "
        "their own vectors\n"))
