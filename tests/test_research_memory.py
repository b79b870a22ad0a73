"""Research memory (DeepScholar spec) on real stores: episodic recall with decay, the briefing's budget
and folding, semantic knowledge with history, compaction, conflicts reconciled in a session, and
the Claude paths against the local Messages API server."""
from __future__ import annotations

import json
import math

import pytest

from testkit.fake_anthropic import FakeAnthropic
from forest import InvalidInput
from forest.cli import main as cli
from forest.errors import ConfigError, NotFound
from forest.models.claude import ClaudeLLM
from forest.research.briefing import HEADERS, build_briefing
from forest.research.claims import Statement
from forest.research.episodic import DAY, retention
from forest.research.memory import ResearchMemory
from forest.research.reconcile import Reconciler
from forest.validation import parse_time_range

NOW = 1_800_000_000.0  # a fixed "now" (2027-01-15); tests move the clock by hand

FEW_SHOT_GAIN = ("Feature fusion in the few-shot setting. With 5 labelled examples per class on miniImageNet, "
                 "feature fusion improves accuracy to 85.2%, a clear gain over the single-branch baseline.")
FEW_SHOT_NO_GAIN = ("Feature fusion in the few-shot setting. With 5 labelled examples per class on miniImageNet, "
                    "feature fusion does not improve accuracy: it stays at 78.1%, no better than the "
                    "single-branch baseline.")


class Clock:
    def __init__(self, at: float = NOW) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at

    def advance(self, days: float) -> None:
        self.at += days * DAY


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def research(make_forest, tmp_path, clock) -> ResearchMemory:
    forest = make_forest(core_file=str(tmp_path / "CORE.md"), briefing_max_lines=10, session_token_limit=600)
    memory = forest.research
    memory.clock = clock
    return memory


def test_retention_follows_ebbinghaus_and_recall_strengthens(research, clock):
    assert retention(0, 7) == 1.0 and retention(7 * DAY, 7) == pytest.approx(math.exp(-1))
    old = research.record("ann", "s1", "finding", "Dropout of 0.1 worked best for the transformer encoder.")
    clock.advance(30)
    new = research.record("ann", "s1", "finding", "Dropout of 0.1 worked best for the transformer encoder!")
    found = research.search_episodic("ann", "best dropout rate for the encoder", top_k=2)
    assert [f.event.id for f in found] == [new, old]  # equally similar: the older one has faded
    assert found[1].retention == pytest.approx(math.exp(-30 / 7), rel=1e-3)
    assert found[0].score == pytest.approx(found[0].similarity * found[0].retention)
    # Both were recalled just now: S doubled and the clock restarted for both, and the results say
    # so (a result shown next to "recalled 0" had just been counted).
    events = {e.id: e for e in research.store.events("ann")}
    assert events[old].recall_count == 1 and events[old].stability_days == pytest.approx(14)
    assert [(f.event.recall_count, f.event.stability_days) for f in found] == [(1, pytest.approx(14))] * 2
    clock.advance(14)
    again = {f.event.id: f for f in research.search_episodic("ann", "best dropout rate for the encoder", top_k=2)}
    assert again[old].retention == pytest.approx(math.exp(-1), rel=1e-3)


def test_time_range_filters_and_bad_ranges_are_refused(research, clock):
    early = research.record("ann", "s1", "question", "Which optimizer did the ViT paper use?")
    clock.advance(10)
    late = research.record("ann", "s1", "question", "Which optimizer did the Swin paper use?")
    assert [f.event.id for f in research.search_episodic("ann", "optimizer", "3d")] == [late]
    since, until = parse_time_range("2026-11-01..2026-11-15", NOW)
    assert until - since == pytest.approx(15 * DAY, abs=1)  # both whole days count
    start = clock.at - 11 * DAY
    window = f"{_iso(start)}..{_iso(start + 2 * DAY)}"
    assert [f.event.id for f in research.search_episodic("ann", "optimizer", window)] == [early]
    for bad in ("yesterday", "2026-13-01..", "2026-11-15..2026-11-01"):
        with pytest.raises(InvalidInput, match="time_range|ISO"):
            research.search_episodic("ann", "optimizer", bad)


