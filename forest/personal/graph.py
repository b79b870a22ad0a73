"""The personal knowledge graph (NeuroMemory v2 spec): (source, relationship, target) triples from
stored memories, entities normalized and deduplicated, and a bounded walk for retrieval.

Triples read like the spec's graph_relations: (小朱, 女儿, 灿灿) says 灿灿 is 小朱's daughter, so a
role word (daughter, 弟弟, dog) is always the relation from the owner to whoever holds the role.
Counts without a name ("小朱有两个孩子", "Tom has two kids") give no triple: a target such as
"两个" would join every family of two into one node and the walk would wander between them.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import networkx as nx

from forest.models.llm import LLMError, StructuredLLM
from forest.models.prompts import triples_prompt
from forest.models.replies import TriplesReply
from forest.text import content_terms, split_sentences

log = logging.getLogger("forest.personal.graph")

PATTERNS_LABEL = "offline:patterns"


@dataclass(frozen=True)
class Triple:
    source: str
    relationship: str
    target: str

    def to_dict(self) -> dict[str, str]:
        return {"source": self.source, "relationship": self.relationship, "target": self.target}

    def key(self) -> tuple[str, str, str]:
        """What deduplication compares: the same fact however it was spelled."""
        return entity_key(self.source), normalize_relationship(self.relationship), entity_key(self.target)


# --- entities ---------------------------------------------------------------------------------
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_HAS_CJK = re.compile(f"[{_CJK}]")
_EDGE = " \t\r\n\"'“”‘’「」『』《》()（）[]【】<>.,;:!?，。！？；：、…—-"
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_POSSESSIVE = re.compile(r"['’]s$|(?<=.)的$")
_FIRST_PERSON = frozenset(["i", "me", "my", "mine", "myself", "我", "我自己", "我家"])  # 我家的狗: the user's
# Pronouns and group words name nobody in particular: without coreference (left for later by the
# spec) they would merge everyone called "he" into one node.
_NOT_ENTITIES = frozenset(
    "he she it they them him her his hers its their theirs we us our you your yours this that these "
    "those who whom what which where when there here someone somebody everyone everybody anyone anybody "
    "nobody people something anything nothing everything "
    "他 她 它 他们 她们 它们 你 您 你们 我们 咱们 大家 人们 有人 别人 每个人 很多人 许多人 这 那".split())
_DEICTIC = re.compile(r"^(?:that|this|these|those|it|he|she|they|him|her|them|you|what|when|how|where|why|"
                      r"whether|if)\b|(?:这|那)(?:个|些|种|位|里|儿|样)", re.IGNORECASE)
_QUESTION = re.compile("什么|谁|哪|多少|怎么|几个|几岁")


def normalize_entity(name: str, speaker: str = "user") -> str:
    """The display form: trimmed of quotes, punctuation, a leading article and a possessive; the
    first person (I, me, my, 我) becomes the speaker. Case is kept; entity_key folds it."""
    text = " ".join(name.split()).strip(_EDGE)
    text = _POSSESSIVE.sub("", _ARTICLE.sub("", text)).strip(_EDGE)
    return speaker if text.casefold() in _FIRST_PERSON else text


def entity_key(name: str) -> str:
    """The deduplication key: the normalized name, case-folded."""
    return normalize_entity(name).casefold()


def normalize_relationship(relationship: str) -> str:
    """Lower-case words with single spaces ("Works  at" -> "works at"); CJK unchanged."""
    text = " ".join(relationship.replace("_", " ").split()).strip(_EDGE)
    return text.replace(" ", "") if _HAS_CJK.search(text) else text.casefold()


def _usable(name: str) -> bool:
    folded = name.casefold()
    return (bool(folded) and folded not in _NOT_ENTITIES and not _DEICTIC.search(folded)
            and not _QUESTION.search(name))


def _triple(source: str, relationship: str, target: str, speaker: str) -> Triple | None:
    source, target = normalize_entity(source, speaker), normalize_entity(target, speaker)
    relationship = normalize_relationship(relationship)
    if not (relationship and _usable(source) and _usable(target)) or source.casefold() == target.casefold():
        return None
    return Triple(source, relationship, target)


def dedupe_triples(triples: Iterable[Triple]) -> list[Triple]:
    """Each fact once (by Triple.key), in first-seen order with its first spelling."""
    seen: dict[tuple[str, str, str], Triple] = {}
    for triple in triples:
        seen.setdefault(triple.key(), triple)
    return list(seen.values())


# --- offline patterns -------------------------------------------------------------------------
def _alternation(words: Iterable[str]) -> str:
    return "|".join(sorted(map(re.escape, words), key=len, reverse=True))  # longest first: 男朋友 before 朋友


# Spelling variants share one relation so that dedup and the walk see one fact.
_RELATIONS = {
    "mom": "mother", "mum": "mother", "mommy": "mother", "dad": "father", "daddy": "father",
    "coworker": "colleague", "co-worker": "colleague", "kid": "child", "puppy": "dog", "kitten": "cat",
    "neighbour": "neighbor", "grandma": "grandmother", "grandpa": "grandfather", "fiancé": "fiance",
    "fiancée": "fiance", "like": "likes", "enjoy": "likes", "enjoys": "likes", "love": "loves", "adore": "loves",
    "hate": "hates", "can't stand": "hates", "dislike": "dislikes", "don't like": "dislikes",
    "do not like": "dislikes", "prefer": "prefers", "relocated to": "moved to",
    "老婆": "妻子", "太太": "妻子", "老公": "丈夫", "爸爸": "父亲", "妈妈": "母亲", "小狗": "狗", "小猫": "猫",
    "好朋友": "朋友", "不太喜欢": "不喜欢", "热爱": "爱", "偏爱": "更喜欢", "嫁给了": "结婚", "娶了": "结婚",
}
_EN_ROLES = ("daughter son wife husband brother sister mother mom mum father dad friend colleague coworker "
             "co-worker boss manager partner boyfriend girlfriend fiance fiancé fiancée cousin uncle aunt "
             "grandmother grandma grandfather grandpa grandson granddaughter niece nephew child kid roommate "
             "neighbor neighbour teacher dog cat puppy kitten pet").split()
_ZH_ROLES = ("女儿 儿子 孩子 妻子 老婆 太太 丈夫 老公 爱人 哥哥 弟弟 姐姐 妹妹 爸爸 父亲 妈妈 母亲 爷爷 奶奶 外公 外婆 姥姥 "
             "姥爷 孙子 孙女 外孙 外孙女 朋友 好朋友 男朋友 女朋友 同事 老板 领导 上司 同学 室友 邻居 老师 学生 表哥 表姐 "
             "表弟 表妹 堂哥 堂姐 堂弟 堂妹 叔叔 阿姨 舅舅 姑姑 侄子 侄女 狗 猫 小狗 小猫 宠物").split()
_ROLE_RELATIONS = frozenset(_RELATIONS.get(role, role) for role in _EN_ROLES + _ZH_ROLES)
_ROLE = _alternation(_EN_ROLES)
_ZH_ROLE = _alternation(_ZH_ROLES)
_PERSON = re.compile(rf"\b(?:{_ROLE})(?:s|ren)?\b|{_ZH_ROLE}", re.IGNORECASE)


def names_a_person(text: str) -> bool:
    """Whether the text names someone by their role to the speaker ("my son", "女儿", "the dogs")."""
    return bool(_PERSON.search(text))
_ADJ = r"(?:younger|older|little|big|baby|elder|eldest|youngest|oldest|best|old|twin|close)"
# Capitalized words that open sentences but name nobody; "I" is matched on its own where allowed.
_NOT_NAME = _alternation(
    "I My The A An This That These Those It He She They We You Who What Where When Which Why How There Here His "
    "Her Our Their Your Its Then And But So Also Yes No Well Oh Actually Now Today Yesterday Anyway Btw Apparently "
    "Honestly Sadly Luckily Hey Hi Hello Ok Okay Because If While Everyone Everybody Someone Nobody Not".split())
_CAP = rf"(?!(?:{_NOT_NAME})\b)[A-ZÀ-ÖØ-Þ][\w-]*(?:['’][A-Z][\w-]*)?"
_NAME = rf"(?:{_CAP}(?:\s+{_CAP}){{0,2}}|[{_CJK}]{{1,6}})"
_NAMES = rf"(?P<dst>{_NAME}(?:(?:\s*,\s*(?:and\s+)?|\s+and\s+){_NAME})+)"  # "Sam and Mia", "Sam, Mia and Leo"
# "We" and "our" speak for the user's household: "our cat Luna" is the user's cat.
_HOUSEHOLD = {"We": "I", "we": "I", "Our": "my", "our": "my"}
# A name starts at a word's start, a hyphen included: after every hyphen of "Ab-Cd-Ef-..." the
# name's [\w-]* would rescan the rest (quadratic).
_SRC = rf"(?<![\w'’-])(?P<src>I|[Ww]e|{_NAME})"
_DST_BE = rf"(?<![\w'’-])(?P<dst>I|{_NAME})(?:\s+(?:is|am)|['’]m)\s+"
_POSS = rf"(?P<src>[Mm]y|[Oo]ur|{_NAME}(?=['’]s\b))(?:['’]s)?"
_BE = r"(?:\s+(?:is|am|are)|['’](?:m|re))\s+"
_ADV = r"(?:(?:also|still|now|currently|really|absolutely|just|truly|do|totally|quite|kind of|actually)\s+)*"
_REST = r"(?P<dst>[^.;!?\n]+)"
_ZH = r"[^\s，,。.！!？?；;：:、“”\"'（）()]{1,8}?"
_ZH_REST = r"(?P<dst>[^\s，,。.！!？?；;：:、]+)"
_ZH_END = r"(?=$|[\s，,。.！!？?；;：:、])"
_ZH_I = r"(?<!自)(?P<src>我)(?!们)"
_ZH_OWNER = rf"{_ZH_I}的?"  # 的 may be left out after 我 only
_ZH_OWNERS = (_ZH_OWNER, rf"(?P<src>{_ZH})的")
# "灿灿不是…", "我不住在…" are negated, "我以前住在…" is past: no fact.
_ZH_NOT = r"(?<![不没])(?<!以前)(?<!曾经)(?<!原来)(?<!之前)(?<!过去)"
_ZH_NUMBER = r"(?:一|两|二|三|四|五|几)?(?:个|位|只|条|匹)?"
_SCHOOL = r"\s+(?:the\s+)?(?:[\w-]+\s+){0,3}(?:School|Elementary|Academy|College|University|Institute|Kindergarten)\b"
# Provinces, municipalities and regions of China, which "我是X的" names as a hometown.
_ZH_REGION = _alternation("北京 天津 上海 重庆 河北 山西 辽宁 吉林 黑龙江 江苏 浙江 安徽 福建 江西 山东 河南 湖北 湖南 广东 海南 "
                          "四川 贵州 云南 陕西 甘肃 青海 台湾 内蒙古 内蒙 广西 西藏 宁夏 新疆 香港 澳门 东北 西北 华北".split())
# A city after the province, left out of the value (湖北武汉市 is 湖北): named as a city, or bare before
# 人 (四川成都人); a bare word before 的 may be anything (北京大学的, 广东移动的)
_ZH_CITY = rf"(?:[{_CJK}]{{2,3}}?(?:市|县))"
# An age said of a time of one's life, not now: 我三岁的时候, 我18岁就出来工作了
_ZH_AGE_THEN = "的时候|时|那年|以前|之前|以后|之后|就|起|开始|左右"
# What 我叫 is said of that is no name: 我叫外卖了, 我叫车, 我叫妈妈过来
_ZH_NAME_CHAR = rf"(?![了过着的来去])[{_CJK}]"
_ZH_NOT_CALLED = "外卖|车|出租车|救护车|警察|妈妈|爸爸|医生"
_ZH_JOB = r"(?:当|做|担任)(?:一名|一个)?[^\s，,。！？；、]{0,4}?(?:师|员|士|医生|会计|经理|记者|编辑|工人|主管|总监|销售|司机|老板)"


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    relation: str | None  # None: the matched "rel" word, through _RELATIONS; "{rel}" is filled with it
    # "name": the captured name; "names": a list of names; "called": each name after 叫; "age": a
    # number of years in digits ("十八" -> "18");
    # "one" / "many": items clipped from free text
    target: str = "name"

    def triples(self, match: re.Match[str], speaker: str) -> list[Triple]:
        rel = match.groupdict().get("rel") or ""
        relation = self.relation.format(rel=rel) if self.relation else _RELATIONS.get(_fold(rel), rel)
        if self.target == "name":
            targets = [_name(match["dst"])]
        elif self.target == "names":
            targets = _EN_SPLIT.split(match["dst"])
        elif self.target == "called":
            targets = [_name(name) for name in _ZH_CALLED.findall(match["dst"])]
        elif self.target == "age":
            targets = [_age(match["dst"])]
        else:
            targets = _items(match["dst"], many=self.target == "many")
        source = _HOUSEHOLD.get(match["src"], match["src"])
        found = (_triple(_name(source), relation, target, speaker) for target in targets)
        return [t for t in found if t]


def _rule(pattern: str, relation: str | None = None, target: str = "name") -> _Rule:
    return _Rule(re.compile(pattern), relation, target)


_ZH_CALLED = re.compile(r"(?:叫做|名叫|叫)([^\s，,。.！!？?；;：:、]{1,6})")

_RULES = [
    # "Emma is Alice's daughter", "Emma is my daughter", "I'm Tom's brother"
    _rule(rf"{_DST_BE}{_POSS}\s+(?:{_ADJ}\s+)?(?P<rel>{_ROLE})\b(?!['’-])"),
    # "Emma is the daughter of Alice"
    _rule(rf"{_DST_BE}the\s+(?:{_ADJ}\s+)?(?P<rel>{_ROLE})\s+of\s+(?P<src>me|{_NAME})\b"),
    # "My daughter is Emma", "my wife Sarah", "my dog is called Rex", "Alice's son, Tom"
    _rule(rf"(?<![\w'’-]){_POSS}\s+(?:{_ADJ}\s+)?(?P<rel>{_ROLE})(?:['’]s\s+name)?"
          rf"(?:\s*,\s*|\s+(?:is\s+)?(?:called|named)\s+|\s+is\s+|\s+)(?P<dst>{_NAME})\b(?!['’])"),
    # "Tom has a dog named Rex", "I have a sister called Mia"
    _rule(rf"{_SRC}\s+(?:also\s+)?(?:has|have)\s+(?:a|an|one)\s+(?:{_ADJ}\s+)?(?P<rel>{_ROLE})\s*,?\s+"
          rf"(?:named|called)\s+(?P<dst>{_NAME})\b"),
    # "I have two kids, Sam and Mia"
    _rule(rf"{_SRC}\s+(?:also\s+)?(?:has|have)\s+(?:two|three|four|five|\d+)\s+(?:{_ADJ}\s+)?(?P<rel>{_ROLE})"
          rf"(?:s|ren)?\s*(?:,|:|\s+(?:named|called))\s*{_NAMES}\b", None, "names"),
    # "I work at Acme", "I work as a nurse at the city hospital", "I work in Bellevue"
    _rule(rf"{_SRC}\s+{_ADV}works?\s+(?:as\s+[^,.;!?]+?\s+)?(?P<rel>at|for|in)\s+{_REST}", "works {rel}", "one"),
    _rule(rf"{_SRC}\s+{_ADV}works?\s+as\s+{_REST}", "works as", "one"),
    _rule(rf"{_SRC}\s+{_ADV}lives?\s+in\s+{_REST}", "lives in", "one"),
    _rule(rf"{_SRC}\s+{_ADV}(?P<rel>grew\s+up\s+in|moved\s+to|relocated\s+to)\s+{_REST}", None, "one"),
    _rule(rf"{_SRC}(?:(?:\s+(?:is|am)|['’]m)\s+(?:originally\s+)?from|\s+comes?\s+from)\s+{_REST}", "is from",
          "one"),
    _rule(rf"{_SRC}\s+(?:was|were)\s+born\s+in\s+{_REST}", "born in", "one"),
    # What a person has one of at a time: a name and an age ("My name is Ann", "I just turned 35")
    _rule(rf"(?<![\w'’-])(?P<src>[Mm]y)\s+name\s+is\s+(?P<dst>{_NAME})\b", "is called"),
    _rule(rf"(?<![\w'’-])(?P<src>I)(?:['’]m|\s+am)\s+{_ADV}(?P<dst>\d{{1,3}})\s+(?:years?|yrs?)\s+old\b", "is aged",
          "age"),
    # "I just turned 35", "I turned 35 yesterday", not "When I turned 18, I moved out" nor "I turned 180 degrees"
    _rule(rf"(?<![\w'’-])(?<!when\s)(?<!When\s)(?P<src>I)\s+(?:(?:just|recently|finally)\s+turned|"
          rf"turned(?=\s+\d{{1,3}}\s+(?:today|yesterday|this|last|on)\b))\s+(?P<dst>\d{{1,3}})\b"
          rf"(?!\s*(?:degrees|pages|times|%|percent))", "is aged", "age"),
    _rule(rf"{_SRC}{_BE}(?:also\s+|very\s+|severely\s+|really\s+)?allergic\s+to\s+{_REST}", "is allergic to",
          "many"),
    # A named school: "Lily attends Oakwood Elementary", "I study at MIT" (not "attends Mass")
    _rule(rf"{_SRC}\s+{_ADV}(?:stud(?:y|ies)\s+at|attends?(?={_SCHOOL}))\s+(?:the\s+)?"
          rf"(?P<dst>{_CAP}(?:\s+(?:of\s+)?{_CAP}){{0,3}})\b", "studies at"),
    _rule(rf"{_SRC}(?:(?:\s+(?:is|am)|['’]m)\s+married\s+to|\s+(?:got\s+)?married(?:\s+to)?)\s+(?P<dst>{_NAME})\b",
          "is married to"),
    _rule(rf"(?<![\w'’-])(?P<dst>{_NAME})\s+and\s+(?P<src>I)\s+(?:got|are|were)\s+married\b", "is married to"),
    # Only the speaker's own likes: "People love music" is not a personal fact, and a lower-case
    # subject cannot be told from a name.
    _rule(rf"(?<![\w'’-])(?P<src>I)\s+{_ADV}(?P<rel>like|love|hate|prefer|enjoy|adore|dislike|"
          rf"don['’]t like|do not like|can['’]t stand)\s+{_REST}", None, "many"),
    _rule(rf"(?<![\w'’-])(?P<src>I){_BE}(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of\s+{_REST}", "likes", "many"),
    _rule(rf"(?<![\w'’-])(?P<src>I){_BE}not\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of\s+{_REST}", "dislikes", "many"),
    # "My favorite food is ramen", "my hobbies are climbing and baking"
    _rule(rf"(?<![\w'’-])(?P<src>[Mm]y)\s+(?:favou?rite\s+[\w-]+(?:\s+[\w-]+)?|hobby|hobbies)\s+(?:is|are|include)\s+"
          rf"{_REST}", "likes", "many"),
    # "I play the guitar", not "I play with my kids"
    _rule(rf"(?<![\w'’-])(?P<src>I|[Ww]e)\s+{_ADV}play\s+(?!(?:with|at|in|on|for|around|outside|it)\b)"
          rf"(?:the\s+)?{_REST}", "plays", "one"),
    # 灿灿是小朱的女儿, 帅帅是我的弟弟
    _rule(rf"(?P<dst>{_ZH}){_ZH_NOT}是(?P<src>[^\s，,。！？；、的]{{1,8}})的(?P<rel>{_ZH_ROLE}){_ZH_END}"),
    # 我的女儿叫灿灿, 我女儿叫灿灿, 小朱的儿子名叫帅帅
    *(_rule(rf"{owner}(?P<rel>{_ZH_ROLE})(?:的名字)?(?:叫做|名叫|叫)(?P<dst>{_ZH}){_ZH_END}")
      for owner in _ZH_OWNERS),
    # 小朱的女儿是灿灿; "是" also introduces jobs ("我的女儿是医生"), so the target must look like a
    # short name: no measure word or adverb first, no job suffix last.
    *(_rule(rf"{owner}(?P<rel>{_ZH_ROLE})是(?P<dst>(?![一个很在我这那独最])[^\s，,。.！!？?；;：:、]{{1,4}}?)"
            rf"(?<![师生员家长工手者士人]){_ZH_END}") for owner in _ZH_OWNERS),
    # 我妹妹小雨在上海工作, 我的同事王芳来自湖南: the name ends where a verb or preposition begins
    *(_rule(rf"{owner}(?P<rel>{_ZH_ROLE})(?P<dst>(?![在是叫也很今去从和跟说都就还已刚每最不没一这那的])[{_CJK}]{{2,3}}?)"
            rf"(?=在|是|住|来自|喜欢|爱|很|也|今年|和|跟|说|每|最|特别|做|当|已经|刚|去|从|[，,。！？；]|$)")
      for owner in _ZH_OWNERS),
    # 我和小李是大学同学
    _rule(rf"{_ZH_I}(?:和|跟|与)(?P<dst>{_ZH})是[^\s，,。]{{0,4}}?(?P<rel>同学|同事|好朋友|朋友|邻居|室友){_ZH_END}"),
    # 灿灿还有一个弟弟，叫帅帅; 我有一只猫叫咪咪; 我养了两只猫，一只叫球球，一只叫毛毛
    _rule(rf"(?P<src>{_ZH})(?:还|也)?(?:有|养了|养着|养){_ZH_NUMBER}(?P<rel>{_ZH_ROLE})"
          r"(?P<dst>(?:[^。！？!?]*?(?:叫做|名叫|叫)[^\s，,。.！!？?；;：:、]+)+)", None, "called"),
    # 小朱在北京工作, 我在上海当护士, 我在复旦大学读研究生, 我在成都长大 ("现在在…" is time, not
    # place: 在 after 现/正/存/实/所/自 is not the preposition)
    *(_rule(rf"(?P<src>{_ZH}){_ZH_NOT}(?<![现正存实所自])在(?P<dst>[^\s，,。！？；、]{{1,16}}?)(?:{verbs})", relation, "one")
      for verbs, relation in ((rf"工作|上班|{_ZH_JOB}", "工作于"),
                              ("上学|读书|念书|读(?:研究生|研|博士|硕士|本科|大学|高中|初中)", "就读于"),
                              ("长大", "长大于"))),
    _rule(rf"(?P<src>{_ZH}){_ZH_NOT}住在{_ZH_REST}", "住在", "one"),
    _rule(rf"(?P<src>{_ZH}){_ZH_NOT}(?:搬到|搬去|搬家到)了?{_ZH_REST}", "搬到", "one"),
    _rule(rf"(?P<src>{_ZH}){_ZH_NOT}来自{_ZH_REST}", "来自", "one"),
    # 我是湖北人, 我是浙江的, 我是湖北荆州的: a hometown is named by its province or region (我是做销售的,
    # 我是开玩笑的, 我是成年人, 我是开小超市的 are not), which is the value compared
    _rule(rf"{_ZH_I}{_ZH_NOT}(?:老家)?是(?P<dst>{_ZH_REGION})(?:省|市)?(?:{_ZH_CITY}(?:人|的)|[{_CJK}]{{2,3}}?人|人|的)"
          rf"(?=$|[\s，,。.！!？?；;：:、啊呀哦呢吧啦嘛哈])", "来自"),
    # 我从云南来的, 我从湖北武汉市来 (not 我从北京带回来, 我从上海寄过来)
    _rule(rf"{_ZH_I}{_ZH_NOT}(?:是)?从(?P<dst>{_ZH_REGION})(?:省|市)?(?:{_ZH_CITY})?(?:过)?来(?:的|了)?"
          rf"(?=$|[\s，,。.！!？?；;：:、啊呀哦呢吧啦嘛哈])", "来自"),
    # 我叫李小海, 我的名字是王琪琪; 我今年24岁了, 我刚满十八岁
    _rule(rf"{_ZH_I}(?:的名字(?:是|叫)|名叫|叫)(?!{_ZH_NOT_CALLED})(?P<dst>(?![你他她它我这那什错醒]){_ZH_NAME_CHAR}{{2,4}}?)"
          rf"(?=$|[\s，,。.！!？?；;：:、])", "名叫"),
    # (each lead-in word once, none the start of another: "刚满" is 刚 then 满, read one way only)
    _rule(rf"{_ZH_I}{_ZH_NOT}(?:今年|现在|已经|刚|满|才|也|都|快|马上){{0,4}}(?P<dst>\d{{1,3}}|[一二两三四五六七八九十]{{1,3}})"
          rf"周?岁(?!{_ZH_AGE_THEN})", "年龄", "age"),
    _rule(rf"(?P<src>{_ZH}){_ZH_NOT}出生(?:在|于){_ZH_REST}", "出生于", "one"),
    _rule(rf"(?P<src>{_ZH})对(?P<dst>[^\s，,。！？；、]{{1,10}}?)过敏", "过敏", "one"),
    _rule(rf"(?P<src>{_ZH}){_ZH_NOT}(?P<rel>嫁给了|娶了)(?P<dst>{_ZH}){_ZH_END}"),
    _rule(rf"(?P<src>{_ZH})[和与跟](?P<dst>{_ZH})结婚了{_ZH_END}", "结婚"),
    # 我喜欢X, 我讨厌X, 我不喜欢X (爱人 is a spouse, not a verb)
    _rule(rf"{_ZH_I}(?:很|非常|特别|最|也|还|挺|真的|真|超|好|一直|比较|蛮|十分|都|就|从小)*"
          rf"(?P<rel>不太喜欢|不喜欢|讨厌|更喜欢|偏爱|热爱|喜欢|爱(?!人)){_ZH_REST}", None, "many"),
    # 我最喜欢的运动是羽毛球, 我的爱好是钓鱼
    _rule(rf"{_ZH_I}的?(?:最喜欢的[^\s，,。是]{{1,6}}|爱好|兴趣爱好)是{_ZH_REST}", "喜欢", "many"),
]

_EN_STOP = re.compile(r"[.;:!?()\"]|\s(?:because|but|since|when|while|although|though|so|if|unless|which|"
                      r"who|whom|whose|than|over|rather|until|as|especially|particularly)\b"
                      r"|\swith\s+(?:my|his|her|our|their|your)\b", re.IGNORECASE)
# A single-valued target ends at the first comma, conjunction or preposition after it.
_EN_STOP_ONE = re.compile(r",|\s(?:and|or|in|at|on|for|with|from|during|after|before|by|since|as|last|next|"
                          r"recently|yesterday|today|ago)\b",
                          re.IGNORECASE)
# A separator starts where its blanks start ((?<!\s)): tried from inside a run of blanks, "\s*,"
# would rescan the rest of the run from each position (quadratic).
_EN_SPLIT = re.compile(r"(?<!\s)\s*,\s*(?:and\s+|or\s+)?|(?<!\s)\s+(?:and|or|as well as)\s+", re.IGNORECASE)
# Trailing words stripped by suffix tests, not a "(...)+$" regex (tried from every position, it
# rescans the rest of the text: quadratic on a long list of them).
_EN_FILLERS = ("very much", "so much", "a lot", "too", "as well", "now", "anymore", "a bit", "at all", "here",
               "there", "these days")
_ZH_STOP = re.compile(r"[\s，,。.！!？?；;：:（(“”\"]|因为|但是|但|所以|而且|不过|可是|然后|因此|如果|虽然|尤其")
_ZH_SPLIT = re.compile(r"、|以及|(?<=\S\S)和(?=[^的\s]\S)")  # 苹果和香蕉 splits, 和平 / 温和的 do not
_ZH_MODAL = "啊呀哦呢吧啦嘛哈"
_ZH_PARTICLES = "的了" + _ZH_MODAL  # after a verb's object 的/了 end the clause
# 一家银行 is a bank, 周末去爬山 is hiking
_ZH_ITEM_LEAD = re.compile(r"^(?:(?:一|这|那)(?:家|个|所|间|座|只|条|位)|(?:周末|平时|每天|晚上|早上|经常|常常)?去(?=\S))")
_ZH_LEAD = re.compile(r"^(?:我记得|记得|听说|据说|其实|原来|对了|还有|另外|而且|然后|所以|因为|但是|不过|现在|目前|如今|"
                      r"以前|去年|今年|后来|最近|当然)+")
_ZH_TRAIL = ("现在", "目前", "一直", "正在", "正", "还", "也", "都", "已经", "曾经", "如今", "从小", "后来")
# "我哥哥大伟" names 大伟; "我妹妹" alone names nobody
_ZH_RELATIVE = re.compile(rf"^(?:我家?的?|[^的\s]{{1,6}}的)(?:{_ZH_ROLE})")


def _fold(word: str) -> str:
    return " ".join(word.replace("’", "'").casefold().split())


_ZH_DIGITS = {c: n for n, c in enumerate("零一二三四五六七八九")} | {"两": 2}


def _age(years: str) -> str:
    """A number of years in digits: "24" stays, "十八" -> "18", "二十一" -> "21", "五十" -> "50"."""
    if years.isdigit():
        return str(int(years))
    tens, _, ones = years.rpartition("十")
    if "十" not in years:
        return str(_ZH_DIGITS.get(years, 0)) if len(years) == 1 else ""
    value = (_ZH_DIGITS.get(tens, 0) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, 0) if ones else 0)
    return str(value) if len(tens) <= 1 and len(ones) <= 1 else ""


def _name(name: str) -> str:
    """A Chinese name without the lead-in, adverb or particle the regex took along ("我记得灿灿" -> 灿灿),
    or the relative it names ("我哥哥大伟" -> 大伟)."""
    if not _HAS_CJK.search(name):
        return name
    bare = _ZH_LEAD.sub("", name.rstrip(_ZH_MODAL))
    trimmed = _strip_words(bare, _ZH_TRAIL)
    bare = trimmed if len(trimmed) >= 2 or trimmed == "我" else bare  # 王正 is a name, 我现在 is not
    if relative := _ZH_RELATIVE.match(bare):
        bare = bare[relative.end():]
    # "小朱的女儿" describes someone and "老婆" alone is a role: neither names anybody
    return "" if "的" in bare or len(bare) > 6 or bare in _ZH_ROLES else bare


def _strip_words(text: str, words: tuple[str, ...], spaced: bool = False) -> str:
    """`text` without the run of `words` it ends with (case-insensitive; `spaced`: each word after
    blanks, which go with it)."""
    while True:
        for word in words:
            rest = text[:len(text) - len(word)]
            if text[len(rest):].casefold() == word and (not spaced or rest[-1:].isspace()):
                text = rest.rstrip() if spaced else rest
                break
        else:
            return text


def _items(text: str, many: bool) -> list[str]:
    """Targets clipped from the free text after a verb: up to the first clause boundary, split
    into list items ("apples and long walks" -> two) when `many`, else the first only."""
    cjk = bool(_HAS_CJK.search(text))
    text = (_ZH_STOP if cjk else _EN_STOP).split(text, maxsplit=1)[0]
    if not many and not cjk:
        text = _EN_STOP_ONE.split(text, maxsplit=1)[0]
    items = (_ZH_SPLIT if cjk else _EN_SPLIT).split(text)
    cleaned = []
    for item in items if many else items[:1]:
        item = _ZH_ITEM_LEAD.sub("", item.strip().rstrip(_ZH_PARTICLES)) if cjk else \
            _strip_words(item.strip(), _EN_FILLERS, spaced=True)
        if item and not item.startswith("的") and (len(item) <= 12 if cjk else len(item.split()) <= 8):
            cleaned.append(item)
    return cleaned


# --- clauses: "I love my job but I hate Mondays" is two facts ---------------------------------
# A sentence splits at "but"/"但是" and the like, and at "and"/"，" where a new predicate begins
# (a subject and a verb the rules know, or such a verb alone); a list ("apples and long walks",
# "一只叫球球，一只叫毛毛") is not split.
_EN_VERB = (r"(?:(?:also|still|now|then|later|really|just|absolutely|totally)\s+)*"
            r"(?:loves?|likes?|hates?|enjoys?|prefers?|adores?|dislikes?|works?|lives?|plays?|stud(?:y|ies)|"
            r"attends?|has|have|am|is|was|got|moved|grew|married|can['’]t\s+stand|(?:don['’]t|do\s+not)\s+like)\b")
_EN_SUBJECT = rf"(?:I|[Hh]e|[Ss]he|[Ww]e|{_CAP}(?:\s+{_CAP}){{0,2}})"
_ZH_CONNECTIVE = r"(?:后来|然后|现在|目前|所以|如今)?"
_ZH_VERB = (r"(?:很|也|还|又|都|更|最|非常|特别|一直|比较)*"
            r"(?:不太喜欢|不喜欢|喜欢|讨厌|更喜欢|热爱|爱(?!人)|住在|搬到|搬去|来自|在|对|出生)")
# Each separator starts where its blanks start ((?<!\s)) and has no two blank runs side by side
# ("\s*,?\s+" tries every split of a run between them: cubic on a long run of blanks).
_CLAUSE_BREAK = re.compile(
    rf"(?<!\s)\s*;\s*|(?<!\s)(?:\s*,)?\s+(?:but|yet|whereas|although|though)\s+"
    rf"|(?<!\s)\s*,\s*(?={_EN_SUBJECT}\s+{_EN_VERB})"
    rf"|(?<!\s)(?:\s*,)?\s+and\s+(?=(?:{_EN_SUBJECT}\s+)?{_EN_VERB})"
    rf"|[；;]|[，,]?(?:但是|可是|不过|而且|并且|但)|[，,](?={_ZH_CONNECTIVE}(?:我(?!们)|他|她|{_ZH_VERB}))")
_NO_SUBJECT = re.compile(rf"^(?:{_EN_VERB}|{_ZH_CONNECTIVE}{_ZH_VERB})")
_PRONOUN = re.compile(r"^(?:(?:[Hh]e|[Ss]he)(?![\w'’])|[他她](?!们))")
_FIRST_PERSON_START = re.compile(r"^(?:I(?![\w'’])|我(?!们))")
_BARE_SUBJECT = re.compile(_EN_SUBJECT)


def _clauses(sentence: str) -> list[str]:
    clauses, start = [], 0
    for cut in _CLAUSE_BREAK.finditer(sentence):
        if not _BARE_SUBJECT.fullmatch(sentence[start:cut.start()].strip()):  # "Tom and I got married": one subject
            clauses.append(sentence[start:cut.start()].strip())
            start = cut.end()
    return [*clauses, sentence[start:].strip()]


def _clause_text(clause: str, subject: str | None, person: str | None, speaker: str) -> str:
    """The clause with its subject spelled out: a left-out subject is the previous clause's
    ("but hate Mondays" -> "I hate Mondays"), and he/she is the one person the previous clause named."""
    if person and _PRONOUN.match(clause):
        return _PRONOUN.sub(person, clause, count=1)
    if subject and _NO_SUBJECT.match(clause):
        cjk = bool(_HAS_CJK.search(clause))
        spelled = ("我" if cjk else "I") if subject == speaker else subject
        return spelled + clause if cjk else f"{spelled} {clause}"
    return clause


def _sentence_triples(sentence: str, speaker: str) -> list[Triple]:
    return [t for _, triples in _clause_triples(sentence, speaker) for t in triples]


def clause_statements(text: str, speaker: str) -> list[tuple[str, list[Triple]]]:
    """Each clause of the text with its subject spelled out, and the facts the patterns read in it
    ("I live in Berlin and work at the MPI" -> "I live in Berlin", "I work at the MPI")."""
    return [pair for sentence in split_sentences(text) for pair in _clause_triples(sentence, speaker)]


def _clause_triples(sentence: str, speaker: str) -> list[tuple[str, list[Triple]]]:
    found: list[tuple[str, list[Triple]]] = []
    subject = person = None
    for clause in _clauses(sentence):
        clause = _clause_text(clause, subject, person, speaker)
        triples = [t for rule in _RULES for match in rule.pattern.finditer(clause)
                   for t in rule.triples(match, speaker)]
        facts = [t for t in triples if t.relationship not in _ROLE_RELATIONS]
        people = {t.target for t in triples if t.relationship in _ROLE_RELATIONS}
        if facts:
            subject = facts[-1].source
        elif _FIRST_PERSON_START.match(clause):
            subject = speaker
        person = people.pop() if len(people) == 1 else None
        found.append((clause, triples))
    return found


# A question tagged onto a statement, asking the other the same ("I'm from Ohio, and you?").
_TAG_QUESTION = re.compile(r"[,，!！]\s*(?:(?:and|how about|what about)\s+you(?:rself)?|那?(?:你|您|你们)呢)\s*[?？]$",
                           re.IGNORECASE)


def _pattern_triples(text: str, speaker: str) -> list[Triple]:
    found: list[Triple] = []
    for sentence in split_sentences(text):
        sentence = _TAG_QUESTION.sub("", sentence)   # "我是浙江的，你呢？" states, then asks back
        if sentence.endswith(("?", "？")):
            continue  # a question asks the graph, it does not add to it
        found.extend(_sentence_triples(sentence, speaker))
    return dedupe_triples(found)


class TripleExtractor:
    """The LLM when one is given, the offline patterns otherwise and whenever its answers are unusable.
    `label` names the configured backend; extract_labelled also says what produced the triples."""

    def __init__(self, llm: StructuredLLM | None = None) -> None:
        self.llm = llm
        self.label = llm.label if llm else PATTERNS_LABEL

    def extract(self, text: str, speaker: str = "user") -> list[Triple]:
        return self.extract_labelled(text, speaker)[0]

    def extract_labelled(self, text: str, speaker: str = "user") -> tuple[list[Triple], str]:
        """The triples and who produced them (returned, not kept: one extractor serves many threads)."""
        if self.llm is None or not text.strip():
            return _pattern_triples(text, speaker), PATTERNS_LABEL
        try:
            reply = self.llm.ask(triples_prompt(text, speaker), TriplesReply)
        except LLMError as exc:
            log.warning("%s triple extraction failed, using the offline patterns instead: %s", self.label, exc)
            return _pattern_triples(text, speaker), f"{PATTERNS_LABEL} (fallback from {self.label})"
        found = (_triple(t.source, t.relationship, t.target, speaker) for t in reply.triples)
        return dedupe_triples(t for t in found if t), self.label


# --- retrieval --------------------------------------------------------------------------------
# "i" too: chat is often written in lower case ("where do i live")
_FIRST_PERSON_WORD = re.compile(r"(?<![\w'’-])(?:[Ii]|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself)(?![\w'’])|(?<!自)我(?!们)")

# Words a question and a relation may use for the same relation ("Where do I live?" / lives in).
_RELATION_ALIASES = (
    {"wife", "husband", "spouse", "partner", "married", "marri", "妻子", "丈夫", "老婆", "老公", "结婚"},
    {"work", "works", "job", "employ", "工作", "上班"},
    {"live", "lives", "living", "lived", "home", "based", "reside", "住在", "住"},
    {"mother", "mom", "mum", "妈妈", "母亲"}, {"father", "dad", "爸爸", "父亲"})
# No group for likes: on LoCoMo (dev) it made "Why does Tim like Aragorn?" reach every thing Tim likes.
# What "where?" and "who?" ask for, among the relations the patterns extract.
_PLACE_RELATIONS = frozenset(["lives in", "works at", "works in", "works for", "grew up in", "moved to", "is from",
                              "born in", "studies at", "住在", "工作于", "就读于", "长大于", "搬到", "来自", "出生于"])
_PERSON_RELATIONS = _ROLE_RELATIONS | {"is married to", "结婚"}
_ASKS_PLACE = re.compile(r"\bwhere\b|哪里|哪儿|在哪|什么地方", re.IGNORECASE)
_ASKS_PERSON = re.compile(r"\bwho(?:m|se)?\b|谁", re.IGNORECASE)


def _stem(word: str) -> str:
    """Crudely, the first five letters: "painting", "paints" and "painted" meet ("lives" and "live"
    do not, hence the aliases)."""
    return word[:5] if word.isascii() else word


def _relation_words(text: str) -> set[str]:
    """A text's words, stemmed, with the aliases of any it shares with an alias group."""
    words = {_stem(t) for t in content_terms(text)}
    for group in _RELATION_ALIASES:
        stems = {_stem(w) for w in group}
        if words & stems:
            words |= stems
    return words


