"""The labelled update sets bench/eval_updates.py measures: the CDConv set is balanced, split with no
earlier statement on both sides, and labelled by the dataset's own annotators; the builder keeps
what it says it keeps; a malformed set is refused with a clear message."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from eval_updates import SETS, load_pairs  # noqa: E402
from make_update_pairs_cdconv import build_pairs  # noqa: E402


def test_the_cdconv_set_is_half_updates_split_by_earlier_statement_and_labelled_by_cdconv() -> None:
    pairs = load_pairs(SETS["cdconv"])
    assert len(pairs) >= 150
    for split in ("dev", "heldout"):
        part = [p for p in pairs if p["split"] == split]
        assert len(part) >= 75
        assert 0.45 <= sum(p["should_supersede"] for p in part) / len(part) <= 0.55
    earlier = {split: {p["earlier"] for p in pairs if p["split"] == split} for split in ("dev", "heldout")}
    assert not earlier["dev"] & earlier["heldout"]
    # CDConv's label 3 is "contradicts the dialogue history", 0 "no contradiction".
    assert all(p["should_supersede"] == (p["cdconv_label"] == 3) for p in pairs)
    assert all(p["cdconv_label"] in (0, 3) for p in pairs)
    doc = json.loads(SETS["cdconv"].read_text(encoding="utf-8"))
    assert "CC BY-NC 4.0" in doc["license"] and "CDConv" in doc["source"]


# Rows of CDConv's cdconv.txt (lines 27-29, 50-51, 1859-1862 and 12-13), as the dataset has them.
ROWS = [
    {"file": "1st", "model": "plato", "u1": "对了，你是哪里的？", "b1": "我是四川的,你呢?",
     "u2": "顺便问一下，你从哪里来的？", "b2": "我是重庆的,我从重庆来的", "label": 3, "persona": 1},
    {"file": "1st", "model": "plato", "u1": "对了，你是哪里的？", "b1": "我是四川的,你呢?",
     "u2": "顺便问一下，你从哪里来的？", "b2": "我从湖北来的", "label": 3, "persona": 1},
    {"file": "1st", "model": "eva", "u1": "在北京这边，你在那里呀？", "b1": "我在北京，你在哪儿呢？",
     "u2": "在北京，你在哪？", "b2": "我在天津，你呢？", "label": 3, "persona": 1},
    {"file": "1st", "model": "eva", "u1": "在北京这边，你在那里呀？", "b1": "我在北京，你在哪儿呢？",
     "u2": "在北京，你在哪？", "b2": "我在朝阳区，你呢？", "label": 0},
    {"file": "2nd4", "model": "plato", "u1": "你好啊，你是哪里人啊？", "b1": "我是四川的,你呢?",
     "u2": "你好，你从哪里来的？", "b2": "我从云南来的", "label": 0},
    {"file": "2nd4", "model": "plato", "u1": "你好啊，你是哪里人啊？", "b1": "我是四川的,你呢?",
     "u2": "你好，你从哪里来的？", "b2": "我从湖北武汉来的", "label": 0},
    {"file": "1st", "model": "plato", "u1": "那你平常都是自己做饭吃吗？", "b1": "是啊,自己动手丰衣足食啊",
     "u2": "你不是经常自己做饭吗？", "b2": "那你是怎么自己做饭的?", "label": 2},
    {"file": "1st", "model": "plato", "u1": "那你平常都是自己做饭吃吗？", "b1": "是啊,自己动手丰衣足食啊",
     "u2": "你不是经常自己做饭吗？", "b2": "我不做饭的,只是偶尔会做,自己做的不好吃", "label": 1},
]


def test_the_builder_pairs_each_update_with_a_non_update_from_its_own_conversation() -> None:
    pairs = build_pairs(ROWS, per_class=10)
    # Labels 1 and 2 (a reply at odds with itself, a speaker mixed up) are no update either way.
    assert {p["earlier"] for p in pairs} == {"我是四川的,你呢?", "我在北京，你在哪儿呢？"}
    # "我在天津，你呢？" states where the bot is before its closing "and you?": kept.
    assert ("我在北京，你在哪儿呢？", "我在天津，你呢？", True) in {(p["earlier"], p["later"], p["should_supersede"])
                                                          for p in pairs}
    for split in {p["split"] for p in pairs}:
        part = [p for p in pairs if p["split"] == split]
        assert sum(p["should_supersede"] for p in part) == sum(not p["should_supersede"] for p in part)
    assert {p["split"] for p in pairs if p["earlier"] == "我是四川的,你呢?"} in ({"dev"}, {"heldout"})


def test_a_set_with_a_pair_missing_its_label_is_refused_by_name(tmp_path: Path) -> None:
    broken = tmp_path / "pairs.json"
    broken.write_text(json.dumps({"pairs": [{"split": "dev", "earlier": "我是四川的", "later": "我是重庆的"}]}),
                      encoding="utf-8")
    with pytest.raises(ValueError, match=r"pairs.json: pair 0 needs a split .*should_supersede"):
        load_pairs(broken)