def test_briefing_keeps_the_line_budget_and_folds_old_notes_into_searchable_memory(research, clock):
    research.add_note("ann", "s1", "focus", "Compare feature fusion methods for few-shot classification")
    research.add_note("ann", "s1", "constraint", "Only 5-shot results count")
    for i in range(8):
        clock.advance(0.01)
        research.add_note("ann", "s1", "finding", f"Finding {i}: method M{i} reaches {60 + i}.0% accuracy",
                          f"node {100 + i}, p. {i + 1}")
    briefing = research.briefing("ann", "s1")
    lines = briefing.text.splitlines()
    assert len(lines) <= 10 and [h for h in HEADERS if h in lines] == list(HEADERS)
    assert "Finding 7" in briefing.text and "Finding 0" not in briefing.text  # newest kept, oldest folded
    assert "5-shot" in briefing.text and "few-shot classification" in briefing.text
    hidden = len(briefing.folded)
    assert hidden and f"{hidden} older notes folded away" in lines[-1] and "search_episodic_memory" in lines[-1]
    found = research.search_episodic("ann", "method M0 accuracy", kinds=("finding",), top_k=1)
    assert "Finding 0" in found[0].event.content and "node 100" in found[0].event.content
    # A new focus replaces the old one; both stay in episodic memory.
    research.add_note("ann", "s1", "focus", "Robustness under domain shift")
    assert "Robustness" in research.briefing("ann", "s1").text and "feature fusion methods" not in \
        research.briefing("ann", "s1").text
    with pytest.raises(ValueError):
        build_briefing([], 6)


def test_directives_come_first_and_knowledge_keeps_its_history(research, clock):
    research.save_directives("Always name the dataset with a number.")
    research.update_knowledge("ann", "Feature fusion (few-shot)", "Helps at 1-shot only.")
    clock.advance(1)
    result = research.update_knowledge("ann", "feature  fusion, FEW-SHOT", "Helps at 1-shot and 5-shot on miniImageNet.")
    assert result["version"] == 2 and result["history"][0]["conclusion"] == "Helps at 1-shot only."
    assert result["history"][0]["superseded_at"] is not None
    current = research.knowledge("ann")
    assert [k.conclusion for k in current] == ["Helps at 1-shot and 5-shot on miniImageNet."]
    research.add_note("ann", "s1", "constraint", "5-shot only")
    preamble = research.preamble("ann", "s1")
    assert preamble.index("Always name the dataset") < preamble.index("[Semantic Knowledge]") \
        < preamble.index("[Current Focus]")
    assert "Helps at 1-shot only" not in preamble and "5-shot on miniImageNet" in preamble
    with pytest.raises(NotFound):
        research.knowledge("ann", "unknown topic")
    with pytest.raises(InvalidInput):
        research.update_knowledge("ann", "  ", "x")


@pytest.mark.slow
def test_compaction_flushes_findings_and_loses_nothing(research, clock):
    filler = "We discussed the experimental setup of the paper at some length. " * 6
    reports = []
    for i in range(6):
        clock.advance(0.01)
        reports.append(research.add_message("ann", "s1", "user", f"Question {i}: what does table {i} show? {filler}"))
        clock.advance(0.01)
        reports.append(research.add_message(
            "ann", "s1", "assistant",
            f"- The model reaches {70 + i}.5% accuracy on benchmark B{i}. [node {i + 1}, p. {i + 2}]\n{filler}"))
    done = [r for r in reports if r is not None]
    assert done, "the session passed 80% of its 600-token limit and was never compacted"
    first = done[0]
    assert first.tokens_before > 0.8 * 600 and first.tokens_after < first.tokens_before
    assert first.made_by.startswith("offline")
    live = research.messages("ann", "s1")
    assert live[0].role == "summary" and "not written by an LLM" in live[0].content
    assert sum(m.tokens for m in live) <= 0.8 * 600 or len(live) <= 2
    findings = [i for i in research.workspace("ann", "s1") if i.kind == "finding"]
    assert any("70.5% accuracy" in f.text and f.source.startswith("node 1") for f in findings)
    everything = research.messages("ann", "s1", include_compacted=True)
    originals = [m for m in everything if m.role != "summary"]
    assert len(originals) == 12 and all(m.event_id for m in originals)
    old = research.search_episodic("ann", "Question 0: what does table 0 show?", top_k=3)
    assert any(f.event.content.startswith("Question 0:") for f in old)


@pytest.mark.slow
def test_a_compaction_another_writer_finished_meanwhile_is_not_done_twice(research, monkeypatch):
    monkeypatch.setattr(research, "compact_if_due", lambda *args: None)  # compaction only when asked below
    for i in range(4):
        research.add_message("ann", "s1", "user", f"What does table {i} show? " + "Setup details. " * 16)
        research.add_message("ann", "s1", "assistant", f"- Accuracy reaches {70 + i}.5% on B{i}. [node {i}, p. 2]")
    flush = research.flusher.flush

    def flush_while_another_compacts(*args, **kwargs):
        monkeypatch.setattr(research.flusher, "flush", flush)
        research.compact("ann", "s1")  # the other writer wins the race
        return flush(*args, **kwargs)

    monkeypatch.setattr(research.flusher, "flush", flush_while_another_compacts)
    report = research.compact("ann", "s1")
    assert report.compacted_message_ids == [] and "meanwhile" in report.made_by
    assert [m.role for m in research.messages("ann", "s1")].count("summary") == 1
    findings = [i.text for i in research.workspace("ann", "s1") if i.kind == "finding"]
    assert findings and len(findings) == len(set(findings))


