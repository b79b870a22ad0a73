"""The seed's JSON prompts (seed 000 §5.1), kept verbatim in meaning; filled and serialized here."""
from __future__ import annotations

import json

PROMPT_CREATE_LEAF_SUMMARY = {
    "role": "你是一个严谨的信息归档员。",
    "task": "为下面提供的原始文本块生成一个简洁、客观、信息密集的摘要。这个摘要将作为未来检索的唯一依据，因此必须准确反映文本的核心内容。",
    "input_data": {"text": "<RAW_TEXT_CHUNK>"},
    "constraints": {"max_length_chars": 200, "style": "中立、事实性", "language": "与输入文本语言保持一致"},
    "output_format": {"schema": "JSON", "json_structure": {"summary": "<你生成的摘要文本>"}},
}

PROMPT_CREATE_PARENT_SUMMARY = {
    "role": "你是一个高级知识整合专家，擅长从多个相关的信息片段中提炼出更高层次的共同主题。",
    "task": "下面提供了多个子节点的摘要。请将它们融会贯通，生成一个能够概括所有子节点核心内容的、更具抽象性的父级摘要。不要简单地拼接，而是要进行真正的综合与提炼。",
    "input_data": {"child_summaries": ["<SUMMARY_OF_CHILD_A>", "<SUMMARY_OF_CHILD_B>"]},
    "constraints": {"max_length_chars": 200, "focus": "寻找共性、上层概念或流程关系", "language": "与输入文本语言保持一致"},
    "output_format": {"schema": "JSON", "json_structure": {"summary": "<你生成的父级摘要文本>"}},
}

JSON_ONLY = "Reply with the JSON object only, no prose and no code fence."


def leaf_summary_prompt(text: str, max_chars: int) -> str:
    prompt = json.loads(json.dumps(PROMPT_CREATE_LEAF_SUMMARY))
    prompt["input_data"]["text"] = text
    prompt["constraints"]["max_length_chars"] = max_chars
    return json.dumps(prompt, ensure_ascii=False, indent=2) + "\n" + JSON_ONLY


def parent_summary_prompt(child_summaries: list[str], max_chars: int) -> str:
    prompt = json.loads(json.dumps(PROMPT_CREATE_PARENT_SUMMARY))
    prompt["input_data"]["child_summaries"] = list(child_summaries)
    prompt["constraints"]["max_length_chars"] = max_chars
    return json.dumps(prompt, ensure_ascii=False, indent=2) + "\n" + JSON_ONLY
