"""Errors every face (CLI, MCP, REST, workbench) turns into one clear message, none showing a key."""
from __future__ import annotations

import math
import re
from collections import Counter


class ForestError(Exception):
    """Base class: the message is meant for the person or agent that made the call."""


class InvalidInput(ForestError):
    """The caller's arguments or document cannot be used; nothing was stored."""


class NotFound(ForestError):
    """The id does not exist for this model_id (ids of other model_ids are reported the same way)."""


class ConfigError(ForestError):
    """The configuration in force cannot be used (bad value, missing model directory, ...)."""


class AlreadyInLibrary(ForestError):
    """The paper is in the model_id's library already, and the caller asked not to add it again:
    `archive_id` holds it; the message says which and how it was recognised."""

    def __init__(self, message: str, archive_id: int) -> None:
        super().__init__(message)
        self.archive_id = archive_id


class ServiceUnavailable(ForestError):
    """A server the call needs did not answer: nothing of the call was kept, and the same call
    may be sent again later."""


class DatabaseUnavailable(ServiceUnavailable):
    """The database server could not be reached, or the connection was lost mid-call: nothing of an
    unfinished transaction was kept; the next call connects again."""


class ModelUnavailable(ServiceUnavailable):
    """A model server (LLM or embedder) is down, timed out, or refused the configured key or model
    after the allowed attempts; the message names its URL, never a secret."""


def one_line(exc: BaseException, limit: int | None = None) -> str:
    """An exception's message on one line (libpq's and servers' messages span lines: a detail, a
    hint, a raw response), cut to `limit` characters if given."""
    text = mask_keys(" ".join(str(exc).split())) or type(exc).__name__
    return text if limit is None or len(text) <= limit else text[:limit - 3] + "..."


# Keys by their provider's prefix (OpenAI and Anthropic sk-, AWS AKIA, GitHub gh?_, Slack xox?-,
# Google AIza), and what follows "Bearer" or "Basic": what a model server may echo back of the key
# it was sent ("Incorrect API key provided: Bearer sk-...").
PROVIDER_KEY = re.compile(r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}|"
                          r"xox[abpr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,})")
_CREDENTIAL = re.compile(r"(?<![A-Za-z])(?:Bearer|Basic)\s{1,3}(?P<value>[^\s,;'\"]{8,512})", re.I)
# A key without a prefix (AWS's 40-character secret access key): a run of base64 that mixes upper
# case, lower case and digits with the entropy of random bytes (detect-secrets' limit for base64). A
# word, a CamelCase name, a UUID or a hex hash stays under it or lacks a case.
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{32,512}={0,2}")
RANDOM_KEY_ENTROPY = 4.5


def key_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` holds a key: a provider's, a bearer credential, or a random-looking run."""
    spans = [m.span() for m in PROVIDER_KEY.finditer(text)]
    spans += [m.span("value") for m in _CREDENTIAL.finditer(text) if _token_like(m.group("value"))]
    spans += [m.span() for m in _BASE64_RUN.finditer(text) if _random(m.group(0))]
    return spans


def looks_like_key(text: str) -> bool:
    return bool(key_spans(text))


def mask_keys(text: str) -> str:
    """`text` with every key in it replaced by "[API_KEY]" (for messages and logs)."""
    out, last = [], 0
    for start, end in sorted(key_spans(text)):
        if start >= last:
            out.append(text[last:start] + "[API_KEY]")
        last = max(last, end)
    return "".join(out) + text[last:]


def _token_like(value: str) -> bool:
    """A credential, not a word ("Basic authentication required", "bearer tokenization failed"):
    it holds a digit, mixes cases or ends in base64's padding."""
    return (any(c.isdigit() for c in value) or value.endswith("=")
            or (any(c.isupper() for c in value) and any(c.islower() for c in value)))


def _random(run: str) -> bool:
    if not (any(c.isupper() for c in run) and any(c.islower() for c in run) and any(c.isdigit() for c in run)):
        return False
    counts = Counter(run)
    return -sum(n / len(run) * math.log2(n / len(run)) for n in counts.values()) > RANDOM_KEY_ENTROPY