NAMED, OF_KIND = 2, 1   # how directly a relation answers a question (see relation_relevance)


def relation_relevance(question: str) -> Callable[[str], int]:
    """How directly a relationship answers the question: NAMED when it shares a word with it
    (through the aliases: "Where do I live?" names "lives in", "Who is my wife?" "is married to"),
    OF_KIND when it is what a where/who question asks for (a place, a person), else 0."""
    words = _relation_words(question)
    kinds = (_PLACE_RELATIONS if _ASKS_PLACE.search(question) else frozenset()) | \
        (_PERSON_RELATIONS if _ASKS_PERSON.search(question) else frozenset())

    def relevance(relationship: str) -> int:
        if _relation_words(relationship) & words:
            return NAMED
        return OF_KIND if normalize_relationship(relationship) in kinds else 0

    return relevance


def relations_for(triples: list[Triple], question: str, speaker: str, max_depth: int = 2,
                  max_relations: int = 10) -> tuple[list[str], list[Triple]]:
    """The entities a question names (the speaker for I, me, my, 我) and the relations around them
    that bear on it: those it names first, then those of the kind it asks for, then the rest of
    the neighbourhood, each nearest first. A question naming only the speaker gets only what it
    asks about: the speaker is linked to everything they ever said, which answers nothing."""
    start = entities_in(question, {t.source for t in triples} | {t.target for t in triples}, speaker)
    return start, bearing_on(question, speaker, start, related(triples, start, max_depth, len(triples)),
                             max_relations)


