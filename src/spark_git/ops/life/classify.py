"""Risk classification (HIGH / MEDIUM / LOW) → workflow variant and required agent set, and the
task.md template written at classification."""

from __future__ import annotations

import re

from spark_git import protocol
from spark_git.core.config import RiskConfig
from spark_git.core.errors import BadInput, Blocked
from spark_git.core.layout import Layout, task_name
from spark_git.core.model import Model
from spark_git.ops.life.agent_add import add_agent
from spark_git.ops.life.complexity import assess, objective_text
from spark_git.ops.life.sources import carried_objective, with_objective
from spark_git.ops.shared.taskfile import load_task, updating
from spark_git.state.backends import open_store
from spark_git.state.files import write_text_atomic
from spark_git.state.models import Complexity, TaskFile

LEVELS = ("LOW", "MEDIUM", "HIGH")
CLASSIFY_STATES = (protocol.State.INIT, protocol.State.CLASSIFIED)


class PathMatch(Model):
    path: str
    level: str
    pattern: str | None  # None: no pattern matched (counted as HIGH: 003, "when uncertain, HIGH")
    list: str | None = None  # the `[risk]` list the pattern is in: tests, high, medium or low


class Decision(Model):
    level: str
    variant: str
    agents: list[str]
    paths: list[PathMatch]
    keywords: list[str]
    content_agents: dict[str, list[str]] = {}  # agent → the words that added it
    override: str | None = None  # the --why of a --risk override
    reasons: list[str]


class ClassifyData(Model):
    task: str
    decision: Decision
    complexity: Complexity
    added_agents: list[str]
    task_md: str
    task_md_written: bool


# Tried in this order (core/riskdefaults.py): test files before the language globs that would make them HIGH.
ORDER = (("tests", "MEDIUM"), ("high", "HIGH"), ("medium", "MEDIUM"), ("low", "LOW"))


def match(path: str, pattern: str) -> bool:
    """gitignore-style (the dialect of `worktree.include`): no slash → a name at any depth; a slash →
    anchored at the root; `**` crosses directories; a directory pattern covers what is inside."""
    import pathspec  # only classify needs it (start-up of every other command)

    return pathspec.GitIgnoreSpec.from_lines([pattern]).match_file(path)


def classify_path(path: str, risk: RiskConfig) -> PathMatch:
    for name, level in ORDER:
        for p in getattr(risk, name):
            if match(path, p):
                return PathMatch(path=path, level=level, pattern=p, list=name)
    return PathMatch(path=path, level="HIGH", pattern=None)


def _docs_or_config(m: PathMatch) -> bool:
    return m.level == "LOW" or (m.level == "MEDIUM" and m.list == "medium")


def _words(text: str, paths: list[str], words: list[str]) -> list[str]:
    """The words (or phrases) that occur in the text or as a part of a changed path, whole words only."""
    hay = text.lower() + "\n" + " ".join(re.sub(r"[/._]", " ", p.lower()) for p in paths)
    return [w for w in words if re.search(rf"(?<![a-z0-9]){re.escape(w.lower())}(?![a-z0-9])", hay)]


def _level(matches: list[PathMatch], reasons: list[str]) -> str:
    if not matches:
        reasons.append("no paths to classify (the task branch has no changes yet; pass --files): HIGH (003: when uncertain, HIGH)")
        return "HIGH"
    for m in matches:
        reasons.append(f"{m.path}: {m.level} ({f'pattern {m.pattern} in {m.list}' if m.pattern else 'no pattern matched: uncertain, HIGH'})")
    return max((m.level for m in matches), key=LEVELS.index)


def decide(paths: list[str], text: str, risk: RiskConfig, override: str | None = None, why: str | None = None) -> Decision:
    """`text`: the task's title and objective."""
    matches = [classify_path(p, risk) for p in sorted(set(paths))]
    reasons: list[str] = []
    level = _level(matches, reasons)
    words = _words(text, [], risk.keywords)
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
    added: dict[str, list[str]] = {}
    for w in _words(text, [m.path for m in matches], list(risk.content_agents)):
        for a in risk.content_agents[w]:
            added.setdefault(a, []).append(w)
    for a, ws in added.items():
        if a not in agents:
            agents.append(a)
            reasons.append(f"{a} added: {', '.join(ws)} in the title, objective or paths")
    return Decision(level=level, variant=variant, agents=agents, paths=matches, keywords=words, content_agents=added,
                    override=why if override else None, reasons=reasons)


