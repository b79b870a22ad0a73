"""The labelled update sets bench/eval_updates.py measures: the CDConv and MultiWOZ sets are half
updates, split with no earlier statement (or dialogue) on both sides, and labelled by the datasets'
own annotations; their builders keep what they say they keep; a malformed set is refused by name."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.make_update_pairs_cdconv import build_pairs
from bench.make_update_pairs_multiwoz import candidates
from bench.update_sets import SETS, load_pairs


@pytest.mark.parametrize("name", ["cdconv", "multiwoz"])
def test_a_set_is_half_updates_in_each_split(name: str) -> None:
    pairs = load_pairs(SETS[name])
    assert len(pairs) >= 150
    for split in ("dev", "heldout"):
        part = [p for p in pairs if p["split"] == split]
        assert len(part) >= 75
        assert 0.45 <= sum(p["should_supersede"] for p in part) / len(part) <= 0.55
    assert len({(p["earlier"], p["later"]) for p in pairs}) == len(pairs)


def test_the_cdconv_set_is_split_by_earlier_statement_and_labelled_by_cdconv() -> None:
    pairs = load_pairs(SETS["cdconv"])
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


def test_the_multiwoz_set_keeps_multiwoz_splits_and_labels_an_update_by_the_visitors_annotated_slots() -> None:
    pairs = load_pairs(SETS["multiwoz"])
    dialogues = {split: {p["conversation"] for p in pairs if p["split"] == split} for split in ("dev", "heldout")}
    assert not dialogues["dev"] & dialogues["heldout"]
    for pair in pairs:
        earlier, later = pair["informed"]["earlier"], pair["informed"]["later"]
        changed = [slot for slot in earlier.keys() & later.keys() if earlier[slot] != later[slot]]
        assert pair["should_supersede"] == bool(changed), pair
        assert pair["should_supersede"] or not earlier.keys() & later.keys()
    doc = json.loads(SETS["multiwoz"].read_text(encoding="utf-8"))
    assert "CC BY 4.0" in doc["license"] and "MultiWOZ" in doc["source"]


# MultiWOZ's validation dialogue SNG0554 as ConvLab-2 ships it (the clerk's annotations left out).
SNG0554 = [
    {"text": "I 'd love to find an expensive German restaurant .",
     "dialog_act": {"Restaurant-Inform": [["Food", "german"], ["Price", "expensive"]]}},
    {"text": "I 'm sorry , there are no German restaurants in the area .   Is there another cuisine I could "
             "search for ?", "dialog_act": {}},
    {"text": "how about one that serves european food ?", "dialog_act": {"Restaurant-Inform": [["Food", "european"]]}},
    {"text": "I have several european restaurants to choose from . Did you want to dine in a certain area of the "
             "city ?", "dialog_act": {}},
    {"text": "I do n't care which area . Just need to find a table for 5 people at 15:00 on Saturday . I will need "
             "the reference number once booked .",
     "dialog_act": {"Restaurant-Inform": [["Area", "dontcare"], ["Time", "15:00"], ["Day", "saturday"],
                                          ["People", "5"]], "Restaurant-Request": [["Ref", "?"]]}},
]


def test_the_multiwoz_builder_reads_a_changed_wish_as_an_update_and_a_booking_added_as_none() -> None:
    found = {(p["earlier"], p["later"]): p for p in candidates("SNG0554", SNG0554, "dev")}
    german, european = "I'd love to find an expensive German restaurant.", "how about one that serves european food?"
    booking = ("I don't care which area. Just need to find a table for 5 people at 15:00 on Saturday. "
               "I will need the reference number once booked.")
    assert set(found) == {(german, european), (german, booking), (european, booking)}
    assert found[(german, european)]["should_supersede"] and found[(german, european)]["attribute"] == "Restaurant Food"
    assert not found[(german, booking)]["should_supersede"] and not found[(european, booking)]["should_supersede"]
    # The clerk's turns are no one's statements here; "dontcare" is no value.
    assert "Restaurant Area" not in found[(german, booking)]["informed"]["later"]
