"""The personal knowledge graph (NeuroMemory v2 spec): triple extraction (offline patterns and Claude),
entity normalization and deduplication, the bounded walk and its readable paths."""
import json
import logging

import pytest

from testkit.fake_anthropic import FakeAnthropic
from forest.models.claude import ClaudeLLM
from forest.personal.graph import (
    Triple,
    TripleExtractor,
    dedupe_triples,
    entities_in,
    entity_key,
    format_path,
    graph_paths,
    normalize_entity,
    related,
    relations_for,
)

SEED = [Triple("小朱", "女儿", "灿灿"), Triple("灿灿", "弟弟", "帅帅")]


def extract(text, speaker="user"):
    return [(t.source, t.relationship, t.target) for t in TripleExtractor().extract(text, speaker)]


@pytest.mark.parametrize("text, expected", [
    ("Emma is Alice's daughter.", [("Alice", "daughter", "Emma")]),
    ("Tom is my younger brother.", [("user", "brother", "Tom")]),
    ("I'm Tom's sister.", [("Tom", "sister", "user")]),
    ("Emma is the daughter of Alice.", [("Alice", "daughter", "Emma")]),
    ("My daughter is Emma.", [("user", "daughter", "Emma")]),
    ("My wife Sarah loves pizza.", [("user", "wife", "Sarah")]),
    ("My mom's name is Ruth.", [("user", "mother", "Ruth")]),
    ("Alice's son, Tom, is six.", [("Alice", "son", "Tom")]),
    ("Bob is my boss and Eve is my colleague.", [("user", "boss", "Bob"), ("user", "colleague", "Eve")]),
    ("Tom works at Google as an engineer.", [("Tom", "works at", "Google")]),
    ("I work for Acme Corp since 2020.", [("user", "works for", "Acme Corp")]),
    ("Tom lives in New York City with his wife.", [("Tom", "lives in", "New York City")]),
    ("I like apples and long walks on the beach.",
     [("user", "likes", "apples"), ("user", "likes", "long walks on the beach")]),
    ("I really love jazz, blues and soul, but not pop.",
     [("user", "loves", "jazz"), ("user", "loves", "blues"), ("user", "loves", "soul")]),
    ("I hate cilantro.", [("user", "hates", "cilantro")]),
    ("I prefer tea over coffee.", [("user", "prefers", "tea")]),
    ("I don't like horror movies.", [("user", "dislikes", "horror movies")]),
    ("Anna is from Brazil.", [("Anna", "is from", "Brazil")]),
    ("I'm originally from Lyon, France.", [("user", "is from", "Lyon")]),
    ("Tom was born in Paris in 1990.", [("Tom", "born in", "Paris")]),
    ("Tom is married to Anna.", [("Tom", "is married to", "Anna")]),
    ("Tom has a dog named Rex.", [("Tom", "dog", "Rex")]),
    ("I have a cat called Misty.", [("user", "cat", "Misty")]),
    ("I love hiking in the Alps with my sister Mia",
     [("user", "sister", "Mia"), ("user", "loves", "hiking in the Alps")]),
    ("My name is Ann Lee.", [("user", "is called", "Ann Lee")]),
    ("I'm 34 years old and I live in Paris.", [("user", "is aged", "34"), ("user", "lives in", "Paris")]),
    ("I just turned 35.", [("user", "is aged", "35")]),
    ("I turned 35 yesterday.", [("user", "is aged", "35")]),
    ("I'm from Ohio, and you?", [("user", "is from", "Ohio")]),
])
def test_english_patterns(text, expected):
    assert extract(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("灿灿是小朱的女儿", [("小朱", "女儿", "灿灿")]),
    ("我记得灿灿是小朱的女儿。", [("小朱", "女儿", "灿灿")]),
    ("灿灿还有一个弟弟，叫帅帅", [("灿灿", "弟弟", "帅帅")]),
    ("小朱的女儿是灿灿", [("小朱", "女儿", "灿灿")]),
    ("帅帅是我的弟弟", [("user", "弟弟", "帅帅")]),
    ("我的女儿叫灿灿", [("user", "女儿", "灿灿")]),
    ("我老婆叫小红呀", [("user", "妻子", "小红")]),
    ("我有一只猫叫咪咪", [("user", "猫", "咪咪")]),
    ("我喜欢苹果", [("user", "喜欢", "苹果")]),
    ("我非常喜欢苹果和香蕉", [("user", "喜欢", "苹果"), ("user", "喜欢", "香蕉")]),
    ("我喜欢和平", [("user", "喜欢", "和平")]),
    ("我讨厌香菜", [("user", "讨厌", "香菜")]),
    ("我不喜欢下雨天", [("user", "不喜欢", "下雨天")]),
    ("小朱在北京工作", [("小朱", "工作于", "北京")]),
    ("我现在在一家银行上班", [("user", "工作于", "银行")]),
    ("小朱住在上海，很开心", [("小朱", "住在", "上海")]),
    ("小王来自四川", [("小王", "来自", "四川")]),
    ("我出生在成都", [("user", "出生于", "成都")]),
    ("小王和小李结婚了", [("小王", "结婚", "小李")]),
    ("我是湖北人，现在在杭州工作!", [("user", "来自", "湖北"), ("user", "工作于", "杭州")]),
    ("我是浙江的，你呢？", [("user", "来自", "浙江")]),
    ("哦,我是湖北荆州人", [("user", "来自", "湖北")]),
    ("我从云南来的", [("user", "来自", "云南")]),
    ("我是四川成都人", [("user", "来自", "四川")]),
    ("我是湖北武汉市的", [("user", "来自", "湖北")]),
    ("我叫李小海，你呢？", [("user", "名叫", "李小海")]),
    ("我的名字是王琪琪。", [("user", "名叫", "王琪琪")]),
    ("我今年刚满十八岁", [("user", "年龄", "18")]),
    ("我已经五十五岁了", [("user", "年龄", "55")]),
    ("你好!我今年已经55岁了!", [("user", "年龄", "55")]),
])
def test_chinese_patterns(text, expected):
    assert extract(text) == expected


