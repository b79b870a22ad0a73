"""The personal knowledge graph (seed 003): (source, relationship, target) triples extracted from
stored memories, entities normalized and deduplicated, and a bounded walk for retrieval.

Triples read like the seed's graph_relations: (小朱, 女儿, 灿灿) says 灿灿 is 小朱's daughter, so a
role word (daughter, 弟弟, dog) is always the relation from the owner to whoever holds the role.
Counts without a name ("小朱有两个孩子", "Tom has two kids") give no triple: a target such as
"两个" would join every family of two into one node and the walk would wander between them.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import networkx as nx

from forest.llm import ClaudeJSON, LLMError
from forest.prompts import triples_prompt
from forest.text import split_sentences

log = logging.getLogger("forest.personal.graph")

PATTERNS_LABEL = "offline:patterns"
FIELDS = ("source", "relationship", "target")


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
_FIRST_PERSON = frozenset(["i", "me", "my", "mine", "myself", "我", "我自己"])
# Pronouns and group words name nobody in particular: without coreference (seed 003 §11.1) they
# would merge everyone called "he" into one node.
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
    "fiancée": "fiance", "like": "likes", "enjoy": "likes", "love": "loves", "adore": "loves",
    "hate": "hates", "can't stand": "hates", "dislike": "dislikes", "don't like": "dislikes",
    "do not like": "dislikes", "prefer": "prefers", "work at": "works at", "work for": "works for",
    "老婆": "妻子", "太太": "妻子", "老公": "丈夫", "爸爸": "父亲", "妈妈": "母亲", "小狗": "狗", "小猫": "猫",
    "好朋友": "朋友", "不太喜欢": "不喜欢", "热爱": "爱", "偏爱": "更喜欢", "上班": "工作于", "工作": "工作于",
    "上学": "就读于", "读书": "就读于", "念书": "就读于", "嫁给了": "结婚", "娶了": "结婚",
}
_EN_ROLES = ("daughter son wife husband brother sister mother mom mum father dad friend colleague coworker "
             "co-worker boss manager partner boyfriend girlfriend fiance fiancé fiancée cousin uncle aunt "
             "grandmother grandma grandfather grandpa grandson granddaughter niece nephew child kid roommate "
             "neighbor neighbour teacher dog cat puppy kitten pet").split()
_ZH_ROLES = ("女儿 儿子 孩子 妻子 老婆 太太 丈夫 老公 爱人 哥哥 弟弟 姐姐 妹妹 爸爸 父亲 妈妈 母亲 爷爷 奶奶 外公 外婆 姥姥 "
             "姥爷 孙子 孙女 外孙 外孙女 朋友 好朋友 男朋友 女朋友 同事 老板 领导 上司 同学 室友 邻居 老师 学生 表哥 表姐 "
             "表弟 表妹 堂哥 堂姐 堂弟 堂妹 叔叔 阿姨 舅舅 姑姑 侄子 侄女 狗 猫 小狗 小猫 宠物").split()
_ROLE = _alternation(_EN_ROLES)
_ZH_ROLE = _alternation(_ZH_ROLES)
_ADJ = r"(?:younger|older|little|big|baby|elder|eldest|youngest|oldest|best|old|twin|close)"
# Capitalized words that open sentences but name nobody; "I" is matched on its own where allowed.
_NOT_NAME = _alternation(
    "I My The A An This That These Those It He She They We You Who What Where When Which Why How There Here His "
    "Her Our Their Your Its Then And But So Also Yes No Well Oh Actually Now Today Yesterday Anyway Btw Apparently "
    "Honestly Sadly Luckily Hey Hi Hello Ok Okay Because If While Everyone Everybody Someone Nobody".split())
_CAP = rf"(?!(?:{_NOT_NAME})\b)[A-ZÀ-ÖØ-Þ][\w-]*(?:['’][A-Z][\w-]*)?"
_NAME = rf"(?:{_CAP}(?:\s+{_CAP}){{0,2}}|[{_CJK}]{{1,6}})"
_SRC = rf"(?<![\w'’])(?P<src>I|{_NAME})"
_DST_BE = rf"(?<![\w'’])(?P<dst>I|{_NAME})(?:\s+(?:is|am)|['’]m)\s+"
_POSS = rf"(?P<src>[Mm]y|{_NAME}(?=['’]s\b))(?:['’]s)?"
_ADV = r"(?:(?:also|still|now|currently|really|absolutely|just|truly|do|totally|quite|kind of)\s+)*"
_REST = r"(?P<dst>[^.;!?\n]+)"
_ZH = r"[^\s，,。.！!？?；;：:、“”\"'（）()]{1,8}?"
_ZH_REST = r"(?P<dst>[^\s，,。.！!？?；;：:、]+)"
_ZH_END = r"(?=$|[\s，,。.！!？?；;：:、])"
_ZH_OWNERS = (r"(?<!自)(?P<src>我)(?!们)的?", rf"(?P<src>{_ZH})的")  # 的 may be left out after 我 only
_ZH_NOT = r"(?<![不没])"  # "灿灿不是…", "我不住在…": negated, no fact


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    relation: str | None  # None: the matched "rel" word, through _RELATIONS
    target: str = "name"  # "name": the captured name; "one" / "many": items clipped from free text

    def triples(self, match: re.Match[str], speaker: str) -> list[Triple]:
        relation = self.relation or _RELATIONS.get(_fold(match["rel"]), match["rel"])
        if self.target == "name":
            targets = [_name(match["dst"])]
        else:
            targets = _items(match["dst"], many=self.target == "many")
        found = (_triple(_name(match["src"]), relation, target, speaker) for target in targets)
        return [t for t in found if t]


def _rule(pattern: str, relation: str | None = None, target: str = "name") -> _Rule:
    return _Rule(re.compile(pattern), relation, target)


_RULES = [
    # "Emma is Alice's daughter", "Emma is my daughter", "I'm Tom's brother"
    _rule(rf"{_DST_BE}{_POSS}\s+(?:{_ADJ}\s+)?(?P<rel>{_ROLE})\b(?!['’-])"),
    # "Emma is the daughter of Alice"
    _rule(rf"{_DST_BE}the\s+(?:{_ADJ}\s+)?(?P<rel>{_ROLE})\s+of\s+(?P<src>me|{_NAME})\b"),
    # "My daughter is Emma", "my wife Sarah", "my dog is called Rex", "Alice's son, Tom"
    _rule(rf"(?<![\w'’]){_POSS}\s+(?:{_ADJ}\s+)?(?P<rel>{_ROLE})(?:['’]s\s+name)?"
          rf"(?:\s*,\s*|\s+(?:is\s+)?(?:called|named)\s+|\s+is\s+|\s+)(?P<dst>{_NAME})\b(?!['’])"),
    # "Tom has a dog named Rex", "I have a sister called Mia"
    _rule(rf"{_SRC}\s+(?:also\s+)?(?:has|have)\s+(?:a|an|one)\s+(?:{_ADJ}\s+)?(?P<rel>{_ROLE})\s*,?\s+"
          rf"(?:named|called)\s+(?P<dst>{_NAME})\b"),
    _rule(rf"{_SRC}\s+{_ADV}(?P<rel>works?\s+(?:at|for))\s+{_REST}", None, "one"),
    _rule(rf"{_SRC}\s+{_ADV}lives?\s+in\s+{_REST}", "lives in", "one"),
    _rule(rf"{_SRC}(?:(?:\s+(?:is|am)|['’]m)\s+(?:originally\s+)?from|\s+comes?\s+from)\s+{_REST}", "is from",
          "one"),
    _rule(rf"{_SRC}\s+(?:was|were)\s+born\s+in\s+{_REST}", "born in", "one"),
    _rule(rf"{_SRC}(?:\s+(?:is|am)|['’]m)\s+married\s+to\s+(?P<dst>{_NAME})\b", "is married to"),
    # Only the speaker's own likes: "People love music" is not a personal fact, and a lower-case
    # subject cannot be told from a name.
    _rule(rf"(?<![\w'’])(?P<src>I)\s+{_ADV}(?P<rel>like|love|hate|prefer|enjoy|adore|dislike|"
          rf"don['’]t like|do not like|can['’]t stand)\s+{_REST}", None, "many"),
    # 灿灿是小朱的女儿, 帅帅是我的弟弟
    _rule(rf"(?P<dst>{_ZH}){_ZH_NOT}是(?P<src>[^\s，,。！？；、的]{{1,8}})的(?P<rel>{_ZH_ROLE}){_ZH_END}"),
    # 我的女儿叫灿灿, 我女儿叫灿灿, 小朱的儿子名叫帅帅
    *(_rule(rf"{owner}(?P<rel>{_ZH_ROLE})(?:的名字)?(?:叫做|名叫|叫)(?P<dst>{_ZH}){_ZH_END}")
      for owner in _ZH_OWNERS),
    # 小朱的女儿是灿灿; "是" also introduces jobs ("我的女儿是医生"), so the target must look like a
    # short name: no measure word or adverb first, no job suffix last.
    *(_rule(rf"{owner}(?P<rel>{_ZH_ROLE})是(?P<dst>(?![一个很在我这那独最])[^\s，,。.！!？?；;：:、]{{1,4}}?)"
            rf"(?<![师生员家长工手者士人]){_ZH_END}") for owner in _ZH_OWNERS),
    # 灿灿还有一个弟弟，叫帅帅; 我有一只猫叫咪咪
    _rule(rf"(?P<src>{_ZH})(?:还|也)?有(?:一|两|二|三|四|五|几)?(?:个|位|只|条|匹)?(?P<rel>{_ZH_ROLE})"
          rf"[，,]?\s*(?:名字)?(?:叫做|名叫|叫)(?P<dst>{_ZH}){_ZH_END}"),
    # 小朱在北京工作 ("现在在…" is time, not place: 在 after 现/正/存/实/所/自 is not the preposition)
    _rule(rf"(?P<src>{_ZH})(?<![不没现正存实所自])在(?P<dst>[^\s，,。！？；、]{{1,16}}?)"
          r"(?P<rel>工作|上班|上学|读书|念书)", None, "one"),
    _rule(rf"(?P<src>{_ZH}){_ZH_NOT}住在{_ZH_REST}", "住在", "one"),
    _rule(rf"(?P<src>{_ZH}){_ZH_NOT}来自{_ZH_REST}", "来自", "one"),
    _rule(rf"(?P<src>{_ZH}){_ZH_NOT}出生(?:在|于){_ZH_REST}", "出生于", "one"),
    _rule(rf"(?P<src>{_ZH}){_ZH_NOT}(?P<rel>嫁给了|娶了)(?P<dst>{_ZH}){_ZH_END}"),
    _rule(rf"(?P<src>{_ZH})[和与跟](?P<dst>{_ZH})结婚了{_ZH_END}", "结婚"),
    # 我喜欢X, 我讨厌X, 我不喜欢X (爱人 is a spouse, not a verb)
    _rule(rf"(?<!自)(?P<src>我)(?!们)(?:很|非常|特别|最|也|还|挺|真的|真|超|好|一直|比较|蛮|十分|都)*"
          rf"(?P<rel>不太喜欢|不喜欢|讨厌|更喜欢|偏爱|热爱|喜欢|爱(?!人)){_ZH_REST}", None, "many"),
]

_EN_STOP = re.compile(r"[.;:!?()\"]|\s(?:because|but|since|when|while|although|though|so|if|unless|which|"
                      r"who|whom|whose|than|over|rather|until|as)\b|\swith\s+(?:my|his|her|our|their|your)\b",
                      re.IGNORECASE)
# A single-valued target ends at the first comma, conjunction or preposition after it.
_EN_STOP_ONE = re.compile(r",|\s(?:and|or|in|at|on|for|with|from|during|after|before|by|since|as)\b",
                          re.IGNORECASE)
_EN_SPLIT = re.compile(r"\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|as well as)\s+", re.IGNORECASE)
_EN_FILLER = re.compile(r"(?:\s+(?:very much|so much|a lot|too|as well|now|anymore|a bit))+$", re.IGNORECASE)
_ZH_STOP = re.compile(r"[\s，,。.！!？?；;：:（(“”\"]|因为|但是|但|所以|而且|不过|可是|然后|因此|如果|虽然|尤其")
_ZH_SPLIT = re.compile(r"、|以及|(?<=\S\S)和(?=[^的\s]\S)")  # 苹果和香蕉 splits, 和平 / 温和的 do not
_ZH_MODAL = re.compile(r"(?:啊|呀|哦|呢|吧|啦|嘛|哈)+$")
_ZH_PARTICLES = re.compile(r"(?:的|了|啊|呀|哦|呢|吧|啦|嘛|哈)+$")  # after a verb's object 的/了 end the clause
_ZH_MEASURE = re.compile(r"^(?:一|这|那)(?:家|个|所|间|座|只|条|位)")
_ZH_LEAD = re.compile(r"^(?:我记得|记得|听说|据说|其实|原来|对了|还有|另外|而且|然后|所以|因为|但是|不过|现在|目前|如今|"
                      r"以前|去年|今年|后来|最近|当然)+")
_ZH_TRAIL = re.compile(r"(?:现在|目前|一直|正在|正|还|也|都|已经|曾经|如今)+$")


def _fold(word: str) -> str:
    return " ".join(word.replace("’", "'").casefold().split())


def _name(name: str) -> str:
    """A Chinese name without the lead-in, adverb or particle the regex took along ("我记得灿灿" -> 灿灿)."""
    if not _HAS_CJK.search(name):
        return name
    bare = _ZH_LEAD.sub("", _ZH_MODAL.sub("", name))
    trimmed = _ZH_TRAIL.sub("", bare)
    bare = trimmed if len(trimmed) >= 2 or trimmed == "我" else bare  # 王正 is a name, 我现在 is not
    return "" if "的" in bare or len(bare) > 6 else bare  # "小朱的女儿" describes someone, it names nobody


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
        item = _ZH_MEASURE.sub("", _ZH_PARTICLES.sub("", item.strip())) if cjk else _EN_FILLER.sub("", item.strip())
        if item and not item.startswith("的") and (len(item) <= 12 if cjk else len(item.split()) <= 8):
            cleaned.append(item)
    return cleaned


def _pattern_triples(text: str, speaker: str) -> list[Triple]:
    found: list[Triple] = []
    for sentence in split_sentences(text):
        if sentence.endswith(("?", "？")):
            continue  # a question asks the graph, it does not add to it
        for rule in _RULES:
            for match in rule.pattern.finditer(sentence):
                found.extend(rule.triples(match, speaker))
    return dedupe_triples(found)


def _validate_reply(reply: dict[str, Any]) -> str | None:
    triples = reply.get("triples")
    if not isinstance(triples, list):
        return "reply has no 'triples' list"
    for item in triples:
        if not isinstance(item, dict) or not all(isinstance(item.get(f), str) and item[f].strip() for f in FIELDS):
            return "every triple needs non-empty 'source', 'relationship' and 'target' strings"
    return None


class TripleExtractor:
    """Claude when a client is given, the offline patterns otherwise and whenever Claude fails.
    `label` names the configured backend; extract_labelled also says what produced the triples."""

    def __init__(self, llm: ClaudeJSON | None = None) -> None:
        self.llm = llm
        self.label = f"claude:{llm.model}" if llm else PATTERNS_LABEL

    def extract(self, text: str, speaker: str = "user") -> list[Triple]:
        return self.extract_labelled(text, speaker)[0]

    def extract_labelled(self, text: str, speaker: str = "user") -> tuple[list[Triple], str]:
        """The triples and who produced them (returned, not kept: one extractor serves many threads)."""
        if self.llm is None or not text.strip():
            return _pattern_triples(text, speaker), PATTERNS_LABEL
        try:
            reply = self.llm.ask(triples_prompt(text, speaker), _validate_reply)
        except LLMError as exc:
            log.warning("Claude triple extraction failed, using the offline patterns instead: %s", exc)
            return _pattern_triples(text, speaker), f"{PATTERNS_LABEL} (fallback from {self.label})"
        found = (_triple(t["source"], t["relationship"], t["target"], speaker) for t in reply["triples"])
        return dedupe_triples(t for t in found if t), self.label


# --- retrieval --------------------------------------------------------------------------------
_FIRST_PERSON_WORD = re.compile(r"(?<![\w'’])(?:I|[Mm]e|[Mm]y|[Mm]ine|[Mm]yself)(?![\w'’])|(?<!自)我(?!们)")


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
