"""Errors every face (CLI, MCP, REST, workbench) turns into one clear message."""


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
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if limit is None or len(text) <= limit else text[:limit - 3] + "..."
