"""Privacy filter (NeuroMemory v2 spec): PRIVATE input is stored, PUBLIC input is dropped.

PRIVATE is what only the user can tell us: their preferences, experiences, plans, health, work,
opinions and the people in their life. PUBLIC is what the main model already knows (general
knowledge, encyclopedic facts, public information) and questions or requests that assert nothing
new about the user. Such a question ("What did I eat yesterday?") is about the user but gives the
store nothing to keep, so it is PUBLIC, i.e. not stored, as in the spec's debug example.

With a Claude client the decision is Claude's. Offline, hand-written rules settle first-person
statements, relations between people the user knows, questions and encyclopedic statements;
whatever they leave open goes to the nearest built-in prototype sentences under the embedder.
Every failure answers PRIVATE (as the spec asks: rather store too much than lose something).
"""
from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass

import numpy as np

from forest.models.embedders import Embedder
from forest.errors import ServiceUnavailable
from forest.models.llm import StructuredLLM
from forest.models.replies import PrivacyReply
from forest.models.prompts import privacy_prompt
from forest.text import split_sentences, truncate

log = logging.getLogger("forest.personal.privacy")

PRIVATE, PUBLIC = "PRIVATE", "PUBLIC"
OFFLINE_LABEL = "offline:rules+embedding"
TOP_K = 3  # prototypes averaged per side: steadier than the single nearest one


# Prototypes for what the rules leave open, so mostly sentences without "I"/"我": diary-style
# fragments and third-person news of acquaintances against encyclopedic, how-to and news text.
PRIVATE_PROTOTYPES = (
    "Dinner at Sarah's parents' place on Friday night.",
    "Feeling exhausted after the night shift, going to bed early.",
    "Dentist appointment moved to Thursday afternoon.",
    "Anna prefers tea over coffee and hates early mornings.",
    "Jake got promoted to team lead last month.",
    "Finally finished painting the spare bedroom this weekend.",
    "I usually go running along the river before work.",
    "Mike and his girlfriend are moving in together in June.",
    "Car insurance renewal is due at the end of the month.",
    "Headache again since this morning, took two aspirin.",
    "Grace from accounting keeps borrowing the stapler.",
    "Promised the kids pancakes for Sunday breakfast.",
    "下午三点和客户开会，记得带合同。",
    "上周末带孩子去了海洋馆，玩得很开心。",
    "张姐的儿子今年高考，考得不错。",
    "最近失眠严重，每天只睡四五个小时。",
    "国庆打算回老家看看爸妈。",
    "我不太能吃辣，一吃就胃疼。",
    "老陈借了我五百块钱还没还。",
    "明天早上送女儿去学钢琴。",
    "房租下周到期，记得转账给房东。",
    "感冒还没好，嗓子一直疼。",
    "小美最爱吃草莓蛋糕。",
    "这个月工资又晚发了。",
)
PUBLIC_PROTOTYPES = (
    "The Amazon is the largest rainforest in the world.",
    "Albert Einstein published the theory of general relativity in 1915.",
    "An atom consists of a nucleus surrounded by electrons.",
    "To boil an egg, place it in boiling water for about eight minutes.",
    "The Great Depression began with the stock market crash of 1929.",
    "Inflation is a general rise in the price level of goods and services.",
    "Most smartphones today run on lithium-ion batteries.",
    "The central bank raised interest rates by a quarter point on Wednesday.",
    "Adults should get at least 150 minutes of moderate exercise a week.",
    "Real Madrid beat Barcelona 2-1 in last night's match.",
    "Snow and strong winds are forecast for the northern provinces tomorrow.",
    "The Louvre in Paris is the most visited museum in the world.",
    "珠穆朗玛峰位于中国和尼泊尔的边境。",
    "唐朝的都城是长安。",
    "植物通过根部吸收水分和矿物质。",
    "勾股定理描述了直角三角形三边之间的关系。",
    "煮米饭时水和米的比例大约是一比一点二。",
    "人民币是中华人民共和国的法定货币。",
    "老年人每天应保证七到八小时的睡眠。",
    "维生素C可以增强人体免疫力。",
    "中国男足在世界杯预选赛中输给了日本队。",
    "明天北方地区将有大范围降雪。",
    "端午节有吃粽子和赛龙舟的习俗。",
    "莫言获得了2012年诺贝尔文学奖。",
)


