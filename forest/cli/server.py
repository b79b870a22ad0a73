"""`forest serve`: the tools over MCP (stdio or HTTP, with REST and an OpenAI-compatible endpoint)."""
from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from forest.cli.common import add_command
from forest.errors import ConfigError

if TYPE_CHECKING:
    from forest.service import MemoryForest


def register(subparsers: argparse._SubParsersAction) -> None:
    serve = add_command(subparsers, "serve", serve_tools,
                        help="serve the tools over MCP (stdio or HTTP, with REST and an OpenAI-compatible endpoint)")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--host", help="HTTP bind address (default: server_host, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default: server_port, 8765)")
    serve.add_argument("--workers", type=int, default=1,
                       help="HTTP worker processes on the port (more than 1 needs a server database)")
    # A long-running owner of the store searches Chroma's own index, not the snapshots a short
    # command reads (which spare it the chromadb import).
    serve.set_defaults(vector_snapshots=False)


def serve_tools(forest: MemoryForest, args: argparse.Namespace) -> int:
    from forest.serving.http import serve_http, serve_http_workers, serve_stdio

    host, port = args.host or forest.settings.server_host, args.port or forest.settings.server_port
    if args.workers > 1:
        if args.transport != "http" or not forest.settings.server_database:
            raise ConfigError("--workers needs --transport http and a server database (database_url): an "
                              "embedded store serves one process")
        # Each worker opens the store itself from the environment, as this process did.
        os.environ.update({"FOREST_DATA_DIR": str(forest.settings.data_dir), "FOREST_SERVER_HOST": host})
        forest.close()
        serve_http_workers(host, port, args.workers)
        return 0
    forest.own_store()
    if args.transport == "stdio":
        serve_stdio(forest)
    else:
        serve_http(forest, host, port)
    return 0