@pytest.mark.parametrize("text", [
    "Paris is the capital of France.", "The sky is blue.", "Apple is a company.", "Everyone loves pizza.",
    "Tom is not my brother.", "I don't live in Paris anymore.", "I'd like a coffee.", "I love you.",
    "I like this song.", "Who is Alice's daughter?", "Tom has two kids.",
    "北京是中国的首都", "乔布斯是苹果公司的创始人", "小朱有两个孩子", "灿灿不是小朱的女儿", "我不住在北京",
    "我的女儿是医生", "小朱的儿子叫什么", "小朱的孩子叫什么？", "我挺喜欢吃这个的", "这个消息来自新华社",
])
def test_general_sentences_questions_negations_and_pronouns_give_no_triple(text):
    # Counts ("有两个孩子") are no triple either: "两个" would join unrelated families into one node.
    assert extract(text) == []


@pytest.mark.parametrize("text, expected", [
    # each clause of a coordinated sentence is read, a left-out subject is the previous clause's
    ("I love my job but I hate Mondays.", [("user", "loves", "my job"), ("user", "hates", "Mondays")]),
    ("I grew up in Lyon and moved to Oslo last year.", [("user", "grew up in", "Lyon"), ("user", "moved to", "Oslo")]),
    ("I live in Leeds, but I work in York.", [("user", "lives in", "Leeds"), ("user", "works in", "York")]),
    ("I used to live in Rome, but now I live in Turin.", [("user", "lives in", "Turin")]),
    ("Tom and I got married in May.", [("user", "is married to", "Tom")]),  # one subject, not two clauses
    ("My friend Kai is from Accra and he works at Shell.",
     [("user", "friend", "Kai"), ("Kai", "is from", "Accra"), ("Kai", "works at", "Shell")]),
    ("I'm allergic to cats and pollen.", [("user", "is allergic to", "cats"), ("user", "is allergic to", "pollen")]),
    ("I'm not a big fan of opera.", [("user", "dislikes", "opera")]),
    ("My favourite sport is tennis.", [("user", "likes", "tennis")]),
    ("I have three kids, Ana, Ben and Cy.", [("user", "child", "Ana"), ("user", "child", "Ben"), ("user", "child", "Cy")]),
    ("I work as a nurse at Mercy Hospital.", [("user", "works at", "Mercy Hospital"), ("user", "works as", "nurse")]),
    ("Our dog Max is old.", [("user", "dog", "Max")]),
    ("我喜欢喝茶，但是讨厌喝咖啡。", [("user", "喜欢", "喝茶"), ("user", "讨厌", "喝咖啡")]),
    ("我以前住在南京，现在住在苏州。", [("user", "住在", "苏州")]),
    ("我女朋友叫小美，她在银行上班。", [("user", "女朋友", "小美"), ("小美", "工作于", "银行")]),
    ("我表哥张伟住在西安", [("user", "表哥", "张伟"), ("张伟", "住在", "西安")]),
    ("我在武汉长大，后来搬到了长沙", [("user", "长大于", "武汉"), ("user", "搬到", "长沙")]),
    ("我对芒果过敏", [("user", "过敏", "芒果")]),
    ("我养了两只狗，一只叫大黄，一只叫小黑", [("user", "狗", "大黄"), ("user", "狗", "小黑")]),
    ("我和小周是高中同学", [("user", "同学", "小周")]),
    ("我的爱好是钓鱼", [("user", "喜欢", "钓鱼")]),
])
def test_clauses_and_relations_beyond_the_first_rules(text, expected):
    assert sorted(extract(text)) == sorted(expected)