def bearing_on(question: str, speaker: str, start: list[str], near_triples: list[Triple],
               max_relations: int = 10) -> list[Triple]:
    """Of the triples near the start entities (nearest first: `related`), those relations_for
    keeps, in its order; shared with the walk a graph store answers (forest.personal.recall)."""
    relevance = relation_relevance(question)
    near = [(relevance(t.relationship), t) for t in near_triples]
    if all(entity_key(name) == entity_key(speaker) for name in start):
        near = [(score, t) for score, t in near if score]
    return [t for _, t in sorted(near, key=lambda st: -st[0])][:max_relations]  # stable: nearest first


def entities_in(text: str, known: Iterable[str], speaker: str | None = None) -> list[str]:
    """The known entities the text mentions, in order of first mention: CJK names as substrings,
    others as whole words, case-insensitively. With `speaker`, a first-person word mentions it."""
    folded = text.casefold()
    hits: dict[str, tuple[int, int, str]] = {}
    for name in known:
        key = entity_key(name)
        if not key or key in hits:
            continue
        if key == entity_key(speaker or "") and (match := _FIRST_PERSON_WORD.search(text)):
            hits[key] = (match.start(), -len(key), name)
            continue
        if _HAS_CJK.search(key):
            position = folded.find(key)
        else:
            match = re.search(rf"(?<![a-z0-9]){re.escape(key)}(?![a-z0-9])", folded)
            position = match.start() if match else -1
        if position >= 0:
            hits[key] = (position, -len(key), name)
    return [name for _, _, name in sorted(hits.values())]