# The parts of task.md classify writes, between markers: a later classify rewrites only these.
GENERATED = ("summary", "scope", "stakeholders")


def _mark(part: str, body: str) -> str:
    return f"<!-- spark-git:{part} -->\n{body}\n<!-- /spark-git:{part} -->"


def _parts(tf: TaskFile, d: Decision, layout: Layout) -> dict[str, str]:
    t = tf.task_name
    agents = sorted(set(tf.agents) | set(d.agents))
    return {
        "summary": f"Risk {d.level}, variant {d.variant}; agents: {', '.join(agents)}.",
        "scope": "\n".join(f"- `{m.path}` ({m.level})" for m in d.paths) or "- (no paths yet)",
        "stakeholders": "\n".join(f"- {a}: `{layout.task_dir(t) / f'{t}-{a}-requirements.md'}`" for a in agents),
    }


def task_md_template(tf: TaskFile, d: Decision, layout: Layout) -> str:
    t, parts = tf.task_name, _parts(tf, d, layout)
    return f"""# {tf.title or t}

{_mark("summary", parts["summary"])}

## Task Objective

{tf.title or '(describe what the task must achieve)'}

## Scope

{_mark("scope", parts["scope"])}

## Stakeholder Agent Reports

{_mark("stakeholders", parts["stakeholders"])}

<!-- In SYNTHESIS, add one section per agent: "## Implementation Plan: <agent>" with its plan.
     `spark-git approve {t} --plan` records the human's approval of this file. -->
"""


def regenerated(text: str, tf: TaskFile, d: Decision, layout: Layout) -> str | None:
    """task.md with the generated parts rewritten and everything else kept; None if it has no markers."""
    parts, out, found = _parts(tf, d, layout), text, False
    for part in GENERATED:
        pat = re.compile(rf"<!-- spark-git:{part} -->\n.*?\n<!-- /spark-git:{part} -->", re.S)
        m = pat.search(out)
        if m:
            found = True
            out = out[:m.start()] + _mark(part, parts[part]) + out[m.end():]
    return out if found else None


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
    if protocol.is_full(layout, tf) and tf.state not in CLASSIFY_STATES:
        raise Blocked(f"task {task!r} is in {tf.state}: classification happens in INIT (or again in CLASSIFIED)", task=task)
    paths = _paths(layout, tf, files)
    md = layout.task_md(task)
    text = f"{tf.title or ''}\n{objective_text(md.read_text(errors='replace')) if md.is_file() else ''}"
    d = decide(paths, text, layout.config.risk, risk, why)
    cx = assess(text, paths)
    cx.protocol_in_effect = protocol.protocol_of(layout, tf)
    added = []
    guard = protocol.agent_add_guard(store)
    for a in d.agents:
        if a not in tf.agents:
            add_agent(layout, store, task, a, why=f"selected by classification ({d.level})", session=session, guard=guard)
            added.append(a)
    with updating(store, task, session) as cur:
        if protocol.is_full(layout, cur) and cur.state not in CLASSIFY_STATES:
            raise Blocked(f"task {task!r} moved to {cur.state} meanwhile", task=task)
        cur.risk, cur.variant, cur.complexity = d.level, d.variant, cx
        cur.required_agents = list(dict.fromkeys([*d.agents, *cur.required_agents]))
        cur.classification = d.model_dump(mode="json")  # type: ignore[attr-defined]  # an extra field, kept by the model
        carried = carried_objective(md)  # task.md written by `start --from`: keep its objective
        again = regenerated(md.read_text(errors="replace"), cur, d, layout) if md.is_file() and carried is None else None
        written = not md.is_file() or carried is not None or again is not None
        if written:
            write_text_atomic(md, again if again is not None else with_objective(task_md_template(cur, d, layout), carried))
    store.event(task, "classified", session, level=d.level, variant=d.variant, agents=d.agents, reasons=d.reasons,
                keywords=d.keywords, override=d.override, paths=[m.model_dump() for m in d.paths],
                complexity=cx.model_dump(mode="json"))
    return ClassifyData(task=task, decision=d, complexity=cx, added_agents=added, task_md=str(md), task_md_written=written)
