"""The DeepScholar spec's dynamic briefing: the workspace as a prompt section with [Current Focus],
[Known Constraints] and [Key Findings], under a hard line budget.

When the items do not fit, the oldest fold away first (findings before constraints: constraints
guard every answer, findings accumulate), and the briefing says how many notes are hidden and
that search_episodic_memory finds them; every workspace item is also an episodic event, so
that is true."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forest.research.memory_store import WorkspaceItem
from forest.text import truncate

HEADERS = ("[Current Focus]", "[Known Constraints]", "[Key Findings]")
NOTHING = "- (none)"
MIN_LINES = 7   # three headers, the focus, two "(none)" lines, the fold notice
FOLD_NOTICE = ("- ({n} older note{s} folded away: hidden research notes exist; "
               "use the search_episodic_memory tool to consult them)")


@dataclass
class Briefing:
    text: str
    shown: list[WorkspaceItem]
    folded: list[WorkspaceItem]
    line_budget: int

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "lines": len(self.text.splitlines()), "line_budget": self.line_budget,
                "shown": [i.to_dict() for i in self.shown], "folded": [i.to_dict() for i in self.folded]}


def build_briefing(items: list[WorkspaceItem], line_budget: int, line_chars: int = 200) -> Briefing:
    """Items in creation order; the latest focus is the current one (earlier ones are history)."""
    if line_budget < MIN_LINES:
        raise ValueError(f"a briefing needs at least {MIN_LINES} lines, got {line_budget}")
    focus = [i for i in items if i.kind == "focus"][-1:]
    constraints = [i for i in items if i.kind == "constraint"]
    findings = [i for i in items if i.kind == "finding"]

    def section(header: str, kept: list[WorkspaceItem], total: int) -> list[str]:
        # "(none)" only when the kind has no items at all, not when they are all folded away.
        return [header, *(_line(i, line_chars) for i in kept)] + ([NOTHING] if total == 0 else [])

    def render(kept_constraints: list[WorkspaceItem], kept_findings: list[WorkspaceItem], hidden: int) -> list[str]:
        lines = (section(HEADERS[0], focus, len(focus)) + section(HEADERS[1], kept_constraints, len(constraints))
                 + section(HEADERS[2], kept_findings, len(findings)))
        if hidden:
            lines.append(FOLD_NOTICE.format(n=hidden, s="" if hidden == 1 else "s"))
        return lines

    kept_constraints, kept_findings = list(constraints), list(findings)
    lines = render(kept_constraints, kept_findings, 0)
    folded: list[WorkspaceItem] = []
    while len(lines) > line_budget and (kept_findings or kept_constraints):
        folded.append((kept_findings or kept_constraints).pop(0))  # the oldest of the foldable kind
        lines = render(kept_constraints, kept_findings, len(folded))
    return Briefing("\n".join(lines), focus + kept_constraints + kept_findings, folded, line_budget)


def _line(item: WorkspaceItem, line_chars: int) -> str:
    source = f" ({item.source})" if item.source else ""
    return "- " + truncate(item.text + source, line_chars)
