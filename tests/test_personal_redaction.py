"""Secrets are redacted before storage: never in the SQLite file (memories, queue, history, BM25
index, vectors are all in it), the logs, the debug trace, or a request to Claude (the local
Messages API server), neither in the text nor in metadata; an id holding one is refused;
ordinary numbers stay."""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from bench.eval_redaction import evaluate, load
from testkit.fake_anthropic import FakeAnthropic
from forest.models.claude import ClaudeLLM
from forest.redaction import redact
from forest.personal.service import PersonalMemory

JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MiIsIm5hbWUiOiJBbm4ifQ"
       ".dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk")
SECRETS = {"123-45-6789": "My SSN is 123-45-6789.", "4321": "My PIN is 4321 for the bank card.",
           "Tr0ub4dor&3": "my email password is Tr0ub4dor&3", "4111 1111 1111 1111": "card 4111 1111 1111 1111 exp 09/27",
           "11010519491231002X": "我的身份证号码是11010519491231002X",
           # what the store kept in clear before the scanner and the rules it measured
           "4471": "My bank card PIN number's 4471",
           "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY": "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
           "correcthorsebatterystaple": "The password at my home is correcthorsebatterystaple",
           "de89 3704 0044 0532 0130 00": "my iban is de89 3704 0044 0532 0130 00",
           "S3cr3tPr0d": "the db is postgres://admin:S3cr3tPr0d@db.example.com:5432/app",
           "sk_live_4eC39HqLyjWDarjtT1zdp7dcTYooMQauvdEDq54NiTphI7jx":
               "billing key sk_live_4eC39HqLyjWDarjtT1zdp7dcTYooMQauvdEDq54NiTphI7jx",
           JWT: f"my session token is {JWT}"}


def test_the_labelled_set_has_a_held_out_part_and_scores_high_on_both():
    dev, held_out = load("dev"), load("held_out")
    for part in (dev, held_out):
        assert sum(len(c["secrets"]) for c in part) >= 40 and sum(len(c["keep"]) for c in part) >= 40
    result = evaluate(dev)
    assert result["recall"] >= 0.95 and result["precision"] >= 0.95, result["problems"]
    # held out: never tuned on; a floor under what bench/eval_redaction.py measured, against regressions
    result = evaluate(held_out)
    assert result["recall"] >= 0.8 and result["precision"] >= 0.9, result["problems"]


@pytest.mark.parametrize("text, placeholder", [("my PIN is 4321", "my PIN is [PIN]"),
                                               ("My SSN is 123-45-6789", "My SSN is [GOVERNMENT_ID]"),
                                               ("我的银行卡密码是889900", "我的银行卡密码是[PASSWORD]")])
def test_the_fact_of_having_a_secret_is_kept_with_a_typed_placeholder(text, placeholder):
    assert redact(text).text == placeholder


@pytest.mark.parametrize("text", ["Call me at 415-555-0132", "I was born in 1987", "order 112-3344556-7788990",
                                  "我的手机号是13800138000", "My lucky number is 4242", "Room 1204, zip 94110",
                                  "request 9b2f4c7a-1d3e-4f5a-8b6c-7d8e9f0a1b2c failed", "fixed in a94a8fe5cc"])
def test_ordinary_numbers_and_ids_stay(text):
    assert redact(text).text == text


def test_metadata_values_are_redacted_and_an_id_holding_a_secret_is_refused(personal):
    reply = personal.memory_tool("add", "ann", text="I moved to Porto", metadata={"note": "wifi password: Porto#2024"}).to_dict()
    assert reply["status"] == "success"
    assert personal.memories("ann")[0].metadata == {"note": "wifi password: [PASSWORD]"}
    personal.process_memory("ann", "I like the beach", metadata={"source": "key sk_live_4eC39HqLyjWDarjtT1zdp7dcTYoo"})
    assert personal.drain()
    stored = json.dumps([m.metadata for m in personal.memories("ann")])
    assert "sk_live" not in stored and "[API_KEY]" in stored
    for scope in ({"agent_id": "sk_live_4eC39HqLyjWDarjtT1zdp7dcTYooMQau"}, {"run_id": JWT}):
        refused = personal.memory_tool("add", "ann", text="I like tea", **scope).to_dict()
        assert refused["status"] == "fallback" and "looks like a secret" in refused["payload"]["error"]
    with pytest.raises(Exception, match="looks like a secret"):
        personal.process_memory("ann", "I like tea", agent_id="AKIAIOSFODNN7EXAMPLE")
    assert personal.memory_tool("add", "ann", text="I like tea", run_id="9b2f4c7a-1d3e-4f5a-8b6c-7d8e9f0a1b2c").to_dict()[
        "status"] == "success"  # a UUID is an ordinary id


def _raw_store(forest) -> bytes:
    folder = Path(forest.db.path).parent
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_a_secret_never_reaches_the_store_the_logs_or_claude(make_forest, caplog):
    forest = make_forest(memory_privacy_filter=True)
    caplog.set_level(logging.DEBUG)
    with FakeAnthropic() as fake:
        fake.respond = lambda prompt: json.dumps({"label": "PRIVATE", "reason": "about the user"}
                                                 if "PRIVATE" in prompt else {"triples": []})
        llm = ClaudeLLM("test-key", "claude-test", retries=0, base_url=fake.url)
        personal = PersonalMemory(forest.db, forest.embedder, forest.settings, llm)
        try:
            for text in SECRETS.values():
                personal.process_memory("u1", text)
            personal.memory_tool("add", "u1", text="my account number is 000123456789")
            trace = personal.debug_process_memory("u1", "My PIN is 4321, remember that.")
            assert personal.drain(60)
            update = personal.memory_tool("update", "u1", memory_id=personal.memories("u1")[0].id,
                                          text="new password: Qwerty!234").to_dict()
            assert update["status"] == "success"
        finally:
            personal.stop()
        requests = json.dumps(fake.requests, ensure_ascii=False)
    assert fake.requests, "Claude was asked about the inputs"
    stored = [m.memory for m in personal.memories("u1")]
    assert any("[PIN]" in m for m in stored) and any("[GOVERNMENT_ID]" in m for m in stored)
    forest.db.close()
    raw = _raw_store(forest)
    # the SDK's debug log carries a random idempotency key (a UUID), whose hex may spell a PIN
    logs = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", caplog.text)
    for secret in [*SECRETS, "000123456789", "Qwerty!234"]:
        assert secret.encode() not in raw, f"{secret} in the data folder"
        assert secret not in requests, f"{secret} sent to Claude"
        assert secret not in logs and secret not in trace
