"""`forest postgres start|stop|status`: a local PostgreSQL with pgvector for trying the server stack
without Docker (forest.storage.sql.local_postgres); production runs a PostgreSQL server of its own."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from forest.cli.common import add_command, add_group, emit

if TYPE_CHECKING:
    from forest.config import Settings

DATABASE = "forest"


def register(subparsers: argparse._SubParsersAction) -> None:
    actions = add_group(subparsers, "postgres", help="a local PostgreSQL with pgvector (start, stop, status)")
    for name, run, help in (("start", start, "start it (made on first start) and print the settings that use it"),
                            ("stop", stop, "stop it"),
                            ("status", status, "whether it runs, and its URL")):
        command = add_command(actions, name, None, help=help)
        command.add_argument("--dir", type=Path, help="its directory (default: postgres/ beside the data directory)")
        command.set_defaults(run_without_engine=run)


def _server(settings: Settings, args: argparse.Namespace):
    from forest.storage.sql.local_postgres import LocalPostgres

    return LocalPostgres(args.dir or Path(settings.data_dir).resolve().parent / "postgres")


def _settings_lines(url: str) -> str:
    return f"  FOREST_DATABASE_URL='{url}'\n  FOREST_VECTOR_STORE=pgvector\n"


def start(settings: Settings, args: argparse.Namespace) -> int:
    server = _server(settings, args)
    server.start()
    url = server.create_database(DATABASE)
    return emit(args, {"running": True, "directory": str(server.directory), "database_url": url},
                lambda r: f"PostgreSQL with pgvector runs in {r['directory']}; use it with\n"
                          f"{_settings_lines(r['database_url'])}")


def stop(settings: Settings, args: argparse.Namespace) -> int:
    server = _server(settings, args)
    stopped = server.stop()
    return emit(args, {"stopped": stopped, "directory": str(server.directory)},
                lambda r: f"stopped PostgreSQL in {r['directory']}\n" if r["stopped"]
                else f"no PostgreSQL was running in {r['directory']}\n")


def status(settings: Settings, args: argparse.Namespace) -> int:
    server = _server(settings, args)
    running = server.running()
    url = server.url(DATABASE) if running else None
    return emit(args, {"running": running, "directory": str(server.directory), "database_url": url},
                lambda r: f"PostgreSQL runs in {r['directory']}:\n{_settings_lines(r['database_url'])}" if r["running"]
                else f"no PostgreSQL runs in {r['directory']} (`forest postgres start` starts it)\n")
