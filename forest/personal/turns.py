"""A conversation turn as process_memory is given it from a transcript: "[when said] Speaker: words"
("[8 May, 2023] Caroline: How did your kids like it?"). The bracket says when it was said; a
speaker is only read after it, so a memory of one's own ("Reminder to self: call mom") has none."""
from __future__ import annotations

import re

# Things said within this of each other are one conversation (a common session timeout).
CONVERSATION_GAP_SECONDS = 30 * 60
_TURN = re.compile(r"^\s*\[[^\]]{1,80}\]\s*(?:(?P<speaker>[^\W\d][\w.'’ -]{0,40}?):\s)?")


def speaker_of(memory: str) -> str | None:
    """Who said a turn ("Caroline"); None for a memory that is not a transcript's turn."""
    turn = _TURN.match(memory)
    return turn.group("speaker").strip() if turn and turn.group("speaker") else None


def words_of(memory: str) -> str:
    """What a turn says, without its "[when said]" (when it was said is not when what it tells happened)."""
    turn = _TURN.match(memory)
    return memory[turn.end():] if turn else memory


def first_person(memory: str, user_id: str) -> str:
    """Who "I" is in a memory: the speaker of a transcript's turn ("[8 May, 2023] Caroline: I
    moved"), else the user. Two people talking in one user's memory each have their own facts."""
    return speaker_of(memory) or user_id