def test_no_compaction_below_the_threshold(research):
    assert research.add_message("ann", "s1", "user", "A short question?") is None
    assert research.compact_if_due("ann", "s1") is None
    assert [m.role for m in research.messages("ann", "s1")] == ["user"]


def test_research_memory_is_isolated_by_model_id_and_session(research):
    research.add_note("ann", "s1", "finding", "Secret result of Ann: 91% accuracy")
    research.update_knowledge("ann", "topic", "Ann's conclusion")
    assert research.search_episodic("bob", "Secret result accuracy") == []
    assert research.knowledge("bob") == [] and research.workspace("bob", "s1") == []
    assert research.workspace("ann", "s2") == []
    assert research.search_episodic("ann", "Secret result", session_id="s2") == []
    assert set(research.sessions("ann")) == {"s1", "default"} and research.sessions("bob") == []
    item = research.workspace("ann", "s1")[0]
    with pytest.raises(NotFound):
        research.remove_note("bob", "s1", item.id)


@pytest.mark.slow
def test_a_session_turn_reconciles_conflicting_papers(make_forest, tmp_path):
    forest = make_forest(chunk_size=300, chunk_overlap=0, core_file=str(tmp_path / "CORE.md"))
    forest.ingest_text("ann", "Paper A", FEW_SHOT_GAIN)
    forest.ingest_text("ann", "Paper B", FEW_SHOT_NO_GAIN)
    state, turn = forest.ask_in_session("ann", "s1", "Does feature fusion improve few-shot accuracy on miniImageNet?")
    assert state.done and turn.conflicts, "the two papers contradict each other and no conflict was found"
    verdict = turn.conflicts[0]
    assert "not reviewed by an LLM" in verdict.reviewed_by
    assert {verdict.a.source, verdict.b.source} == {"Paper A", "Paper B"}    # the papers, not "archive 2"
    events = forest.research.store.events("ann", session_id="s1")
    assert sorted(e.kind for e in events) == ["ask"] + ["reconciliation"] * len(turn.conflicts)  # one per ask
    asked = next(e for e in events if e.kind == "ask")
    assert asked.content.startswith(state.question) and "Explored" not in asked.content
    assert [e["node_id"] for e in asked.data["explored"]] == [
        s.decision.node_id for s in state.steps if s.decision.action == "EXPLORE"]   # the path, in its data
    assert [m.event_id for m in forest.research.messages("ann", "s1")] == [asked.id, asked.id]
    assert [m.role for m in forest.research.messages("ann", "s1")] == ["user", "assistant"]
    assert "Conflict between Paper" in forest.research.messages("ann", "s1")[1].content


def test_new_passages_are_checked_against_the_sessions_findings(make_forest, tmp_path):
    forest = make_forest(chunk_size=300, chunk_overlap=0, core_file=str(tmp_path / "CORE.md"))
    archive = forest.ingest_text("ann", "Paper A", FEW_SHOT_GAIN)
    leaves = [n.id for n in forest.tree("ann", archive.id) if n.is_leaf]
    research = forest.research
    assert research.conflicts("ann", "s1", leaves) == []  # one paper, no findings: nothing to compare
    research.add_note("ann", "s1", "finding", "With 5 labelled examples per class on miniImageNet, feature "
                                              "fusion does not improve accuracy.", "earlier reading")
    research.add_note("ann", "s1", "finding", "Jazz began in New Orleans.")
    found = research.conflicts("ann", "s1", leaves)
    assert len(found) == 1 and found[0].kind == "negation"
    assert {found[0].a.key.split(":")[0], found[0].b.key.split(":")[0]} == {"node", "finding"}
    assert research.conflicts("ann", "other session", leaves) == []
    assert research.conflicts("bob", "s1", leaves) == []  # bob cannot reach ann's passages


