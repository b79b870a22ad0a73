"""Processes the tests and benches start: the `forest` CLI's environment, `forest serve` on a free
port, waiting for its /health, and stopping what was started."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def start_serve(data_dir: Path, env: dict[str, str], *args: str) -> tuple[subprocess.Popen, str]:
    """`forest serve --transport http` on a free port with `env`, once it answers /health; its log
    beside data_dir."""
    port = free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir.parent / f"serve-{port}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen([str(Path(sys.executable).parent / "forest"), "serve", "--transport", "http",
                                    "--port", str(port), *args], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    if not answers_health(url, lambda: process.poll() is None, 120):
        died = process.poll() is not None
        process.kill()
        assert not died, log_path.read_text()
        raise AssertionError("forest serve did not answer /health within 120 s")
    return process, url


def answers_health(url: str, alive: Callable[[], bool], seconds: float) -> bool:
    """Whether the server at `url` answers /health within `seconds`, polled while `alive()`."""
    import httpx

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and alive():
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return True
        except httpx.HTTPError:
            time.sleep(0.2)
    return False


def stop_process(process: subprocess.Popen, seconds: float = 60) -> None:
    """Terminate a process the test started, killing it if it does not end within `seconds`."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def forest_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """Environment for running the `forest` CLI as a subprocess on `data_dir`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FOREST_", "CHROMA_", "ANTHROPIC_"))}
    env.update({"FOREST_DATA_DIR": str(data_dir), **extra})
    return env
