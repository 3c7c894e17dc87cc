"""What an agent owes the protocol in its final Output JSON (seed 004, open to more keys), per task
state and role, and how `agent run` files it: the requirements report REQUIREMENTS → SYNTHESIS wants,
the agent's plan section in task.md, the reviewer's decision, the test evidence of VALIDATION.

One table (OWED) says it all: the brief shows each entry's `ask`, the check reads its `key`, the filer
acts on its `kind`. A part that is missing or malformed leaves the report incomplete with the reason."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from spark_git.core.layout import Layout
from spark_git.protocol import State
from spark_git.state.files import write_text_atomic
from spark_git.state.locks import task_mutex_name
from spark_git.state.store import Store
from spark_git.state.taskmd import plan_section


@dataclass(frozen=True)
class Owe:
    key: str  # the Output JSON's top-level key (or `artifacts.x` / `gates.x`)
    kind: str  # requirements | plan | decision | tests: what filing it means
    ask: str  # what the brief tells the agent


REQUIREMENTS = Owe("requirements", "requirements",
                   "`requirements`: your requirements analysis as Markdown (at least rules.requirements_min_bytes bytes); "
                   "spark-git files it as your requirements report")
PLAN = Owe("plan", "plan", "`plan`: your implementation plan as Markdown (no headings); spark-git files it in task.md "
                           "as the section `## Implementation Plan: <you>`")
DECISION = Owe("decision", "decision", "`decision`: APPROVED or REJECTED for the task head you reviewed; with REJECTED, "
                                       "`artifacts.findings` lists what must change")
TESTS = Owe("artifacts.commands_to_run", "tests", "`artifacts.commands_to_run`: the test commands you ran on the task head, "
                                                  "and `gates.meets_definition_of_done`: whether they passed")
HEADING = re.compile(r"^#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$", re.M)
REVIEWING = (State.IMPLEMENTATION, State.VALIDATION, State.REVIEW, State.AWAITING_USER_APPROVAL)


def owed(state: str, role: str) -> list[Owe]:
    """What an agent of `role` owes in `state` besides status and summary."""
    out = [REQUIREMENTS] if state == State.REQUIREMENTS else [PLAN] if state == State.SYNTHESIS else []
    if role == "reviewer" and state in REVIEWING:
        out.append(DECISION)
    elif state == State.VALIDATION:
        out.append(TESTS)
    return out


def problems(data: dict[str, Any], owes: list[Owe], min_bytes: int) -> list[str]:
    """Why the Output JSON does not carry what it owes (empty: it does)."""
    out = []
    for o in owes:
        v = _get(data, o.key)
        if o.kind in ("requirements", "plan"):
            size = len(v.strip().encode()) if isinstance(v, str) else None
            floor = min_bytes if o.kind == "requirements" else 1
            if size is None or size < max(floor, 1):
                out.append(f"`{o.key}` is {'missing or not text' if size is None else f'{size} bytes, fewer than {max(floor, 1)}'}")
        elif o.kind == "decision":
            if v not in ("APPROVED", "REJECTED"):
                out.append(f"`decision` is {v!r}, not APPROVED or REJECTED")
            elif v == "REJECTED" and not _findings(data):
                out.append("`decision` is REJECTED with no `artifacts.findings` saying what must change")
        elif o.kind == "tests":
            if not (isinstance(v, list) and v and all(isinstance(c, str) and c.strip() for c in v)):
                out.append("`artifacts.commands_to_run` names no test command")
            if not isinstance(_get(data, "gates.meets_definition_of_done"), bool):
                out.append("`gates.meets_definition_of_done` is not true or false")
    return out


def _get(data: dict[str, Any], key: str) -> Any:
    v: Any = data
    for part in key.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    return v


def _findings(data: dict[str, Any]) -> list[str]:
    f = _get(data, "artifacts.findings")
    return [str(x) for x in f if str(x).strip()] if isinstance(f, list) else []


def feedback(data: dict[str, Any]) -> str | None:
    """The report's feedback: the summary, then the findings."""
    parts = [str(data.get("summary") or "").strip(), *(f"- {x}" for x in _findings(data))]
    text = "\n".join(p for p in parts if p)
    return text or None


def file_requirements(layout: Layout, task: str, agent: str, text: str) -> str:
    """The agent's requirements report, where the REQUIREMENTS guard looks by default."""
    path = layout.task_dir(task) / f"{task}-{agent}-requirements.md"
    write_text_atomic(path, text.strip() + "\n")
    return str(path)


def file_plan(layout: Layout, store: Store, task: str, agent: str, text: str) -> None:
    """The agent's `## Implementation Plan: <agent>` section of task.md, replaced or appended, under the
    task mutex (agents of one `--all` file theirs at once). Headings in the text are demoted: a heading
    would end the section."""
    body = HEADING.sub(r"**\1**", text.strip())
    with store.mutex(task_mutex_name(task)):
        md = layout.task_md(task)
        old = md.read_text(errors="replace") if md.is_file() else ""
        write_text_atomic(md, with_plan(old, agent, body))


def with_plan(md: str, agent: str, body: str) -> str:
    """task.md with `agent`'s plan section set to `body` (an existing one replaced up to the next heading)."""
    section = f"## Implementation Plan: {agent}\n\n{body}\n"
    out: list[str] = []
    placed = skipping = False
    for ln in md.splitlines(keepends=True):
        head = HEADING.match(ln)
        if head:
            skipping = False
            if not placed and plan_section({head.group(1): "x"}, agent) is not None:
                out.append(section + "\n")
                placed = skipping = True
                continue
        if not skipping:
            out.append(ln)
    text = "".join(out).rstrip("\n") + "\n"
    return text if placed else text + "\n" + section
