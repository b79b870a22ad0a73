"""Claude through the `anthropic` SDK: the reply's schema is a tool Claude is made to call."""
from __future__ import annotations

from typing import Any

import anthropic
from pydantic import BaseModel

from forest.config import without_password
from forest.models.llm import LLMError, StructuredLLM, call_api

REPLY_TOOL = "reply"


class ClaudeLLM(StructuredLLM):
    provider = "claude"

    def __init__(self, api_key: str, model: str, retries: int = 2, base_url: str | None = None,
                 timeout: float = 60.0) -> None:
        self.model = model
        self.retries = retries
        self.timeout = timeout
        # base_url None lets the SDK read ANTHROPIC_BASE_URL (how tests reach a local server).
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
        self.url = without_password(str(self._client.base_url).rstrip("/"))

    def _complete(self, prompt: str, reply_type: type[BaseModel], max_tokens: int, seconds_left: float) -> Any:
        tool = {"name": REPLY_TOOL, "description": "Give your reply in this structure.",
                "input_schema": reply_type.model_json_schema()}
        message = call_api(anthropic, self.url, lambda: self._client.messages.create(
            model=self.model, max_tokens=max_tokens, timeout=min(self.timeout, seconds_left), tools=[tool],
            tool_choice={"type": "tool", "name": REPLY_TOOL}, messages=[{"role": "user", "content": prompt}]))
        if message.stop_reason == "refusal":
            raise LLMError("Claude declined to answer")
        for block in message.content:
            if block.type == "tool_use":
                return block.input
        return "".join(block.text for block in message.content if block.type == "text")
