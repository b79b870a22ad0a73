"""Secrets out before storage: credentials, card and account numbers, government ids, PINs and
passwords become a typed placeholder ("my PIN is [PIN]"), so the fact that the user has one can
still be remembered while the value never reaches the database, the vectors, the logs or an LLM.

Two kinds of evidence decide, because a bare number is ambiguous (an order number, a year and a
phone number look like account numbers):
- a value whose format proves what it is: a card number that passes the Luhn check, an IBAN
  whose mod-97 check holds, a US SSN written 3-2-4, a Chinese resident id with a valid check
  digit, a provider key with a known prefix (sk-, AKIA, ghp_, xox.-, AIza), a PEM private key;
- a value named as a secret just before it: "PIN", "password", "密码", "account number",
  "routing number", "passport number", "CVV" ... followed by "is", ":" or "=" and the value.
Everything else is kept: order and tracking numbers, years, dates, amounts, phone numbers.
Measured on a labelled set of secrets and look-alikes by bench/eval_redaction.py.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# A keyword naming a secret, then up to a few linking words, then the value. The keyword list
# is the placeholder's type; longer names first so "account number" wins over "account".
_NAMED = (
    ("PASSWORD", r"pass(?:word|wd|phrase|code)s?|pwd|口令|密码"),
    ("PIN", r"pin(?:\s*(?:code|number))?|pin码|取款码"),
    ("CVV", r"cvv2?|cvc|security code|安全码"),
    ("ACCOUNT_NUMBER", r"(?:bank\s+|checking\s+|savings\s+)?account\s*(?:number|no\.?|#)|acct\s*(?:no\.?|#)?|"
                       r"routing\s*(?:number|no\.?)|sort\s*code|iban|银行卡号|卡号|账号|帐号"),
    ("CARD_NUMBER", r"(?:credit|debit)\s*card(?:\s*(?:number|no\.?))?|card\s*(?:number|no\.?)|信用卡号"),
    ("GOVERNMENT_ID", r"social\s+security(?:\s+number)?|ssn|passport\s*(?:number|no\.?)?|driver'?s\s+licen[cs]e"
                      r"(?:\s*(?:number|no\.?))?|national\s+id(?:\s*number)?|tax\s*id|身份证号?码?|护照号码?"),
    ("API_KEY", r"api[\s_-]*key|access[\s_-]*key|secret[\s_-]*key|(?:auth|access|bearer)?\s*token|client\s+secret|"
                r"密钥"),
)
_LINK = r"(?:\s*(?:is|was|are|=|:|：|是|为|change[ds]?\s+to|now)\s*|\s+)(?:now\s+|still\s+)?"
# A secret value: one run without spaces (digits, letters, symbols), or digits in short groups.
_VALUE = r"(?P<value>\d(?:[\d -]{2,30}\d)|[^\s,;，。；]{3,128})"
_NAMED_RULES = [(kind, re.compile(rf"(?<![A-Za-z])(?:my|our|the|his|her|their|new|old)?\s*(?:{words})\s*(?:\(\w+\))?{_LINK}"
                                  rf"{_VALUE}", re.I)) for kind, words in _NAMED]

_FORMATS = (
    ("PRIVATE_KEY", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S)),
    ("API_KEY", re.compile(r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|"
                           r"xox[abpr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,})")),
    ("GOVERNMENT_ID", re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")),
    ("GOVERNMENT_ID", re.compile(r"(?<!\d)\d{17}[\dXx](?!\d)")),
    ("ACCOUNT_NUMBER", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,4})?\b")),
    # Cards are written in groups of four (Amex 4-6-5) or as one run; an order number's 3-7-7 is not.
    ("CARD_NUMBER", re.compile(r"(?<![\d-])(?:\d{13,19}|\d{4}(?:[ -]\d{4}){2}[ -]\d{1,7}|\d{4}[ -]\d{6}[ -]\d{5})"
                               r"(?![\d-])")),
)
_FORMAT_CHECKS = {"GOVERNMENT_ID": lambda v: _ssn(v) or _china_id(v), "ACCOUNT_NUMBER": lambda v: _iban(v),
                  "CARD_NUMBER": lambda v: _luhn(v)}
# Words that make a value not a secret even after a keyword ("my PIN is on the card").
_NOT_A_VALUE = re.compile(r"^(?:a|an|the|my|on|in|at|not|no|same|different|written|saved|stored|somewhere|"
                          r"secret|safe|private|hidden|new|old|too|very|really|long|short|easy|hard|weak|strong|"
                          r"expired|expiring|changed|reset|forgotten|lost|required|needed|correct|wrong)$", re.I)


@dataclass(frozen=True)
class Redaction:
    text: str
    kinds: tuple[str, ...]  # the placeholder types put in, in order


def redact(text: str) -> Redaction:
    """The text with every secret replaced by "[TYPE]"; ordinary numbers stay."""
    spans: list[tuple[int, int, str]] = []
    for kind, pattern in _FORMATS:
        for match in pattern.finditer(text):
            check = _FORMAT_CHECKS.get(kind)
            if check is None or check(match.group(0)):
                spans.append((match.start(), match.end(), kind))
    for kind, pattern in _NAMED_RULES:
        for match in pattern.finditer(text):
            value = match.group("value").rstrip(".!?)\"'")
            if _NOT_A_VALUE.match(value) or not _secret_like(value):
                continue
            start = match.start("value")
            spans.append((start, start + len(value), kind))
    kept: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
        if kept and start < kept[-1][1]:
            continue  # overlaps a secret already taken (the earlier, longer one wins)
        kept.append((start, end, kind))
    out, last = [], 0
    for start, end, kind in kept:
        out += [text[last:start], f"[{kind}]"]
        last = end
    out.append(text[last:])
    return Redaction("".join(out), tuple(k for _, _, k in kept))


def _secret_like(value: str) -> bool:
    """A named secret's value has a digit, or mixes cases/symbols, or is a single token of 4+;
    a plain word ("my password is long") is no value."""
    if any(c.isdigit() for c in value):
        return True
    if re.fullmatch(r"[a-z]+", value):
        return False  # a lower-case word: far more often prose than a password
    return len(value) >= 4


def _digits(value: str) -> str:
    return re.sub(r"\D", "", value)


def _luhn(value: str) -> bool:
    digits = _digits(value)
    if not 13 <= len(digits) <= 19 or len(set(digits)) == 1:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        n = int(d) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0


def _ssn(value: str) -> bool:
    match = re.fullmatch(r"(\d{3})-(\d{2})-(\d{4})", value)
    return bool(match) and match.group(1) not in ("000", "666") and not match.group(1).startswith("9") \
        and match.group(2) != "00" and match.group(3) != "0000"


def _china_id(value: str) -> bool:
    if not re.fullmatch(r"\d{17}[\dXx]", value):
        return False
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    check = "10X98765432"[sum(int(d) * w for d, w in zip(value[:17], weights)) % 11]
    return value[17].upper() == check


def _iban(value: str) -> bool:
    compact = value.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1
