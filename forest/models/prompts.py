"""The LLM prompts: the forest spec's summary and ANSWER/EXPLORE prompts, verbatim in meaning; the
DeepScholar spec's reconciliation and compaction prompts; the NeuroMemory v2 spec's privacy
classification and triple extraction; filled and serialized here."""
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


def node_summary_prompt(child_texts: list[str], max_chars: int, heading_path: str | None,
                        lead: str | None = None) -> str:
    """The forest spec's parent-summary prompt over the text under each child, told where in the document
    the node sits (its heading path); a node without a heading is also given a short title, and
    a document node is given its abstract to start from."""
    prompt = json.loads(json.dumps(PROMPT_CREATE_PARENT_SUMMARY))
    prompt["input_data"]["child_summaries"] = list(child_texts)
    if heading_path:
        prompt["input_data"]["heading_path"] = heading_path
    if lead:
        prompt["input_data"]["abstract"] = lead
    prompt["constraints"]["max_length_chars"] = max_chars
    if not heading_path:
        prompt["output_format"]["json_structure"] = {
            "title": "<不超过8个词的标题，概括这些片段的共同主题 / a title of at most 8 words>",
            **prompt["output_format"]["json_structure"]}
    return json.dumps(prompt, ensure_ascii=False, indent=2) + "\n" + JSON_ONLY


PROMPT_AGENTIC_REASONING_LOOP = {
    "role": "你是一个名为'记忆森林'的智能研究代理。你的任务是基于一个结构化记忆系统来回答用户的问题。",
    "goal": "根据下方提供的'上下文节点'，判断是否足以直接、完整地回答'用户查询'。如果信息充足，请直接回答；"
            "如果信息是高层摘要且细节不足，请发出'EXPLORE'指令，以获取更深层次的信息。",
    "input_data": {"user_query": "<USER_QUERY_TEXT>", "context_nodes": []},
    "available_actions": [
        {"action_name": "ANSWER", "description": "当且仅当上下文信息已足够全面回答用户问题时使用此操作。",
         "output_payload": {"final_answer": "基于上下文生成的完整回答。",
                            "cited_node_ids": "<回答实际依据的LEAF_CHUNK节点id列表 / ids of the passages the answer rests on>"}},
        {"action_name": "EXPLORE",
         "description": "当上下文中的某个节点是'SUMMARY_NODE'类型，且其摘要表明需要更多细节才能回答问题时使用。一次只能探索一个节点。",
         "output_payload": {"node_id_to_explore": "<选择一个需要深入的node_id>",
                            "reasoning_for_exploration": "<简要说明为什么需要探索这个节点>"}},
    ],
    "output_format": {
        "schema": "JSON", "description": "你的回答必须是以下两种JSON结构之一。",
        "json_structure_options": [
            {"action": "ANSWER", "payload": {"final_answer": "<string>", "cited_node_ids": ["<integer>"]}},
            {"action": "EXPLORE", "payload": {"node_id_to_explore": "<integer>", "reasoning_for_exploration": "<string>"}},
        ],
    },
}


# A question asked over several chosen papers: the answer speaks of each of them.
PAPERS_ASKED = ("问题针对 papers_asked 中的每一篇论文：回答须逐篇作答并引用该论文的段落；某篇论文中没有相关内容时，明确说出是哪一篇。"
                " / Answer for each paper in papers_asked, citing its passages; name any paper that has nothing on the question.")


def agent_loop_prompt(question: str, context_nodes: list[dict], preamble: str = "",
                      papers: list[dict] | None = None) -> str:
    """The forest spec's ANSWER/EXPLORE prompt; `papers` ({archive_id, title} of each paper the question is
    asked over, when several were chosen) are added with the rule that the answer covers each."""
    prompt = json.loads(json.dumps(PROMPT_AGENTIC_REASONING_LOOP))
    prompt["input_data"]["user_query"] = question
    prompt["input_data"]["context_nodes"] = context_nodes
    if papers:
        prompt["input_data"]["papers_asked"] = papers
        prompt["constraints"] = {"papers_asked": PAPERS_ASKED}
    return _with_preamble(preamble, prompt)


# The DeepScholar spec: conflicting passages are not pasted side by side into the answer prompt; a
# reviewer compares the experimental conditions first and returns a bounded, merged conclusion.
PROMPT_LLM_MEDIATED_RECONCILIATION = {
    "role": "You are an impartial third-party reviewer of research papers.",
    "task": "Two passages from different papers appear to disagree. Identify the experimental conditions of each "
            "side (datasets, data regime such as few-shot or full data, model and size, metric, setting), decide "
            "whether the disagreement is real or explained by different conditions, and state one merged "
            "conclusion together with the boundary conditions under which each side's claim holds.",
    "input_data": {"passage_a": {}, "passage_b": {}, "detected_conflict": ""},
    "constraints": {"evidence": "Use only the two passages; say 'not stated' rather than guess a condition.",
                    "language": "The language of the passages."},
    "output_format": {"schema": "JSON", "json_structure": {
        "conditions_a": ["<condition stated by passage A>"],
        "conditions_b": ["<condition stated by passage B>"],
        "real_conflict": "<true if the claims contradict under the same conditions, else false>",
        "merged_conclusion": "<one conclusion consistent with both passages>",
        "boundary_conditions": ["<when A's claim holds / when B's claim holds>"],
        "confidence": "<high | medium | low>"}},
}