@dataclass(frozen=True)
class PrivacyDecision:
    label: str  # PRIVATE | PUBLIC
    reason: str  # one readable line: the rule or similarity that decided, or Claude's reason
    decided_by: str  # "claude:<model>" | "offline:rules+embedding" | "fallback:<why>"

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


class PrivacyClassifier:
    """Claude when a client is given, else rules then embedding prototypes; never raises."""

    def __init__(self, embedder: Embedder, llm: StructuredLLM | None = None) -> None:
        self.embedder = embedder
        self.llm = llm
        self._prototypes: _Prototypes | None = None

    def classify(self, text: str) -> PrivacyDecision:
        return self.classify_many([text])[0]

    def classify_many(self, texts: list[str]) -> list[PrivacyDecision]:
        """One decision per text; offline, the texts the rules leave open are embedded together."""
        if self.llm is not None:
            return [self._ask_llm(self.llm, text) for text in texts]
        decisions: dict[int, PrivacyDecision] = {}
        open_texts: dict[int, str] = {}
        for i, text in enumerate(texts):
            try:
                decision = rule_decision(text)
            except Exception as exc:  # a filter bug must not lose the memory
                log.exception("privacy rules failed")
                decision = _fallback("rules-error", exc)
            if decision is None:
                open_texts[i] = " ".join(_statements(text))
            else:
                decisions[i] = decision
        if open_texts:
            decisions.update(zip(open_texts, self._nearest_prototypes(list(open_texts.values()))))
        return [decisions[i] for i in range(len(texts))]

    def _ask_llm(self, llm: StructuredLLM, text: str) -> PrivacyDecision:
        """A model server that does not answer fails the write, so the queue keeps the input and
        retries it; unusable answers (or anything else going wrong) store it as PRIVATE."""
        try:
            reply = llm.ask(privacy_prompt(text), PrivacyReply, max_tokens=200)
        except ServiceUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - LLMError, and anything the SDK lets through
            log.warning("%s privacy classification failed, storing as PRIVATE: %s", llm.label, exc)
            return _fallback("llm-error", exc)
        return PrivacyDecision(reply.label, " ".join(reply.reason.split()) or "no reason given", llm.label)

    def _nearest_prototypes(self, texts: list[str]) -> list[PrivacyDecision]:
        try:
            if self._prototypes is None:
                self._prototypes = _Prototypes.embed(self.embedder)
            vectors = self.embedder.embed_passages(texts)
            return [self._prototypes.decide(v) for v in vectors]
        except Exception as exc:  # embedder down or broken: store rather than drop
            log.exception("privacy embedding failed")
            return [_fallback("embedding-error", exc) for _ in texts]


