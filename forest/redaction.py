"""Secrets out before storage: credentials, card and account numbers, government ids, PINs and
passwords become a typed placeholder ("my PIN is [PIN]"), so the fact that the user has one can
still be remembered while the value never reaches the database, the vectors, the logs or an LLM.

Three kinds of evidence decide, because a bare number is ambiguous (an order number, a year and a
phone number look like account numbers):
- a value whose format proves what it is: a card number that passes the Luhn check, an IBAN
  whose mod-97 check holds, a US SSN written 3-2-4, a Chinese resident id with a valid check
  digit, a PEM private key, a provider key with a known prefix (sk-, AKIA, ghp_, xox.-, AIza);
- the formats a maintained secret scanner knows (detect-secrets' plugins: AWS, Stripe, Slack,
  GitHub, GitLab, JWTs, passwords inside URLs, ...) and its high-entropy strings (random-looking
  base64 or hex runs, measured by its Shannon entropy limits);
- a value named as a secret just before it: "PIN", "password", "密码", "account number",
  "routing number", "passport number", "CVV" ... followed by "is", "'s", ":" or "=" and the value,
  also with a short phrase between ("the password at my home is ..."); after a password cue and an
  explicit link, a passphrase of several words in any case ("is correct horse battery staple").
Metadata values of every type are redacted, a key that names a secret ("pin") making its value one.
Everything else is kept: order and tracking numbers, years, dates, amounts, phone numbers, UUIDs.
Measured on a labelled set of secrets and look-alikes, with a held-out part, by bench/eval_redaction.py.

Every pattern here sees user text, so each starts at a literal and bounds its quantifiers: a
match attempt costs a constant and a text costs linear time (tests/test_regex_time.py). The
scanner's own patterns only see single tokens of bounded length.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from forest.errors import PROVIDER_KEY, looks_like_key

# Keywords naming a secret; the group's name is the placeholder's type. Longer names first, so
# "account number" wins over "account".
_NAMED = (
    ("PASSWORD", r"pass(?:word|wd|phrase|code)s?|pwd|口令|密码"),
    ("PIN", r"pin(?:\s{0,3}(?:code|number))?|pin码|取款码"),
    ("CVV", r"cvv2?|cvc|security code|安全码"),
    ("ACCOUNT_NUMBER", r"(?:(?:bank|checking|savings)\s{1,3})?account\s{0,3}(?:number|no\.?|#)|"
                       r"acct(?:\s{0,3}(?:no\.?|#))?|routing\s{0,3}(?:number|no\.?)|sort\s{0,3}code|iban|"
                       r"银行卡号|卡号|账号|帐号"),
    ("CARD_NUMBER", r"(?:credit|debit)\s{0,3}card(?:\s{0,3}(?:number|no\.?))?|card\s{0,3}(?:number|no\.?)|信用卡号"),
    ("GOVERNMENT_ID", r"social\s{1,3}security(?:\s{1,3}number)?|ssn|passport(?:\s{0,3}(?:number|no\.?))?|"
                      r"driver'?s\s{1,3}licen[cs]e(?:\s{0,3}(?:number|no\.?))?|national\s{1,3}id(?:\s{0,3}number)?|"
                      r"tax\s{0,3}id|身份证号?码?|护照号码?"),
    ("API_KEY", r"api[\s_-]{0,2}key|access[\s_-]{0,2}key|secret[\s_-]{0,2}(?:access[\s_-]{0,2})?key|"
                r"(?:(?:auth|access|bearer)\s{0,3})?token|client\s{1,3}secret|密钥"),
)
# The first characters of the keywords, checked first: the engine then skips other positions
# fast on text without a keyword.
_KEYWORD_START = "[pcsbarintdPCSBARINTD口密银卡账帐信身护取安]"
_KEYWORD = re.compile(f"(?<![A-Za-z])(?={_KEYWORD_START})(?:"
                      + "|".join(f"(?P<{kind}>{words})" for kind, words in _NAMED) + ")", re.I)
# After the keyword: "(...)" or a short phrase ("at my home", "for the wifi") only before an
# explicit link ("is", "'s", ":", "="); without a phrase a space also links ("PIN 4321").
_EXPLICIT_LINK = (r"(?:\s{0,3}(?:(?:is|was|are)(?![A-Za-z])(?:\s{0,2}[:：])?|=|:|：|'s|’s|是|为|change[ds]?\s{1,3}to(?![A-Za-z]))"
                  r"|\s{1,3}now(?![A-Za-z]))\s{0,3}(?:(?:now|still)\s{1,3})?")
_PHRASE = r"(?:\s{0,3}\(\w{1,20}\)|\s{1,3}(?:for|of|at|to|on|in|with)(?:\s{1,3}[^\s,;:：=.!?]{1,24}){1,4}?)"
_VALUE = r"(?P<value>\d(?:[\d -]{2,30}\d)|[^\s,;，。；]{3,128})"
_TAIL = re.compile(rf"(?:(?P<explicit>{_PHRASE}?{_EXPLICIT_LINK})|\s{{1,3}}){_VALUE}", re.I)

_FORMATS = (
    ("API_KEY", PROVIDER_KEY),
    ("GOVERNMENT_ID", re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")),
    ("GOVERNMENT_ID", re.compile(r"(?<!\d)\d{17}[\dXx](?!\d)")),
    ("ACCOUNT_NUMBER", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,4})?\b", re.I)),
    # Cards are written in groups of four (Amex 4-6-5) or as one run; an order number's 3-7-7 is not.
    ("CARD_NUMBER", re.compile(r"(?<![\d-])(?:\d{13,19}|\d{4}(?:[ -]\d{4}){2}[ -]\d{1,7}|\d{4}[ -]\d{6}[ -]\d{5})"
                               r"(?![\d-])")),
)
_FORMAT_CHECKS = {"GOVERNMENT_ID": lambda v: _ssn(v) or _china_id(v), "ACCOUNT_NUMBER": lambda v: _iban(v),
                  "CARD_NUMBER": lambda v: _luhn(v)}
# A PEM block is found by its markers with str.find (a lazy ".*?" to the END marker rescans the
# rest of the text from every BEGIN: quadratic on a text of repeated BEGIN lines).
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z ]{0,20}PRIVATE KEY-----")
_PEM_END = "PRIVATE KEY-----"

# Words that make a value not a secret even after a keyword ("my PIN is on the card").
_NOT_A_VALUE = re.compile(r"(?:a|an|the|my|on|in|at|not|no|same|different|written|saved|stored|somewhere|"
                          r"secret|safe|private|hidden|new|old|too|very|really|long|short|easy|hard|weak|strong|"
                          r"expired|expiring|changed|reset|forgotten|lost|required|needed|correct|wrong|"
                          r"secure|insecure|simple|complex|complicated|random|unique|temporary|default|"
                          r"compromised|leaked|stolen|encrypted|invalid|incorrect|case|also|still|now|again|"
                          r"something|nothing|everything|what|which|that|this|it|one)", re.I)
# A passphrase: two to six words after an explicit link that end their clause ("my password is
# correct horse battery staple"). Prose after the link has function words, or words that describe
# the secret past the first ("is too long to remember", "is wrong again", "was changed last week").
_PASSPHRASE = re.compile(r"[A-Za-z]{2,24}(?:[ \t]{1,3}[A-Za-z]{2,24}){1,7}")
_PASSPHRASE_WORDS = (2, 6)
_CONJUNCTION = frozenset({"and", "but", "so", "because", "since", "then", "which", "or", "ok", "okay"})
_PROSE_WORD = re.compile(r"(?:a|an|the|to|of|in|on|at|for|with|by|as|than|from|into|about|over|under|like|"
                         r"my|your|his|her|our|their|its|me|you|he|she|we|they|is|are|was|were|be|been|being|"
                         r"will|would|can|could|should|must|do|does|did|has|have|had|get|got|set|due|enough|"
                         r"quite|pretty|kind|sort|just|only|always|never|here|there|today|tomorrow|yesterday|"
                         r"day|days|week|weeks|month|months|year|years|ago|last|next|soon|later|anymore)", re.I)
# A lower-case word after an explicit link is a value unless it describes the secret (these
# endings make adjectives and participles: "is encrypted", "is changing", "is unbreakable").
_DESCRIPTIVE_ENDING = ("ed", "ing", "able", "ible", "ous", "ful", "less", "ive", "ly")
# A lower-case value ends its clause: "my password is sunshine." but not "is case sensitive".
_DIGIT = re.compile(r"\d")
_CLAUSE_END = re.compile(r"\s{0,3}(?:$|[.,;:!?)\]\"'。，；：！？]|(?:and|but|so|for|on|at|in|which|because|"
                         r"since|then|ok|okay)(?![A-Za-z]))", re.I)

# The scanner sees whitespace-free tokens of at least this many characters (every format it knows
# is longer), in windows of at most MAX_TOKEN characters overlapping by TOKEN_OVERLAP.
_TOKEN = re.compile(r"\S{16,}")
MAX_TOKEN = 256
TOKEN_OVERLAP = 64
# Plugins left out: its keyword detector (the named rules above do that, for English and Chinese
# prose), public IP addresses (not secrets), and private-key headers (the PEM rule takes the block).
_SKIPPED_PLUGINS = frozenset({"KeywordDetector", "IPPublicDetector", "PrivateKeyDetector"})
_PLUGIN_KINDS = {"BasicAuthDetector": "PASSWORD"}
# A scanner's match is extended over the rest of its token (a Stripe key is longer than its
# pattern's 24 characters; a JWT's signature follows its lazy pattern): these characters continue it.
_CONTINUES = re.compile(r"[A-Za-z0-9_-]{0,1024}")
_CONTINUES_DOTTED = re.compile(r"[A-Za-z0-9_.+/=-]{0,1024}")
# High-entropy runs (detect-secrets' charsets and limits); a hex run needs this length, so UUID
# groups and short commit hashes stay (a base64 run needs no floor: its limit of 4.5 bits takes
# 23 different characters).
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=_-]{20,}")
_HEX_RUN = re.compile(r"[0-9a-fA-F]{20,}")


@dataclass(frozen=True)
class Redaction:
    text: str
    kinds: tuple[str, ...]  # the placeholder types put in, in order


def redact(text: str) -> Redaction:
    """The text with every secret replaced by "[TYPE]"; ordinary numbers stay."""
    spans = [*_format_spans(text), *_scanner_spans(text), *_named_spans(text)]
    kept: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
        if kept and start < kept[-1][1]:
            if end > kept[-1][1]:  # overlaps a secret already taken: the union is one secret
                kept[-1] = (kept[-1][0], end, kept[-1][2])
            continue
        kept.append((start, end, kind))
    out, last = [], 0
    for start, end, kind in kept:
        out += [text[last:start], f"[{kind}]"]
        last = end
    out.append(text[last:])
    return Redaction("".join(out), tuple(k for _, _, k in kept))


def redact_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Metadata values redacted whatever their type: a key naming a secret ("pin", "api_key",
    "card_number") makes its whole value one; a text is redacted as text; a number that is a
    secret by its format (a card number) becomes its placeholder. Booleans say nothing secret."""
    return {key: _redacted_value(value, _named_kind(key)) for key, value in metadata.items()}