# The DeepScholar spec: before old messages are replaced by a summary, what is worth keeping is written
# to persistent memory (the pre-compaction flush).
PROMPT_PRE_COMPACTION_FLUSH = {
    "role": "You maintain the research notes of a long working session.",
    "task": "The messages below are about to be removed from the conversation. First extract the high-value "
            "findings worth keeping for the rest of the research (results with their numbers and conditions, "
            "decisions, open contradictions), each self-contained and with its source when one is cited. Then "
            "write a short summary that can replace the messages.",
    "input_data": {"messages": [], "existing_findings": []},
    "constraints": {"findings": "At most 8, none repeating an existing finding.", "summary_max_chars": 800,
                    "language": "The language of the messages."},
    "output_format": {"schema": "JSON", "json_structure": {
        "findings": [{"text": "<finding>", "source": "<citation or empty>"}],
        "summary": "<summary of the removed messages>"}},
}


def reconciliation_prompt(preamble: str, passage_a: dict, passage_b: dict, detected: str) -> str:
    prompt = json.loads(json.dumps(PROMPT_LLM_MEDIATED_RECONCILIATION))
    prompt["input_data"].update(passage_a=passage_a, passage_b=passage_b, detected_conflict=detected)
    return _with_preamble(preamble, prompt)


def compaction_prompt(preamble: str, messages: list[dict], existing_findings: list[str]) -> str:
    prompt = json.loads(json.dumps(PROMPT_PRE_COMPACTION_FLUSH))
    prompt["input_data"].update(messages=messages, existing_findings=existing_findings)
    return _with_preamble(preamble, prompt)


def _with_preamble(preamble: str, prompt: dict) -> str:
    """The research memory's directives and briefing come first in every prompt (DeepScholar spec)."""
    body = json.dumps(prompt, ensure_ascii=False, indent=2) + "\n" + JSON_ONLY
    return f"{preamble.strip()}\n\n{body}" if preamble.strip() else body


# The NeuroMemory v2 spec's privacy filter: its question, with the spec's four examples.
PROMPT_CLASSIFY_PRIVACY = """判断以下内容是否为用户私有数据 / Decide whether the input is the user's private data.
- PRIVATE: 个人偏好、经历、私有实体关系（家人、朋友、同事）、个人计划、关于用户本人或其熟人的个人事实
  (personal preferences, experiences, private relations, plans, personal facts about the user or people they know)
- PUBLIC: 通用知识、百科事实、公共信息；以及没有陈述任何关于用户的新信息的纯提问或请求
  (general knowledge, encyclopedic facts, public information; pure questions or requests that state nothing about the user)

示例 / Examples:
- "我喜欢苹果" -> PRIVATE（个人偏好）
- "苹果公司是乔布斯创立的" -> PUBLIC（公共事实）
- "我明天要去北京出差" -> PRIVATE（个人计划）
- "北京是中国的首都" -> PUBLIC（公共事实）

Input: {text}

Answer with {{"label": "PRIVATE" or "PUBLIC", "reason": "<one short line>"}}.
"""


def privacy_prompt(text: str) -> str:
    return PROMPT_CLASSIFY_PRIVACY.format(text=json.dumps(text, ensure_ascii=False)) + JSON_ONLY


# The NeuroMemory v2 spec's per-user knowledge graph: the triples from one memory.
PROMPT_EXTRACT_TRIPLES = {
    "role": "你是一个个人知识图谱的构建者。",
    "task": "从下面这条用户记忆中抽取关于人物、宠物、地点、组织和个人偏好的关系三元组 (source, relationship, target)。",
    "input_data": {"speaker": "<SPEAKER>", "text": "<MEMORY_TEXT>"},
    "constraints": {
        "first_person": "第一人称（我、I、me、my）一律写成 speaker 的值",
        "direction": "亲属和社会关系从拥有者出发：'灿灿是小朱的女儿' -> {source: 小朱, relationship: 女儿, target: 灿灿}",
        "relationship": "简短的关系词，与输入文本语言保持一致",
        "skip": "不抽取通用知识和百科事实；无法确定指代的代词不作为实体；没有关系时返回空列表",
    },
    "output_format": {"schema": "JSON", "json_structure": {
        "triples": [{"source": "<实体>", "relationship": "<关系>", "target": "<实体>"}]}},
}


def triples_prompt(text: str, speaker: str) -> str:
    prompt = {**PROMPT_EXTRACT_TRIPLES, "input_data": {"speaker": speaker, "text": text}}
    return json.dumps(prompt, ensure_ascii=False, indent=2) + "\n" + JSON_ONLY


def update_prompt(earlier: list[str], later: str) -> str:
    """Which earlier statements does a later one replace (forest.personal.updates)? Numbered from 1."""
    numbered = "\n".join(f"[{n}] {text}" for n, text in enumerate(earlier, 1))
    return ("Statements one person made, the earlier ones numbered, then a later one.\n"
            f"Earlier:\n{numbered}\nLater: {later}\n"
            "Which earlier statements does the later one replace, because it says something else about the "
            "same attribute of the same person (a move, a new job, a break-up, a changed plan, preference or "
            "fact, a correction), so that they are no longer true? A later statement that only adds "
            "information replaces nothing. "
            'Answer as JSON: {"replaces": [numbers of the earlier statements it replaces], "reason": "..."}')

