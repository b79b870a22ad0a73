"""Secrets are redacted before storage (issue 16): never in the SQLite file (memories, queue,
history, BM25 index, vectors are all in it), the logs, the debug trace, or a request to Claude
(the local Messages API server); ordinary numbers stay."""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from eval_redaction import CASES, evaluate  # noqa: E402

from forest.llm import ClaudeJSON
from forest.personal.redact import redact
from forest.personal.service import PersonalMemory

SECRETS = {"123-45-6789": "My SSN is 123-45-6789.", "4321": "My PIN is 4321 for the bank card.",
           "Tr0ub4dor&3": "my email password is Tr0ub4dor&3", "4111 1111 1111 1111": "card 4111 1111 1111 1111 exp 09/27",
           "11010519491231002X": "我的身份证号码是11010519491231002X"}


def test_the_labelled_set_has_secrets_and_look_alikes_and_scores_high():
    cases = json.loads(CASES.read_text(encoding="utf-8"))
    assert len(cases) >= 60 and sum(bool(c["secrets"]) for c in cases) >= 30 and sum(bool(c["keep"]) for c in cases) >= 30
    result = evaluate(cases)
    assert result["recall"] >= 0.95 and result["precision"] >= 0.95, result["problems"]


@pytest.mark.parametrize("text, placeholder", [("my PIN is 4321", "my PIN is [PIN]"),
                                               ("My SSN is 123-45-6789", "My SSN is [GOVERNMENT_ID]"),
                                               ("我的银行卡密码是889900", "我的银行卡密码是[PASSWORD]")])
def test_the_fact_of_having_a_secret_is_kept_with_a_typed_placeholder(text, placeholder):
    assert redact(text).text == placeholder


@pytest.mark.parametrize("text", ["Call me at 415-555-0132", "I was born in 1987", "order 112-3344556-7788990",
                                  "我的手机号是13800138000", "My lucky number is 4242", "Room 1204, zip 94110"])
def test_ordinary_numbers_stay(text):
    assert redact(text).text == text


def _raw_store(forest) -> bytes:
    folder = Path(forest.db.path).parent
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_a_secret_never_reaches_the_store_the_logs_or_claude(make_forest, caplog):
    forest = make_forest(memory_privacy_filter=True)
    caplog.set_level(logging.DEBUG)
    with FakeAnthropic() as fake:
        llm = ClaudeJSON("test-key", "claude-test", retries=0, base_url=fake.url)
        personal = PersonalMemory(forest.db, forest.embedder, forest.settings, llm)
        try:
            for text in SECRETS.values():
                personal.process_memory("u1", text)
            personal.memory_tool("add", "u1", text="my account number is 000123456789")
            trace = personal.debug_process_memory("u1", "My PIN is 4321, remember that.")
            assert personal.drain(60)
            update = personal.memory_tool("update", "u1", memory_id=personal.memories("u1")[0].id,
                                          text="new password: Qwerty!234")
            assert update["status"] == "success"
        finally:
            personal.stop()
        requests = json.dumps(fake.requests, ensure_ascii=False)
    assert fake.requests, "Claude was asked about the inputs"
    stored = [m.memory for m in personal.memories("u1")]
    assert any("[PIN]" in m for m in stored) and any("[GOVERNMENT_ID]" in m for m in stored)
    forest.db.close()
    raw = _raw_store(forest)
    for secret in [*SECRETS, "000123456789", "Qwerty!234"]:
        assert secret.encode() not in raw, f"{secret} in the data folder"
        assert secret not in requests, f"{secret} sent to Claude"
        assert secret not in caplog.text and secret not in trace