def _named_kind(key: str) -> str | None:
    named = _KEYWORD.fullmatch(key.replace("_", " "))
    return named.lastgroup if named else None


def _redacted_value(value: Any, named: str | None) -> Any:
    if isinstance(value, bool):
        return value
    if named:
        return f"[{named}]"
    if isinstance(value, str):
        return redact(value).text
    found = redact(str(value)).kinds
    return f"[{found[0]}]" if found else value


def secret_format(value: str) -> str | None:
    """The type of a secret a value holds by its format alone (a provider key, a token, a password
    in a URL, a card, ...), else None. For identifiers: a named rule or entropy would refuse a
    hashed user id."""
    if looks_like_key(value):
        return "API_KEY"
    spans = [*_format_spans(value), *_scanner_spans(value, entropy=False)]
    return spans[0][2] if spans else None


def _format_spans(text: str) -> Iterator[tuple[int, int, str]]:
    for kind, pattern in _FORMATS:
        for match in pattern.finditer(text):
            check = _FORMAT_CHECKS.get(kind)
            if check is None or check(match.group(0)):
                yield match.start(), match.end(), kind
    position = 0
    while begin := _PEM_BEGIN.search(text, position):
        end = text.find(_PEM_END, begin.end())
        end = len(text) if end < 0 else end + len(_PEM_END)
        yield begin.start(), end, "PRIVATE_KEY"
        position = end