def build_graph(triples: Iterable[Triple]) -> nx.MultiDiGraph:
    """Nodes keyed by entity_key (attribute "name": the first spelling), one edge per distinct
    triple (edge key: its position, attribute "triple")."""
    graph = nx.MultiDiGraph()
    for index, triple in enumerate(dedupe_triples(triples)):
        source, _, target = triple.key()
        for node, name in ((source, triple.source), (target, triple.target)):
            if node not in graph:
                graph.add_node(node, name=name)
        graph.add_edge(source, target, key=index, triple=triple)
    return graph


def _start_nodes(graph: nx.MultiDiGraph, start: Iterable[str]) -> list[str]:
    """Nodes for the start names; a start that is no node is read as text mentioning some."""
    names = [graph.nodes[node]["name"] for node in graph]
    nodes: list[str] = []
    for item in start:
        key = entity_key(item)
        found = [key] if key in graph else [entity_key(name) for name in entities_in(item, names)]
        nodes.extend(node for node in found if node not in nodes)
    return nodes


def related(triples: Iterable[Triple], start: Iterable[str], max_depth: int = 2,
            max_relations: int = 10) -> list[Triple]:
    """The triples within max_depth hops of the start entities, edges followed either way;
    nearest first, then in stored order; at most max_relations."""
    graph = build_graph(triples)
    sources = _start_nodes(graph, start)
    if not sources or max_depth < 1:
        return []
    hops = nx.multi_source_dijkstra_path_length(graph.to_undirected(as_view=True), sources, cutoff=max_depth - 1)
    reached = []
    for u, v, index, triple in graph.edges(keys=True, data="triple"):
        depth = min(hops.get(u, max_depth), hops.get(v, max_depth)) + 1  # an edge is one hop past its nearer end
        if depth <= max_depth:
            reached.append((depth, index, triple))
    return [triple for _, _, triple in sorted(reached, key=lambda r: r[:2])[:max_relations]]


