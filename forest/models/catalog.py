"""What parts are installed, which are in force, and whether the configured model servers answer
(`forest models`, the workbench's Server page)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from forest.config import Settings, without_password
from forest.errors import ForestError
from forest.models import registry

if TYPE_CHECKING:
    from forest.models.embedders import Embedder
    from forest.models.llm import StructuredLLM

CHECK_PROMPT = ('Summarize this text in a few words, as JSON {"summary": "..."}: '
                '"The model server answers, and Memory Forest can use it."')


def installed(settings: Settings) -> list[dict[str, Any]]:
    """Every registered part: its kind, name, the package that registers it, and whether it is in force."""
    parts = []
    for kind, group in registry.GROUPS.items():
        in_force = registry.choice(settings, kind)
        for entry in sorted(registry.installed().select(group=group), key=lambda e: e.name):
            parts.append({"kind": kind, "name": entry.name, "package": entry.dist.name if entry.dist else None,
                          "in_use": entry.name == in_force})
        if kind == "llm":
            parts.append({"kind": kind, "name": registry.OFFLINE, "package": registry.DISTRIBUTION,
                          "in_use": in_force == registry.OFFLINE})
    return parts


def llm_in_use(settings: Settings, llm: StructuredLLM | None) -> dict[str, Any]:
    if llm is None:
        return {"provider": registry.OFFLINE, "model": None, "url": None,
                "note": "each use takes its offline default (extractive summaries, the offline policy and rules)"}
    return {**llm.describe(), "url": without_password(llm.url)}


def embedder_in_use(settings: Settings, embedder: Embedder) -> dict[str, Any]:
    url = getattr(embedder, "url", None)
    return {"provider": settings.embedder, "model": embedder.name, "dim": embedder.dim,
            "url": without_password(url) if url else None}


def check(settings: Settings) -> list[dict[str, Any]]:
    """Make the configured embedder and LLM and send each one small request; a failure is reported
    in one line, not raised."""
    results = []
    started = time.perf_counter()
    try:
        embedder = registry.make_embedder(settings)
        embedder.embed_query("Does the embedding server answer?")
        results.append({"kind": "embedder", **embedder_in_use(settings, embedder), "ok": True,
                        "ms": round((time.perf_counter() - started) * 1000, 1)})
    except ForestError as exc:
        results.append({"kind": "embedder", "provider": settings.embedder, "ok": False, "error": str(exc)})
    started = time.perf_counter()
    try:
        llm = registry.make_llm(settings)
    except ForestError as exc:
        return [*results, {"kind": "llm", "provider": registry.choice(settings, "llm"), "ok": False, "error": str(exc)}]
    result = {"kind": "llm", **llm_in_use(settings, llm), "ok": True}
    if llm is not None:
        from forest.models.llm import LLMError
        from forest.models.replies import SummaryReply

        try:
            llm.ask(CHECK_PROMPT, SummaryReply, max_tokens=200)
        except LLMError as exc:  # it answers, but not usably: every use will fall back
            result.update(ok=False, error=f"it answers, but not with usable JSON: {exc}")
        except ForestError as exc:
            result.update(ok=False, error=str(exc))
        result["structured_output"] = llm.structured_output
        result["refused_forms"] = list(llm.refused_forms)
    result["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return [*results, result]