def _named_spans(text: str) -> Iterator[tuple[int, int, str]]:
    for keyword in _KEYWORD.finditer(text):
        tail = _TAIL.match(text, keyword.end())
        if tail is None:
            continue
        kind, explicit, start = keyword.lastgroup or "SECRET", bool(tail.group("explicit")), tail.start("value")
        if kind == "PASSWORD" and explicit and (end := _passphrase_end(text, start)):
            yield start, end, kind
            continue
        value = tail.group("value").rstrip(".!?)\"':")
        if _is_value(value, explicit, text, start + len(value)):
            yield start, start + len(value), kind


def _passphrase_end(text: str, start: int) -> int | None:
    """Where a passphrase of several words starting at `start` ends, if one does (any case)."""
    run = _PASSPHRASE.match(text, start)
    if run is None:
        return None
    words = run.group(0).split()
    for n, word in enumerate(words):
        if word.lower() in _CONJUNCTION:
            words = words[:n]
            break
    low, high = _PASSPHRASE_WORDS
    if not low <= len(words) <= high or _PROSE_WORD.fullmatch(words[0]) or words[0].lower().endswith(
            _DESCRIPTIVE_ENDING) or any(_NOT_A_VALUE.fullmatch(w) or _PROSE_WORD.fullmatch(w)
                                        or w.lower().endswith(_DESCRIPTIVE_ENDING) for w in words[1:]):
        return None
    end = start   # the end of the last word kept, as written (its spacing kept)
    for word in words:
        end = text.index(word, end) + len(word)
    return end if _CLAUSE_END.match(text, end) else None