@pytest.mark.parametrize("text", [
    "I play with my kids every evening.", "I attend Mass on Sundays.", "I have three kids.", "I don't work at Google.",
    "我妹妹在北京工作", "我和老婆是大学同学", "我以前在腾讯工作", "我在家做饭", "我女儿今年上小学了",
    "I'm 5 minutes away.", "Where are you from, and you?", "我是做销售的，你呢？", "我是开玩笑的", "我是成年人",
    "我是开小超市的", "我不是湖北人", "我叫你过来", "我女儿今年五岁",
    # what a name, an age or a hometown pattern must not read (each would end the real one)
    "我叫外卖了。", "我叫车了", "我叫错了", "我叫妈妈过来", "When I turned 18, I moved out.", "I turned 180 degrees.",
    "我三岁的时候搬到了上海。", "我18岁就出来工作了", "我是北京大学的", "我是广东移动的", "我从北京带回来一些特产",
    "我从上海寄过来", "My name is Not Important.",
])
def test_unnamed_relatives_past_facts_and_look_alikes_give_no_triple(text):
    # "我妹妹" names nobody: a node called "我妹妹" would merge every user's sister into one.
    assert extract(text) == []


def test_the_first_person_becomes_the_speaker():
    assert extract("I live in Paris. 我喜欢爵士乐", speaker="ann") == [("ann", "lives in", "Paris"),
                                                                   ("ann", "喜欢", "爵士乐")]


def test_entities_are_normalized_for_display_and_folded_for_keys():
    assert normalize_entity("  the 'Google'. ") == "Google"
    assert normalize_entity("Alice's") == "Alice" and normalize_entity("小朱的") == "小朱"
    assert normalize_entity("My", "ann") == "ann" and normalize_entity("我", "zhu") == "zhu"
    assert normalize_entity("New  York") == "New York"
    assert entity_key("New York") == entity_key("the new york") == "new york"
    assert Triple("小朱", "女儿", "灿灿").to_dict() == {"source": "小朱", "relationship": "女儿", "target": "灿灿"}


def test_the_same_fact_is_kept_once_in_its_first_spelling():
    assert extract("Emma is Alice's daughter. Alice's daughter is Emma. Emma is the daughter of Alice.") \
        == [("Alice", "daughter", "Emma")]
    assert extract("灿灿是小朱的女儿。小朱的女儿叫灿灿。") == [("小朱", "女儿", "灿灿")]
    kept = dedupe_triples([Triple("The Google", "Works_At", "Mountain View"), Triple("google", "works at",
                                                                                    "mountain view")])
    assert kept == [Triple("The Google", "Works_At", "Mountain View")]


def test_the_walk_follows_the_seed_example_up_to_the_depth():
    assert related(SEED, ["小朱"], max_depth=1) == SEED[:1]
    assert related(SEED, ["小朱"], max_depth=2) == SEED
    assert related(SEED, ["帅帅"], max_depth=1) == SEED[1:]  # edges are followed backwards too
    assert related(SEED, ["小朱的儿子叫什么"]) == SEED  # a start that is no entity is read as text
    assert related(SEED, ["nobody"]) == [] and related([], ["小朱"]) == []
    assert related(SEED + SEED, ["小朱"], max_relations=2) == SEED  # duplicates do not use the budget


def test_the_walk_returns_the_nearest_relations_first_up_to_the_limit():
    far = Triple("Tom", "friend", "Bob")
    likes = [Triple("ann", "likes", f"thing {n}") for n in range(12)]
    triples = [far, Triple("ann", "brother", "Tom"), *likes]
    found = related(triples, ["Ann"], max_depth=2, max_relations=10)
    assert found == [triples[1], *likes[:9]]  # depth 1 in stored order; the depth-2 friend is cut
    assert related(triples, ["ann"], max_relations=20)[-1] == far


def test_a_cycle_ends():
    cycle = [Triple("A", "knows", "B"), Triple("B", "knows", "C"), Triple("C", "knows", "A")]
    assert related(cycle, ["a"], max_depth=10) == [cycle[0], cycle[2], cycle[1]]
    assert [format_path(p) for p in graph_paths(cycle, ["A"], max_depth=10)] == [
        "A --[knows]--> B --[knows]--> C", "A <--[knows]-- C <--[knows]-- B"]