@dataclass(frozen=True)
class _Prototypes:
    """Prototype vectors and the margin at which a text counts as PRIVATE.

    The boundary is not 0: diary-like sentences sit closer to everything under E5 than
    encyclopedic ones, so raw margins lean PRIVATE. It is the midpoint between the prototypes' own
    leave-one-out margins, which follows the embedder in use instead of a constant fitted to one.
    """

    private: np.ndarray
    public: np.ndarray
    boundary: float

    @classmethod
    def embed(cls, embedder: Embedder) -> _Prototypes:
        vectors = embedder.embed_passages(PRIVATE_PROTOTYPES + PUBLIC_PROTOTYPES)
        private, public = vectors[: len(PRIVATE_PROTOTYPES)], vectors[len(PRIVATE_PROTOTYPES) :]
        sims = vectors @ vectors.T
        np.fill_diagonal(sims, -np.inf)  # leave each prototype out of its own side
        margins = [_top_mean(row[: len(private)]) - _top_mean(row[len(private) :]) for row in sims]
        boundary = (np.mean(margins[: len(private)]) + np.mean(margins[len(private) :])) / 2
        return cls(private, public, float(boundary))

    def decide(self, vector: np.ndarray) -> PrivacyDecision:
        private_sims, public_sims = self.private @ vector, self.public @ vector
        private_score, public_score = _top_mean(private_sims), _top_mean(public_sims)
        margin = private_score - public_score
        # At the boundary the text is stored: dropping a memory costs more than keeping a fact.
        label = PRIVATE if margin >= self.boundary else PUBLIC
        nearest = PRIVATE_PROTOTYPES[int(private_sims.argmax())] if label == PRIVATE \
            else PUBLIC_PROTOTYPES[int(public_sims.argmax())]
        return PrivacyDecision(label, f"embedding: top-{TOP_K} similarity {private_score:.3f} to PRIVATE vs "
                               f"{public_score:.3f} to PUBLIC prototypes, margin {margin:+.3f} against "
                               f"boundary {self.boundary:+.3f}; nearest {truncate(nearest, 60)!r}", OFFLINE_LABEL)


def _fallback(why: str, exc: Exception) -> PrivacyDecision:
    return PrivacyDecision(PRIVATE, truncate(f"classification failed, stored to be safe: {exc}", 200),
                           f"fallback:{why}")


def _top_mean(sims: np.ndarray) -> float:
    return float(np.sort(sims)[-TOP_K:].mean())


# ---- rules -------------------------------------------------------------------------------------

_KIN_EN = (r"(?:daughters?|sons?|wife|husband|mother|father|mom|mum|dad|parents|brothers?|sisters?|"
           r"siblings?|grand(?:son|daughter|mother|father|ma|pa|parents|kids|children)|aunt|uncle|"
           r"cousins?|nieces?|nephews?|fianc[ée]e?|boyfriend|girlfriend|partner|kids?|children|baby|"
           r"in-laws|(?:mother|father|brother|sister|son|daughter)-in-law|friends?|colleagues?|"
           r"co-?workers?|boss|manager|roommates?|flatmates?|neighbou?rs?|classmates?)")
_KIN_ZH = ("女儿|儿子|妻子|老婆|媳妇|丈夫|老公|爸爸|妈妈|父亲|母亲|老爸|老妈|爸妈|爷爷|奶奶|外公|外婆|"
           "姥姥|姥爷|哥哥|姐姐|弟弟|妹妹|孩子|宝宝|孙子|孙女|叔叔|阿姨|舅舅|姑姑|表哥|表姐|表弟|表妹|"
           "堂哥|堂姐|侄子|侄女|外甥|岳父|岳母|公公|婆婆|女朋友|男朋友|对象|未婚夫|未婚妻|闺蜜|朋友|"
           "同事|同学|室友|老板|领导|上司|邻居")
# Bare family words as a sentence's subject refer to the speaker's own family.
_OWN_FAMILY_ZH = "妈妈|爸爸|老妈|老爸|爸妈|老婆|老公|媳妇|儿子|女儿|爷爷|奶奶|外公|外婆|姥姥|姥爷|哥哥|姐姐|弟弟|妹妹"
_SURNAMES = ("王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏"
             "魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚"
             "邵万钱严覃武戴莫孔向汤")
# Reduplications that are adverbs, kinship words or common nouns rather than pet names.
_NOT_NAMES = frozenset(c * 2 for c in "常天刚慢渐偏往仅明好悄轻静默人处事年时个样多大小高星宝妈爸哥姐弟妹"
                                    "爷奶姥公婆叔伯舅姑娃谢看想试说走聊等稍紧满久纷重深")
