"""task.md, the task's plan document, read as sections: what the protocol's guards, the brief and an
agent's session start take from it (pure text, no I/O)."""

from __future__ import annotations

import re


def task_md_sections(text: str) -> dict[str, str]:
    """Heading line (without #) → its body, up to the next heading (HTML comments do not count)."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    out: dict[str, str] = {}
    cur: str | None = None
    body: list[str] = []
    for line in [*text.splitlines(), "# <end>"]:
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            if cur is not None:
                out[cur] = "\n".join(body).strip()
            cur, body = m.group(1), []
        else:
            body.append(line)
    return out


def plan_section(sections: dict[str, str], agent: str) -> str | None:
    for head, body in sections.items():
        if "implementation plan" in head.lower() and re.search(rf"(?<![a-z0-9._-]){re.escape(agent)}(?![a-z0-9._-])", head):
            return body
    return None


def goal_of(sections: dict[str, str], agent: str) -> str:
    """The agent's goal from task.md: the task objective, then the agent's own part of the plan
    (the brief and the agent's session start both say it)."""
    objective = next((b for h, b in sections.items() if re.match(r"^(task\s+)?objective$", h, re.IGNORECASE)), "")
    goal = "\n".join(ln[1:].lstrip() if ln.startswith(">") else ln for ln in objective.splitlines()).strip()
    plan = plan_section(sections, agent)
    return goal + (f"\n\nImplementation plan of {agent}:\n{plan.strip()}" if plan else "")