def test_paths_read_like_the_seed_trace():
    assert [format_path(p) for p in graph_paths(SEED, ["小朱"])] == ["小朱 --[女儿]--> 灿灿 --[弟弟]--> 帅帅"]
    assert [format_path(p) for p in graph_paths(SEED, ["小朱"], max_depth=1)] == ["小朱 --[女儿]--> 灿灿"]
    assert [format_path(p) for p in graph_paths(SEED, ["帅帅"])] == ["帅帅 <--[弟弟]-- 灿灿 <--[女儿]-- 小朱"]
    assert format_path([]) == "" and graph_paths(SEED, ["nobody"]) == []


def test_entities_in_finds_cjk_substrings_whole_latin_words_and_the_speaker():
    assert entities_in("小朱的儿子叫什么", ["灿灿", "小朱", "帅帅"]) == ["小朱"]
    assert entities_in("Is EMMA older than Annabel?", ["Ann", "Emma", "emma"]) == ["Emma"]
    assert entities_in("What does my daughter like?", ["Emma", "ann"], speaker="ann") == ["ann"]
    assert entities_in("What does my daughter like?", ["Emma", "ann"]) == []


def claude_extractor(fake):
    return TripleExtractor(ClaudeLLM("test-key", "claude-test", retries=0, base_url=fake.url))


USER_SAID = ["I live in Berlin.", "I work at Acme.", "My wife is Anna.", "Anna works at Siemens.",
             "I was born in Leeds.", "My brother Tom lives in Paris.", "I love jazz.", "我住在柏林"]


@pytest.mark.parametrize("question, first", [
    ("Where do I live?", ("ann", "lives in", "Berlin")),
    ("where do i live", ("ann", "lives in", "Berlin")),           # chat in lower case
    ("What city do I live in?", ("ann", "lives in", "Berlin")),
    ("Where's my home?", ("ann", "lives in", "Berlin")),
    ("Where am I based?", ("ann", "lives in", "Berlin")),
    ("我住在哪里？", ("ann", "lives in", "Berlin")),
    ("Where was I born?", ("ann", "born in", "Leeds")),
    ("Where do I work?", ("ann", "works at", "Acme")),
    ("Who is my wife?", ("ann", "wife", "Anna")),
    ("Where does Tom live?", ("Tom", "lives in", "Paris")),
])
def test_a_question_gets_the_relations_it_asks_about_first(question, first):
    triples = [t for said in USER_SAID for t in TripleExtractor().extract(said, speaker="ann")]
    _, relations = relations_for(triples, question, "ann")
    assert (relations[0].source, relations[0].relationship, relations[0].target) == first


def test_a_question_about_the_speaker_alone_gets_only_what_it_asks_about():
    triples = [t for said in USER_SAID for t in TripleExtractor().extract(said, speaker="ann")]
    _, relations = relations_for(triples, "Who is my wife?", "ann")
    assert {t.relationship for t in relations} == {"wife", "brother"}     # people, not where ann lives
    assert relations_for(triples, "I'm so tired of the rain.", "ann")[1] == []
    assert relations_for(triples, "My plans for tomorrow", "ann")[1] == []   # the speaker, asked nothing


@pytest.mark.slow
def test_a_valid_claude_reply_is_used_and_normalized():
    reply = {"triples": [{"source": "我", "relationship": "Works_At", "target": "the Acme Corp"},
                         {"source": "我", "relationship": "works at", "target": "Acme Corp"},
                         {"source": "他", "relationship": "likes", "target": "tea"}]}
    with FakeAnthropic() as fake:
        fake.script = [json.dumps(reply, ensure_ascii=False)]
        extractor = claude_extractor(fake)
        triples, last_label = extractor.extract_labelled("I work at Acme Corp. He likes tea.", speaker="ann")
    assert triples == [Triple("ann", "works at", "Acme Corp")]  # pronoun dropped, duplicate merged
    assert extractor.label == last_label == "claude:claude-test"
    prompt = json.loads(fake.requests[0]["messages"][0]["content"].rsplit("}", 1)[0] + "}")
    assert prompt["input_data"] == {"speaker": "ann", "text": "I work at Acme Corp. He likes tea."}


@pytest.mark.parametrize("bad", ["not json", json.dumps({"triples": [{"source": "ann", "relationship": "likes"}]}),
                                 json.dumps({"relations": []})])
def test_an_invalid_claude_reply_falls_back_to_the_patterns(bad, caplog):
    with FakeAnthropic() as fake, caplog.at_level(logging.WARNING):
        fake.script = [bad]
        extractor = claude_extractor(fake)
        triples, last_label = extractor.extract_labelled("灿灿是小朱的女儿")
    assert triples == SEED[:1]
    assert extractor.label == "claude:claude-test"
    assert last_label == "offline:patterns (fallback from claude:claude-test)"
    assert "using the offline patterns" in caplog.text
    assert TripleExtractor().label == "offline:patterns"