def graph_paths(triples: Iterable[Triple], start: Iterable[str], max_depth: int = 2,
                max_paths: int = 10) -> list[list[Triple]]:
    """The longest simple paths (no entity twice, so cycles end) of up to max_depth hops from each
    start entity, edges followed either way, in stored order; at most max_paths."""
    graph = build_graph(triples)
    paths: list[list[Triple]] = []

    def walk(node: str, path: list[Triple], seen: set[str]) -> None:
        if len(paths) >= max_paths:
            return
        steps = [] if len(path) >= max_depth else sorted(
            [(i, t, v) for _, v, i, t in graph.out_edges(node, keys=True, data="triple")]
            + [(i, t, u) for u, _, i, t in graph.in_edges(node, keys=True, data="triple")], key=lambda s: s[0])
        steps = [step for step in steps if step[2] not in seen]
        if not steps and path:
            paths.append(path)
        for _, triple, after in steps:
            walk(after, path + [triple], seen | {after})

    for node in _start_nodes(graph, start):
        walk(node, [], {node})
    return paths


def format_path(path: list[Triple]) -> str:
    """"小朱 --[女儿]--> 灿灿 --[弟弟]--> 帅帅"; an edge walked backwards shows as "<--[弟弟]--"."""
    if not path:
        return ""
    first = path[0]
    current = first.source
    if len(path) > 1 and entity_key(first.source) in (entity_key(path[1].source), entity_key(path[1].target)):
        current = first.target  # the walk entered the first edge at its target
    parts = [current]
    for triple in path:
        if entity_key(triple.source) == entity_key(current):
            parts.append(f"--[{triple.relationship}]--> {triple.target}")
            current = triple.target
        else:
            parts.append(f"<--[{triple.relationship}]-- {triple.source}")
            current = triple.source
    return " ".join(parts)