def test_reconciliation_prompt_and_fallback_with_the_real_client():
    a = Statement("node:1", FEW_SHOT_GAIN, "archive 1", "p. 3")
    b = Statement("node:2", FEW_SHOT_NO_GAIN, "archive 2", "p. 5")
    reply = {"conditions_a": ["5-shot", "miniImageNet"], "conditions_b": ["5-shot", "miniImageNet"],
             "real_conflict": True, "merged_conclusion": "The gain is disputed under identical conditions.",
             "boundary_conditions": ["A: with its augmentation", "B: without"], "confidence": "medium"}
    with FakeAnthropic() as fake:
        reconciler = Reconciler(ClaudeLLM("test-key", "claude-test", retries=0, base_url=fake.url))
        fake.script = [json.dumps(reply)]
        result = reconciler.reconcile(a, b, "negation: improves vs does not improve", "[Semantic Directives]\nBe exact.")
        prompt_text = fake.requests[0]["messages"][0]["content"]
        assert prompt_text.startswith("[Semantic Directives]\nBe exact.")
        prompt = json.loads(prompt_text[prompt_text.index("{"): prompt_text.rindex("}") + 1])
        assert "reviewer" in prompt["role"] and prompt["input_data"]["passage_a"]["text"].startswith("Feature fusion")
        assert prompt["input_data"]["passage_b"]["citation"] == "p. 5"
        assert result.reviewed_by == "claude:claude-test" and result.real_conflict is True
        assert result.boundary_conditions == ["A: with its augmentation", "B: without"]
        fake.script = [json.dumps({"merged_conclusion": ""})]
        fallback = reconciler.reconcile(a, b)
        assert "not reviewed by an LLM" in fallback.reviewed_by and "fallback" in fallback.reviewed_by
        assert fallback.comparison and fallback.merged_conclusion


@pytest.mark.slow
def test_compaction_with_claude_writes_its_findings(make_forest, tmp_path, clock):
    with FakeAnthropic() as fake:
        forest = make_forest(core_file=str(tmp_path / "CORE.md"), session_token_limit=500)
        memory = ResearchMemory(forest.db, forest.store, forest.embedder, forest.vectors, forest.settings,
                                ClaudeLLM("test-key", "claude-test", retries=0, base_url=fake.url), clock)
        fake.script = [json.dumps({"findings": [{"text": "Model X: 88% on B", "source": "node 4, p. 2"}],
                                   "summary": "We compared X and Y."})]
        reports = []
        for i in range(4):
            clock.advance(0.01)
            reports.append(memory.add_message("ann", "s1", "user" if i % 2 == 0 else "assistant", "words " * 120))
        assert reports[:2] == [None, None]  # 2 x 180 tokens: under 80% of 500
        report = reports[2]
        assert report is not None and report.made_by == "claude:claude-test" and len(fake.requests) == 1
        sent = fake.requests[0]["messages"][0]["content"]
        assert "[Current Focus]" in sent and sent.index("[Current Focus]") < sent.index('"messages"')
        assert [(i.text, i.source) for i in memory.workspace("ann", "s1")] == [("Model X: 88% on B", "node 4, p. 2")]
        assert memory.messages("ann", "s1")[0].content == "We compared X and Y."


def test_the_core_file_is_beside_the_data_directory_and_the_defaults_hold_until_it_is_written(make_forest, tmp_path):
    from pathlib import Path

    from forest import load_settings

    assert load_settings(environ={}).core_path == Path("data") / "CORE.md"
    forest = make_forest(data_dir=tmp_path / "project" / "store")
    # a new data directory has no core file: the default directives are in force, and said to be
    assert not forest.research.directives_saved and "cite every claim" in forest.research.directives()
    assert "[Semantic Directives]\n# Core directives" in forest.research.preamble("m", "default")
    (tmp_path / "project" / "CORE.md").write_text("Always cite pages.", encoding="utf-8")
    assert forest.research.directives() == "Always cite pages." and forest.research.directives_saved


def test_research_settings_are_checked(make_forest):
    with pytest.raises(ConfigError):
        make_forest(briefing_max_lines=3)
    with pytest.raises(ConfigError):
        make_forest(compaction_ratio=1.5)


def test_cli_memory_commands(tmp_path, capsys):
    store = ["--data-dir", str(tmp_path / "store")]
    assert cli(["memory", "know", "fusion", "Helps at 1-shot.", "--model-id", "ann", *store]) == 0
    assert cli(["memory", "know", "Fusion", "Helps at 1- and 5-shot.", "--model-id", "ann", *store]) == 0
    capsys.readouterr()
    assert cli(["memory", "knowledge", "--topic", "fusion", "--model-id", "ann", "--json", *store]) == 0
    history = json.loads(capsys.readouterr().out)
    assert [v["version"] for v in history] == [2, 1] and history[1]["superseded_at"]
    assert cli(["memory", "note", "finding", "X beats Y by 3 points", "--model-id", "ann", "--session", "s",
                *store]) == 0
    assert cli(["memory", "brief", "--model-id", "ann", "--session", "s", *store]) == 0
    assert "X beats Y by 3 points" in capsys.readouterr().out
    assert cli(["memory", "search", "does X beat Y by points", "--model-id", "ann", "--json", *store]) == 0
    assert "X beats Y" in json.loads(capsys.readouterr().out)[0]["content"]
    assert cli(["memory", "search", "x", "--time-range", "soon", "--model-id", "ann", *store]) == 1
    assert "time_range" in capsys.readouterr().err


def _iso(seconds: float) -> str:
    from forest.records import iso

    return iso(seconds)
