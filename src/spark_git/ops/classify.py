"""Risk classification (HIGH / MEDIUM / LOW) → workflow variant and required agent set, and the
task.md template written at classification."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from pydantic import BaseModel

from spark_git import protocol
from spark_git.core.config import RiskConfig
from spark_git.core.errors import BadInput, Blocked
from spark_git.core.layout import Layout, task_name
from spark_git.ops.agent_add import add_agent
from spark_git.ops.complexity import assess, objective_text
from spark_git.ops.sources import carried_objective, with_objective
from spark_git.ops.taskfile import load_task, updating
from spark_git.state.backends import open_store
from spark_git.state.files import write_text_atomic
from spark_git.state.models import Complexity, TaskFile

LEVELS = ("LOW", "MEDIUM", "HIGH")
CLASSIFY_STATES = (protocol.State.INIT, protocol.State.CLASSIFIED)


class PathMatch(BaseModel):
    path: str
    level: str
    pattern: str | None  # None: no pattern matched (counted as MEDIUM)


class Decision(BaseModel):
    level: str
    variant: str
    agents: list[str]
    paths: list[PathMatch]
    keywords: list[str]
    override: str | None = None  # the --why of a --risk override
    reasons: list[str]


class ClassifyData(BaseModel):
    task: str
    decision: Decision
    complexity: Complexity
    added_agents: list[str]
    task_md: str
    task_md_written: bool


def match(path: str, pattern: str) -> bool:
    """`*.py` matches the file name at any depth; patterns with a `/` match the whole path (`*`
    crosses `/`), and a leading `**/` may also match nothing."""
    if "/" not in pattern:
        return fnmatchcase(PurePosixPath(path).name, pattern)
    cands = [pattern] + ([pattern[3:]] if pattern.startswith("**/") else [])
    return any(fnmatchcase(path, c) for c in cands)


def classify_path(path: str, risk: RiskConfig) -> PathMatch:
    for level, pats in (("HIGH", risk.high), ("MEDIUM", risk.medium), ("LOW", risk.low)):
        for p in pats:
            if match(path, p):
                return PathMatch(path=path, level=level, pattern=p)
    return PathMatch(path=path, level="MEDIUM", pattern=None)


def _docs_or_config(m: PathMatch) -> bool:
    return m.level == "LOW" or (m.level == "MEDIUM" and m.pattern is not None and "test" not in m.pattern.lower())


def decide(paths: list[str], text: str, risk: RiskConfig, override: str | None = None, why: str | None = None) -> Decision:
    matches = [classify_path(p, risk) for p in sorted(set(paths))]
    reasons: list[str] = []
    if matches:
        level = max((m.level for m in matches), key=LEVELS.index)
        for m in matches:
            reasons.append(f"{m.path}: {m.level} ({'pattern ' + m.pattern if m.pattern else 'no pattern matched'})")
    else:
        level = "MEDIUM"
        reasons.append("no paths to classify (the task branch has no changes yet; pass --files): MEDIUM")
    words = [k for k in risk.keywords if re.search(rf"\b{re.escape(k.lower())}\b", text.lower())]
    if words and level != "HIGH":
        up = LEVELS[LEVELS.index(level) + 1]
        reasons.append(f"keyword(s) {', '.join(words)} escalate {level} → {up}")
        level = up
    if override:
        reasons.append(f"--risk {override} overrides {level}: {why}")
        level = override
    if level == "LOW" or (level == "MEDIUM" and matches and all(_docs_or_config(m) for m in matches)):
        variant = "short"
        reasons.append(f"variant short: {'LOW risk' if level == 'LOW' else 'MEDIUM, documentation/config only'} skips IMPLEMENTATION, VALIDATION, REVIEW")
    else:
        variant = "full"
    agents = list(risk.agents.get(level, []))
    return Decision(level=level, variant=variant, agents=agents, paths=matches, keywords=words, override=why if override else None, reasons=reasons)


def task_md_template(tf: TaskFile, d: Decision, layout: Layout) -> str:
    t = tf.task_name
    reports = "\n".join(f"- {a}: `{layout.task_dir(t) / f'{t}-{a}-requirements.md'}`" for a in sorted(set(tf.agents) | set(d.agents)))
    scope = "\n".join(f"- `{m.path}` ({m.level})" for m in d.paths) or "- (no paths yet)"
    return f"""# {tf.title or t}

Risk {d.level}, variant {d.variant}; agents: {', '.join(sorted(set(tf.agents) | set(d.agents)))}.

## Task Objective

{tf.title or '(describe what the task must achieve)'}

## Scope

{scope}

## Stakeholder Agent Reports

{reports}

<!-- In SYNTHESIS, add one section per agent: "## Implementation Plan: <agent>" with its plan.
     `spark-git approve {t} --plan` records the human's approval of this file. -->
"""


def _paths(layout: Layout, tf: TaskFile, files: list[str] | None) -> list[str]:
    """--files, or else the paths the task branch changes."""
    if files:
        return [f.strip() for f in files if f.strip()]
    git = layout.git()
    head = git.branch_head(tf.task_branch) or tf.base_commit
    return [p for p in git.out("diff", "--name-only", f"{tf.base_commit}..{head}").splitlines() if p]


def classify(
    layout: Layout, task: str, *, files: list[str] | None, risk: str | None, why: str | None, session: str | None,
) -> ClassifyData:
    task = task_name(task)
    if risk is not None:
        risk = risk.strip().upper()
        if risk not in LEVELS:
            raise BadInput(f"bad --risk {risk!r}: use HIGH, MEDIUM or LOW")
        if not (why or "").strip():
            raise BadInput("--risk needs --why: the override and its reason are logged")
    store = open_store(layout)
    tf = load_task(store, task)
    if protocol.is_full(layout) and tf.state not in CLASSIFY_STATES:
        raise Blocked(f"task {task!r} is in {tf.state}: classification happens in INIT (or again in CLASSIFIED)", task=task)
    paths = _paths(layout, tf, files)
    d = decide(paths, tf.title or "", layout.config.risk, risk, why)
    md = layout.task_md(task)
    cx = assess(f"{tf.title or ''}\n{objective_text(md.read_text(errors='replace')) if md.is_file() else ''}", paths)
    cx.protocol_in_effect = layout.config.protocol
    added = []
    guard = protocol.agent_add_guard(layout)
    for a in d.agents:
        if a not in tf.agents:
            add_agent(layout, task, a, why=f"selected by classification ({d.level})", session=session, guard=guard)
            added.append(a)
    with updating(store, task, session) as cur:
        if protocol.is_full(layout) and cur.state not in CLASSIFY_STATES:
            raise Blocked(f"task {task!r} moved to {cur.state} meanwhile", task=task)
        cur.risk, cur.variant, cur.complexity = d.level, d.variant, cx
        cur.required_agents = list(dict.fromkeys([*d.agents, *cur.required_agents]))
        cur.classification = d.model_dump(mode="json")  # type: ignore[attr-defined]  # an extra field, kept by the model
        carried = carried_objective(md)  # task.md written by `start --from`: keep its objective
        written = not md.is_file() or carried is not None
        if written:
            write_text_atomic(md, with_objective(task_md_template(cur, d, layout), carried))
    store.event(task, "classified", session, level=d.level, variant=d.variant, agents=d.agents, reasons=d.reasons,
                keywords=d.keywords, override=d.override, paths=[m.model_dump() for m in d.paths],
                complexity=cx.model_dump(mode="json"))
    return ClassifyData(task=task, decision=d, complexity=cx, added_agents=added, task_md=str(md), task_md_written=written)