def _is_value(value: str, explicit: bool, text: str, end: int) -> bool:
    """A named secret's value has a digit, or mixes cases or symbols; after an explicit link also
    a lower-case word that ends its clause and does not describe the secret. Prose is no value
    ("my password is long", "the token ring network")."""
    if _NOT_A_VALUE.fullmatch(value):
        return False
    if _DIGIT.search(value):
        return True
    if value.isalpha() and value.islower() and value.isascii():
        return explicit and len(value) >= 4 and not value.endswith(_DESCRIPTIVE_ENDING) \
            and _CLAUSE_END.match(text, end) is not None
    return len(value) >= 4


@cache
def _plugins() -> tuple[Any, ...]:
    """detect-secrets' format plugins, made once (importing them loads its settings)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    classes = get_mapping_from_secret_type_to_class().values()
    return tuple(cls() for cls in sorted(classes, key=lambda c: c.__name__)
                 if issubclass(cls, RegexBasedDetector) and cls.__name__ not in _SKIPPED_PLUGINS)


@cache
def _entropy_plugins() -> tuple[Any, Any]:
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

    return Base64HighEntropyString(), HexHighEntropyString()


def _windows(text: str) -> Iterator[tuple[int, str]]:
    """(offset, piece) of every long whitespace-free token, cut into bounded windows."""
    for token in _TOKEN.finditer(text):
        start, end = token.span()
        while True:
            yield start, text[start:min(end, start + MAX_TOKEN)]
            if start + MAX_TOKEN >= end:
                break
            start += MAX_TOKEN - TOKEN_OVERLAP


def _scanner_spans(text: str, entropy: bool = True) -> Iterator[tuple[int, int, str]]:
    for offset, piece in _windows(text):
        for plugin in _plugins():
            kind = _PLUGIN_KINDS.get(type(plugin).__name__, "API_KEY")
            continues = _CONTINUES_DOTTED if type(plugin).__name__ == "JwtTokenDetector" else _CONTINUES
            for found in set(plugin.analyze_string(piece)):
                value = found.strip(" \t\"'=:")
                at = piece.find(value) if value else -1
                while at >= 0:
                    end = continues.match(text, offset + at + len(value)).end()
                    yield offset + at, end, kind
                    at = piece.find(value, at + 1)
        if entropy:
            base64, hexadecimal = _entropy_plugins()
            for plugin, runs in ((base64, _BASE64_RUN), (hexadecimal, _HEX_RUN)):
                for run in runs.finditer(piece):
                    if plugin.calculate_shannon_entropy(run.group(0)) > plugin.entropy_limit:
                        yield offset + run.start(), offset + run.end(), "SECRET"


def _digits(value: str) -> str:
    return "".join(c for c in value if c.isdigit())


def _luhn(value: str) -> bool:
    digits = _digits(value)
    if not 13 <= len(digits) <= 19 or len(set(digits)) == 1:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


_SSN = re.compile(r"(\d{3})-(\d{2})-(\d{4})")
_CHINA_ID = re.compile(r"\d{17}[\dXx]")


def _ssn(value: str) -> bool:
    match = _SSN.fullmatch(value)
    return bool(match) and match.group(1) not in ("000", "666") and not match.group(1).startswith("9") \
        and match.group(2) != "00" and match.group(3) != "0000"


def _china_id(value: str) -> bool:
    if not _CHINA_ID.fullmatch(value):
        return False
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    check = "10X98765432"[sum(int(d) * w for d, w in zip(value[:17], weights)) % 11]
    return value[17].upper() == check


def _iban(value: str) -> bool:
    compact = value.replace(" ", "").upper()
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1