# Day- and week-scale time words: a user's diary and agenda, rarer in encyclopedic text than years.
_TIME_ZH = ("今天|明天|后天|昨天|前天|今晚|明晚|昨晚|今早|明早|上午|下午|中午|晚上|早上|上周|下周|这周|"
            "本周|周末|前几天|这几天|刚才|待会|周[一二三四五六日天]|星期[一二三四五六日天]|礼拜[一二三四五六日天]")
_TIME_EN = (r"\b(?:today|tonight|tomorrow|yesterday|this (?:morning|afternoon|evening|weekend|week)|"
            r"(?:next|last) (?:week|month|year|weekend|night|summer|winter|spring|autumn|fall|"
            r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|on (?:monday|tuesday|wednesday|"
            r"thursday|friday|saturday|sunday)s?)\b")

_RULES_EN: list[tuple[str, re.Pattern[str]]] = [
    ("first-person statement", re.compile(r"\bI(?:'m|'ve|'d|'ll)?\b(?=\s+[a-z]|'|’)")),
    ("first-person possessive", re.compile(r"\b(?:my|mine)\b", re.IGNORECASE)),
    ("first-person object", re.compile(r"(?<!\blet )(?<!\bexcuse )\bme\b", re.IGNORECASE)),
    # Not the "we" of textbooks ("we call this inertia") nor "our" planet, body, country...
    ("first-person plural statement", re.compile(
        r"\bwe(?:'re|'ve|'ll|'d)?\b(?!\s+(?:know|call|can|could|may|might|must|should|often|usually|"
        r"generally|say|refer|define|see|find|obtain|get|consider|assume|need to|have to)\b)", re.IGNORECASE)),
    ("first-person plural possessive", re.compile(
        r"\bour(?:s)?\b(?!\s+(?:own\s+)?(?:planet|world|solar|galaxy|universe|bod(?:y|ies)|brains?|species|"
        r"society|ancestors|country|nation|history|civili[sz]ation|environment|climate|economy|sun|moon|"
        r"oceans?|understanding)\b)", re.IGNORECASE)),
    ("first-person plural object", re.compile(
        r"\b(?:with|to|for|visit(?:s|ed)?|told|asked|gave|invited|joined?|saw|see|call(?:ed)?)\s+us\b",
        re.IGNORECASE)),
    ("family member named by role", re.compile(r"\b(?:Mom|Mum|Mommy|Mummy|Dad|Daddy|Grandma|Grandpa|"
                                              r"Granny|Grandad|Nana|Auntie)\b")),
    ("diary entry without a subject", re.compile(
        r"^(?:Went|Had|Got|Met|Saw|Ate|Bought|Spent|Took|Visited|Called|Finished|Started|Moved|Feeling|"
        r"Felt|Heading|Going|Planning|Booked|Cooked|Watched|Just)\b\s+[a-z]")),
    # Anchored (the text is one line): unanchored, both lookaheads rescan the rest from every position.
    ("personal time with family or friends", re.compile(
        rf"^(?=.*{_TIME_EN})(?=.*\b(?:the kids|the in-laws|the family|friends|a friend|the boss|the baby)\b)",
        re.IGNORECASE)),
]
_RULES_ZH: list[tuple[str, re.Pattern[str]]] = [
    # 我国/我省 speak for a country or province, not the user.
    ("first-person statement", re.compile(r"(?<!自)(?:我|咱|俺)(?!国|省|市|们国家)")),
    ("family member as subject", re.compile(rf"^(?:(?:{_TIME_ZH})[，,]?)?(?:{_OWN_FAMILY_ZH})")),
    ("personal time with family or friends", re.compile(rf"^(?=.*(?:{_TIME_ZH}))(?=.*(?:{_KIN_ZH}))")),
    ("personal plan without a subject", re.compile(
        rf"^(?:(?:{_TIME_ZH})[，,]?)+(?:要去|得去|打算|准备|计划|约了|想去)")),
]
# Informal names: 小朱, 老王 (a surname after 小/老) and pet names like 灿灿 (a doubled character).
_INFORMAL_NAME = re.compile(rf"[小老][{_SURNAMES}]|([\u4e00-\u9fff])\1")
_KIN_ZH_RE = re.compile(_KIN_ZH)
# "<first name>'s [younger] brother": people named by first name alone are the user's circle;
# public figures come with a surname ("Donald Trump's daughter") or a title ("the Queen's son").
_NAMED_RELATION = re.compile(
    rf"\b[A-Z][a-z]+['’]s\s+(?:(?:younger|older|little|big|elder|eldest|youngest|new|best|twin|step)\s+)?"
    rf"{_KIN_EN}\b")
_PAIR_RELATION = re.compile(r"\b[A-Z][a-z]+ and [A-Z][a-z]+ (?:are|were|got) (?:siblings|cousins|twins|"
                            r"married|engaged|divorced|dating|best friends)\b")
_ROMAN_I = re.compile(r"\b(?:War|Part|Chapter|Phase|Type|Class|Act|Volume|Book|Stage|Grade|Level|Henry|"
                      r"Elizabeth|Charles|George|Edward|James|William|Louis|Peter|Catherine|Nicholas|"
                      r"Alexander|Frederick|John|Richard|Mary|Philip|Francis|Napoleon)\s+I\b")

# Predicates of reference works, rare in anyone's diary; checked only once no personal rule met.
_ENCYCLOPEDIC = re.compile(
    r"\b(?:capital of|founded (?:by|in)|invented|discovered|is located|located in|(?:is|are|also) known as|"
    r"is called|consists? of|is defined as|refers to|is a type of|is one of the|in the world|on earth|"
    r"century|dynasty|emperor|population|square (?:kilometres|kilometers|miles)|chemical|theorem|"
    r"Nobel|prime minister|president of)\b|首都|省会|位于|坐落于|创立|创办|创建|成立于|发明|发现了|被称为|"
    r"被誉为|原名|又名|世界上|全球最|之一|化学式|分子|元素|定律|定理|朝代|王朝|皇帝|世纪|公元|诗人|"
    r"科学家|人口|平方公里|海拔|全长|是指|指的是", re.IGNORECASE)

# Questions and requests: they ask, they do not tell (unless they ask us to remember something).
_ZH_QUESTION_WORD = "什么|怎么|怎样|如何|哪|多少|谁|为什么|是否|能不能|可不可以|要不要|有没有|是不是"
_QUESTION_END = re.compile(r"[?？][\"'”’)）]*$|吗[。.!！]?$")
# Chinese often asks without a mark: "小朱的儿子叫什么" (the spec's debug example) ends on its
# interrogative word.
_ZH_QUESTION_TAIL = re.compile(r"(?:什么|谁|哪里|哪儿|哪个|多少|几个|几岁|几点|怎么样|为什么|怎么办)[呢啊呀]?[。.!！]?$")
# 呢 also ends plain statements ("我还在上班呢"); it asks only beside a question word before it
# (looked for in two passes: "word.*呢$" would rescan the rest from every question word).
_NE_END = re.compile(r"呢[。.!！]?$")
_ZH_QUESTION_WORD_RE = re.compile(_ZH_QUESTION_WORD)
_REQUEST_START = re.compile(
    r"^(?:please|pls|can you|could you|would you|will you|tell me|explain|show me|give me|help me|"
    r"let me know|list|describe|define|translate|summari[sz]e|how to|(?:what|who|where|when|which) "
    r"(?:is|are|was|were)\b|(?:how|why) (?:do|does|did|is|are)\b|"
    r"I(?: wonder| want to know| would like to know|'d like to know| was wondering)|"
    r"请|帮我|麻烦|告诉我|给我|解释|介绍一下|说说|讲讲|我想知道|我想问|问一下|如何|怎么|怎样|为什么|什么是)",
    re.IGNORECASE)
_REMEMBER = re.compile(r"\b(?:remember|note that|keep in mind|don't forget|do not forget)\b|记住|记一下|记得|别忘",
                       re.IGNORECASE)
_INTERROGATIVE_CLAUSE = re.compile(
    r"^\s*(?:(?:so|and|but|then|or)\s+)?(?:what|how|where|when|who|whom|whose|why|which|is|are|was|were|"
    rf"do|does|did|can|could|should|would|will|shall|may)\b|吗|呢|{_ZH_QUESTION_WORD}", re.IGNORECASE)


def rule_decision(text: str) -> PrivacyDecision | None:
    """The rules' decision, or None when they leave the text to the embedding."""
    text = " ".join(text.split())
    if not text:
        return PrivacyDecision(PUBLIC, "rule: empty input, nothing to store", OFFLINE_LABEL)
    statements = _statements(text)
    # Clauses leading into a question may still tell something ("My wife is vegan, what ...?").
    lead_ins = [clause for sentence in split_sentences(text) if _asks(sentence)
                for clause in re.split(r"[,;，；、]", sentence)[:-1]
                if clause.strip() and not _INTERROGATIVE_CLAUSE.search(clause)
                and not _REQUEST_START.search(clause.strip())]
    for part in statements + lead_ins:
        hit = _personal_rule(part)
        if hit:
            return PrivacyDecision(PRIVATE, f"rule: {hit}", OFFLINE_LABEL)
    if not statements:
        return PrivacyDecision(PUBLIC, "rule: a question or request that asserts nothing about the user "
                               "is not stored", OFFLINE_LABEL)
    match = _ENCYCLOPEDIC.search(" ".join(statements))
    if match:
        return PrivacyDecision(PUBLIC, f"rule: encyclopedic statement without personal content "
                               f"({_quote(' '.join(statements), match)})", OFFLINE_LABEL)
    return None


def _statements(text: str) -> list[str]:
    return [s for s in split_sentences(" ".join(text.split())) if not _asks(s)]


def _asks(sentence: str) -> bool:
    ne = _NE_END.search(sentence)
    if _QUESTION_END.search(sentence) or (ne and _ZH_QUESTION_WORD_RE.search(sentence, 0, ne.start())) \
            or _ZH_QUESTION_TAIL.search(sentence):
        return True
    return bool(_REQUEST_START.search(sentence)) and not _REMEMBER.search(sentence)


def _personal_rule(sentence: str) -> str | None:
    """Which personal-content rule the sentence meets, with the words that met it."""
    english = _ROMAN_I.sub("", sentence)
    for name, pattern in _RULES_EN:
        match = pattern.search(english)
        if match:
            return f"{name} ({_quote(english, match)})"
    for match in _NAMED_RELATION.finditer(sentence):
        before = sentence[: match.start()].split()
        if not before or not (before[-1][:1].isupper() or before[-1].lower() == "the"):
            return f"relation between people named by first name ({_quote(sentence, match)})"
    match = _PAIR_RELATION.search(sentence)
    if match:
        return f"relation between people named by first name ({_quote(sentence, match)})"
    for name, pattern in _RULES_ZH:
        match = pattern.search(sentence)
        if match:
            return f"{name} ({_quote(sentence, match)})"
    names = [m for m in _INFORMAL_NAME.finditer(sentence) if m.group(0) not in _NOT_NAMES]
    if names and _KIN_ZH_RE.search(sentence):
        return f"relation between people the user knows ({_quote(sentence, names[0])})"
    return None


def _quote(sentence: str, match: re.Match[str]) -> str:
    """The matched words with a little context: lookahead-only rules match nothing visible."""
    start = max(0, match.start() - 10)
    return repr(truncate(sentence[start : max(match.end(), match.start() + 1) + 15], 40))

