"""The task protocol: states, legal transitions per workflow variant, and the conditions (guards) of
every transition, checked by the tool against git and the state files, never taken on trust.

`merge`, `complete`, `approve` and `agent add` ask this module for the protocol's conditions so
that every condition lives in one place; each returns ALL unmet ones (empty: go ahead), each with
the command that would make it hold.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel

from spark_git.state import audit
from spark_git.core.errors import Blocked
from spark_git.core.layout import Layout
from spark_git.state.models import AgentStatus, Checkpoint, TaskFile, Transition, now

INIT, CLASSIFIED, REQUIREMENTS, SYNTHESIS = "INIT", "CLASSIFIED", "REQUIREMENTS", "SYNTHESIS"
IMPLEMENTATION, VALIDATION, REVIEW = "IMPLEMENTATION", "VALIDATION", "REVIEW"
SCOPE, AWAITING, COMPLETE, CLEANUP = "SCOPE_NEGOTIATION", "AWAITING_USER_APPROVAL", "COMPLETE", "CLEANUP"

# Legal next states per workflow variant; the first one is `advance`'s default.
# "full": every state. "short" (LOW risk, or MEDIUM docs/config-only): no IMPLEMENTATION, VALIDATION,
# REVIEW; the agents' work is merged in SYNTHESIS once the plan is approved. Neither skips the two
# human checkpoints (plan approval before leaving SYNTHESIS, AWAITING_USER_APPROVAL before COMPLETE).
VARIANTS: dict[str, dict[str, list[str]]] = {
    "full": {
        INIT: [CLASSIFIED],
        CLASSIFIED: [REQUIREMENTS],
        REQUIREMENTS: [SYNTHESIS],
        SYNTHESIS: [IMPLEMENTATION],
        IMPLEMENTATION: [VALIDATION],
        VALIDATION: [REVIEW, REQUIREMENTS],
        REVIEW: [AWAITING, IMPLEMENTATION, SCOPE, REQUIREMENTS],
        SCOPE: [SYNTHESIS, AWAITING],
        AWAITING: [COMPLETE],
        COMPLETE: [CLEANUP],
        CLEANUP: [],
    },
    "short": {
        INIT: [CLASSIFIED],
        CLASSIFIED: [REQUIREMENTS],
        REQUIREMENTS: [SYNTHESIS],
        SYNTHESIS: [AWAITING],
        AWAITING: [COMPLETE],
        COMPLETE: [CLEANUP],
        CLEANUP: [],
    },
}
# Agents may join only while requirements can still be gathered (INIT/CLASSIFIED: before they start).
AGENT_ADD_STATES = (INIT, CLASSIFIED, REQUIREMENTS, SYNTHESIS, IMPLEMENTATION)
TASK_MD_SECTIONS = ("Task Objective", "Scope", "Stakeholder Agent Reports")


@dataclass(frozen=True)
class Unmet:
    condition: str  # what does not hold, in a sentence
    fix: str | None = None  # the command that would make it hold

    def __str__(self) -> str:
        return f"{self.condition}" + (f"  → {self.fix}" if self.fix else "")


def variant_of(tf: TaskFile) -> str:
    return tf.variant if tf.variant in VARIANTS else "full"


def next_states(tf: TaskFile) -> list[str]:
    return list(VARIANTS[variant_of(tf)].get(tf.state, []))


def is_full(layout: Layout) -> bool:
    return layout.config.protocol == "full"


def _legal_anywhere(frm: str | None, to: str) -> bool:
    if to == "ABANDONED" and frm not in ("CLEANUP", "ABANDONED"):  # `abandon` ends a task from any live state
        return True
    return any(to in table.get(frm or "", []) for table in VARIANTS.values())


# -- consistency of task.json (hand edits) -------------------------------------------------------


def inconsistency(tf: TaskFile) -> str | None:
    """Why `tf.state` cannot be explained by its transition_log (None: it can)."""
    log = tf.transition_log
    if not log:
        return f"state is {tf.state} but transition_log is empty"
    if log[0].from_state is not None or log[0].to != INIT:
        return f"transition_log does not begin with the start of the task (→ INIT), but with {log[0].from_state} → {log[0].to}"
    for prev, t in zip(log, log[1:]):
        if t.from_state != prev.to:
            return f"transition_log jumps: {prev.to} is followed by a transition from {t.from_state} (at {t.at})"
        light = getattr(t, "protocol", None) == "light"
        if not light and not _legal_anywhere(t.from_state, t.to):
            return f"transition_log holds an illegal transition {t.from_state} → {t.to} (at {t.at})"
    if tf.state != log[-1].to:
        return f"state is {tf.state} but the last recorded transition leads to {log[-1].to}"
    return None


def consistency_problems(layout: Layout, tf: TaskFile) -> list[str]:
    """For `doctor`: what about task.json's state its transition_log cannot explain."""
    problem = inconsistency(tf)
    return [problem] if problem else []


def check_consistent(layout: Layout, tf: TaskFile) -> None:
    problem = inconsistency(tf)
    if problem:
        raise Blocked(
            f"task {tf.task_name!r} was edited by hand: {problem}; every command on it is refused until a human looks",
            hint="task.json's state must be explained by its transition_log; run `spark-git doctor` (it reads the task anyway)",
            next=[f"spark-git doctor {tf.task_name}", f"spark-git audit {tf.task_name}"],
            details={"path": str(layout.task_json(tf.task_name)), "problem": problem},
            task=tf.task_name,
        )


# -- reading what the guards look at -------------------------------------------------------------


def read_status(layout: Layout, task: str, agent: str) -> AgentStatus | None:
    from spark_git.state.files import read_optional

    try:
        return read_optional(layout.agent_status(task, agent), AgentStatus)
    except Blocked:  # corrupt status.json: counts as "no usable report"
        return None


def task_md_sections(text: str) -> dict[str, str]:
    """Heading line (without #) → its body, up to the next heading (HTML comments do not count)."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    out: dict[str, str] = {}
    cur: str | None = None
    body: list[str] = []
    for line in text.splitlines() + ["# <end>"]:
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


def task_md_digest(layout: Layout, task: str) -> str | None:
    p = layout.task_md(task)
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None


def requirements_path(layout: Layout, task: str, agent: str, st: AgentStatus | None) -> Path:
    if st is not None and st.report_path:
        return Path(st.report_path)
    return layout.task_dir(task) / f"{task}-{agent}-requirements.md"


def build_evidence(layout: Layout, task: str, head: str, tree: str | None, since: str | None = None) -> dict[str, Any] | None:
    """The newest passing `gates.build` result recorded for this commit or its tree (after `since`)."""
    trail = audit.load(layout, task)
    for e in reversed(trail.build_verifications if trail else []):
        if e.get("gate") != "build" or e.get("result") != "passed":
            continue
        if since and str(e.get("at", "")) < since:
            continue
        if e.get("commit") == head or (tree and e.get("tree") == tree):
            return e
    return None


def entered_at(tf: TaskFile, state: str) -> str | None:
    for t in reversed(tf.transition_log):
        if t.to == state:
            return t.at
    return None


# -- guards ------------------------------------------------------------------------------------


@dataclass
class Ctx:
    layout: Layout
    tf: TaskFile
    session: str | None
    why: str | None = None
    dry: bool = False  # status: compute blockers without running a gate
    head: str | None = None
    statuses: dict[str, AgentStatus | None] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)  # recorded with the transition

    @property
    def task(self) -> str:
        return self.tf.task_name

    def git(self):
        return self.layout.git()

    def advance_cmd(self, to: str) -> str:
        return f"spark-git advance {self.task} --to {to}"


def _role(ctx: Ctx, agent: str) -> str:
    return ctx.tf.agents[agent].role if agent in ctx.tf.agents else "other"


def _agents(ctx: Ctx, role: str | None = None) -> list[str]:
    return [a for a in ctx.tf.agents if role is None or _role(ctx, a) == role]


def _report_cmd(ctx: Ctx, agent: str, extra: str = "") -> str:
    return f"spark-git report {ctx.task} --agent {agent} --status COMPLETE{extra}"


def _status_problem(ctx: Ctx, agent: str, st: AgentStatus | None) -> Unmet | None:
    if st is None or st.status == "NEW":
        return Unmet(f"agent {agent} has not reported (no status)", _report_cmd(ctx, agent))
    if st.status in ("ERROR", "BLOCKED"):
        return Unmet(f"agent {agent} reports {st.status}: {st.feedback or '(no message)'}", f"resolve it, then: {_report_cmd(ctx, agent)}")
    if st.status != "COMPLETE":
        return Unmet(f"agent {agent} reports {st.status}, not COMPLETE", _report_cmd(ctx, agent))
    return None


def _owner(ctx: Ctx) -> list[Unmet]:
    if ctx.session != ctx.tf.session_id:
        return [Unmet(f"the task lock is held by session {ctx.tf.session_id}, not by {ctx.session or '(no session)'}", f"export SPARK_SESSION_ID={ctx.tf.session_id}")]
    return []


def _worktrees(ctx: Ctx) -> list[Unmet]:
    out = []
    if not Path(ctx.tf.worktree).is_dir():
        out.append(Unmet(f"the task worktree {ctx.tf.worktree} does not exist", f"spark-git start {ctx.task}"))
    for a, e in ctx.tf.agents.items():
        if not Path(e.worktree).is_dir():
            out.append(Unmet(f"agent {a}'s worktree {e.worktree} does not exist", f"spark-git doctor {ctx.task}"))
    for a in ctx.tf.required_agents:
        if a not in ctx.tf.agents:
            out.append(Unmet(f"selected agent {a} has no worktree", f"spark-git agent add {ctx.task} {a} --why 'selected by classification'"))
    return out


def _task_md(ctx: Ctx) -> list[Unmet]:
    p = ctx.layout.task_md(ctx.task)
    if not p.is_file():
        return [Unmet(f"{p} does not exist", f"spark-git classify {ctx.task}")]
    heads = task_md_sections(p.read_text(errors="replace"))
    missing = [s for s in TASK_MD_SECTIONS if not any(s.lower() in h.lower() for h in heads)]
    if missing:
        return [Unmet(f"{p} lacks the section(s) {', '.join(missing)}", f"add `## {missing[0]}` to {p}")]
    return []


def g_classified(ctx: Ctx) -> list[Unmet]:
    out = _owner(ctx) + _worktrees(ctx)
    if not ctx.tf.risk or not ctx.tf.variant:
        out.append(Unmet("the risk level and agent set are not decided", f"spark-git classify {ctx.task}"))
    return out + _task_md(ctx)


def g_requirements(ctx: Ctx) -> list[Unmet]:
    return _owner(ctx) + _worktrees(ctx) + _task_md(ctx)


def g_synthesis(ctx: Ctx) -> list[Unmet]:
    out = _owner(ctx)
    for a in _agents(ctx):
        st = ctx.statuses.get(a)
        u = _status_problem(ctx, a, st)
        if u:
            out.append(u)
        p = requirements_path(ctx.layout, ctx.task, a, st)
        if not p.is_file() or not p.read_text(errors="replace").strip():
            out.append(Unmet(f"agent {a}'s requirements report {p} {'is empty' if p.is_file() else 'does not exist'}",
                             f"write it, then: {_report_cmd(ctx, a, f' --report {p}')}"))
    return out


def _plan(ctx: Ctx) -> list[Unmet]:
    out = []
    p = ctx.layout.task_md(ctx.task)
    sections = task_md_sections(p.read_text(errors="replace")) if p.is_file() else {}
    for a in _agents(ctx):
        body = plan_section(sections, a)
        if not body:
            out.append(Unmet(f"task.md has no {'non-empty ' if body is not None else ''}implementation plan of {a}", f"add a `## Implementation Plan: {a}` section to {p}"))
    pa = ctx.tf.plan_approval
    if pa is None or not pa.approved:
        out.append(Unmet("the human has not approved the plan", f"spark-git approve {ctx.task} --plan"))
    elif getattr(pa, "task_md_sha256", None) != task_md_digest(ctx.layout, ctx.task):
        out.append(Unmet("task.md changed after the plan was approved (the approval is void)", f"spark-git approve {ctx.task} --plan"))
    return out


def _head(ctx: Ctx) -> str | None:
    if ctx.head is None:
        ctx.head = ctx.git().branch_head(ctx.tf.task_branch)
    return ctx.head


def _updaters_done(ctx: Ctx, phase: str) -> list[Unmet]:
    out = []
    git, head = ctx.git(), _head(ctx)
    for a in _agents(ctx, "updater"):
        st = ctx.statuses.get(a)
        u = _status_problem(ctx, a, st)
        if u:
            out.append(u)
        elif getattr(st, "task_state", None) != phase:
            out.append(Unmet(f"updater {a} has not reported COMPLETE during {phase} (its last report is from {getattr(st, 'task_state', None) or 'an earlier state'})", _report_cmd(ctx, a, " --work-remaining none")))
        elif (st.work_remaining or "none").strip().lower() != "none":
            out.append(Unmet(f"updater {a} reports work remaining: {st.work_remaining}", _report_cmd(ctx, a, " --work-remaining none")))
        ahead = git.branch_head(ctx.tf.agents[a].branch)
        if ahead and head and not git.is_ancestor(ahead, head):
            out.append(Unmet(f"updater {a}'s branch ({ahead[:12]}) is not contained in the task branch", f"spark-git merge {ctx.task} --agent {a}"))
    return out


def _reviews(ctx: Ctx, what: str) -> list[Unmet]:
    out = []
    head = _head(ctx) or "?"
    for a in _agents(ctx, "reviewer"):
        st = ctx.statuses.get(a)
        cmd = f"spark-git report {ctx.task} --agent {a} --status COMPLETE --decision APPROVED"
        u = _status_problem(ctx, a, st)
        if u:
            out.append(Unmet(u.condition, cmd))
        elif st.decision != "APPROVED":
            out.append(Unmet(f"reviewer {a} decided {st.decision or 'nothing'}" + (f": {st.feedback}" if st.feedback else ""), cmd))
        elif st.last_review_sha != head:
            out.append(Unmet(f"reviewer {a}'s approval is stale: it reviewed {(st.last_review_sha or '?')[:12]}, the task head is {head[:12]} ({what})", cmd))
    return out


def _build_on_head(ctx: Ctx, since: str | None = None) -> list[Unmet]:
    head = _head(ctx)
    if head is None:
        return [Unmet(f"task branch {ctx.tf.task_branch} does not exist", f"spark-git doctor {ctx.task}")]
    tree = ctx.git().tree_of(head)
    ev = build_evidence(ctx.layout, ctx.task, head, tree, since)
    if ev is None:
        return [Unmet(f"no passing gates.build result for the task head {head[:12]}" + (" since entering VALIDATION" if since else ""),
                      f"spark-git merge {ctx.task} --agent <agent>" if not since else ctx.advance_cmd(REVIEW))]
    ctx.evidence["build"] = {k: ev.get(k) for k in ("at", "commit", "tree", "log_path", "ran")}
    return []


def g_implementation(ctx: Ctx) -> list[Unmet]:
    return _owner(ctx) + _plan(ctx)


def g_validation(ctx: Ctx) -> list[Unmet]:
    return _owner(ctx) + _reviews(ctx, "a later merge voids a review") + _updaters_done(ctx, IMPLEMENTATION) + _build_on_head(ctx)


def _clean_task_worktree(ctx: Ctx) -> list[Unmet]:
    from spark_git.core.git import Git

    wt = Path(ctx.tf.worktree)
    if not wt.is_dir():
        return [Unmet(f"the task worktree {wt} does not exist", f"spark-git doctor {ctx.task}")]
    g = Git(wt)
    dirty = g.status()
    if dirty:
        return [Unmet(f"the task worktree is not clean: {', '.join(str(d) for d in dirty[:10])}", f"commit or remove the changes in {wt}")]
    if g.head() != _head(ctx):
        return [Unmet(f"the task worktree is not at the task head {(_head(ctx) or '?')[:12]}", f"cd {wt} && git checkout {ctx.tf.task_branch}")]
    return []


def g_review(ctx: Ctx) -> list[Unmet]:
    out = _owner(ctx) + _clean_task_worktree(ctx)
    since = entered_at(ctx.tf, VALIDATION)
    missing = _build_on_head(ctx, since)
    if not missing:
        return out
    if out or ctx.dry:  # the gate runs at `advance` once everything else holds
        return out + [Unmet(f"gates.build has not passed on the task head {(_head(ctx) or '?')[:12]} since entering VALIDATION (advance runs it once the other conditions hold)",
                            ctx.advance_cmd(REVIEW))] if not ctx.dry else out
    # No fresh result on this head: run the build gate here, on the task worktree.
    from spark_git.gates import command as gates

    cfg = ctx.layout.config.gates
    from spark_git.ops.envs import for_worktree

    ev = gates.run("build", cfg.build, Path(ctx.tf.worktree), ctx.layout.logs_dir(ctx.task), cfg.timeout_s, env=for_worktree(ctx.layout, ctx.task))
    if not ev.passed:
        return [Unmet(f"gates.build failed on the task head {(_head(ctx) or '?')[:12]} ({ev.error or f'exit code {ev.exit_code}'}); log: {ev.log_path}",
                      f"fix it in IMPLEMENTATION: the reviewers reject, then {ctx.advance_cmd(IMPLEMENTATION)}")]
    entry = {"gate": "build", "command": ev.command, "result": "passed", "ran": ev.ran, "exit_code": ev.exit_code, "duration_s": ev.duration_s,
             "tree": ev.tree, "commit": ev.commit, "log_path": ev.log_path, "tests": ev.tests, "session_id": ctx.session, "by": "advance"}
    ctx.evidence["build"] = entry
    ctx.evidence["_record_build"] = entry
    return []


def g_awaiting(ctx: Ctx) -> list[Unmet]:
    return _owner(ctx) + _reviews(ctx, "approval must be unanimous for the current head")


def _rejecters(ctx: Ctx) -> list[tuple[str, AgentStatus]]:
    return [(a, st) for a in _agents(ctx, "reviewer") if (st := ctx.statuses.get(a)) is not None and st.decision == "REJECTED"]


def g_back_to_impl(ctx: Ctx) -> list[Unmet]:
    out = _owner(ctx)
    rej = _rejecters(ctx)
    if not rej:
        out.append(Unmet("no reviewer has REJECTED the changes", f"spark-git report {ctx.task} --agent <reviewer> --status COMPLETE --decision REJECTED --feedback '...'"))
    ctx.evidence["feedback"] = {a: st.feedback for a, st in rej}
    return out


def g_scope(ctx: Ctx) -> list[Unmet]:
    out = g_back_to_impl(ctx)
    for a, st in _rejecters(ctx):
        if not (getattr(st, "blocking", None) or getattr(st, "deferrable", None)):
            out.append(Unmet(f"reviewer {a} has not listed BLOCKING / DEFERRABLE items", f"spark-git report {ctx.task} --agent {a} --status COMPLETE --decision REJECTED --blocking '...' --deferrable '...' --scope RESOLVE_NOW|DEFER"))
        if getattr(st, "scope_decision", None) not in ("RESOLVE_NOW", "DEFER"):
            out.append(Unmet(f"reviewer {a} has not recorded a scope decision", f"spark-git report {ctx.task} --agent {a} --status COMPLETE --decision REJECTED --scope RESOLVE_NOW|DEFER"))
    return out


def _scope_decisions(ctx: Ctx) -> dict[str, str | None]:
    return {a: getattr(st, "scope_decision", None) for a, st in _rejecters(ctx)}


def g_scope_to_synthesis(ctx: Ctx) -> list[Unmet]:
    out = _owner(ctx)
    if "RESOLVE_NOW" not in _scope_decisions(ctx).values():
        out.append(Unmet("no rejecting reviewer decided RESOLVE_NOW", f"spark-git report {ctx.task} --agent <reviewer> --status COMPLETE --decision REJECTED --scope RESOLVE_NOW"))
    return out


def g_scope_to_awaiting(ctx: Ctx) -> list[Unmet]:
    out = _owner(ctx)
    for a, d in _scope_decisions(ctx).items():
        if d != "DEFER":
            out.append(Unmet(f"reviewer {a} decided {d or 'nothing'}, not DEFER", f"spark-git report {ctx.task} --agent {a} --status COMPLETE --decision REJECTED --scope DEFER"))
    for a, st in _rejecters(ctx):
        if getattr(st, "blocking", None):
            out.append(Unmet(f"reviewer {a} lists BLOCKING items: {'; '.join(st.blocking)}", ctx.advance_cmd(SYNTHESIS)))
    return out


def g_short_awaiting(ctx: Ctx) -> list[Unmet]:
    out = _owner(ctx) + _plan(ctx) + _updaters_done(ctx, SYNTHESIS) + _clean_task_worktree(ctx)
    head = _head(ctx)
    if head and head != ctx.tf.base_commit:
        out += _build_on_head(ctx)
    return out


def g_reopen(ctx: Ctx) -> list[Unmet]:
    out = _owner(ctx)
    if not (ctx.why or "").strip():
        out.append(Unmet("going back to REQUIREMENTS needs a justification", f"{ctx.advance_cmd(REQUIREMENTS)} --why '...'"))
    return out


def g_complete(ctx: Ctx) -> list[Unmet]:
    if ctx.dry:  # status: what `complete` still waits for (it also runs the final gate)
        cp, head = ctx.tf.checkpoint, _head(ctx)
        if cp is None or not cp.approved or cp.commit_sha != head:
            return [Unmet(f"the human has not approved the changes at {(head or '?')[:12]}", f"spark-git approve {ctx.task} --changes")]
        return []
    return [Unmet("AWAITING_USER_APPROVAL → COMPLETE is performed by `spark-git complete` (after the human's change approval)", f"spark-git approve {ctx.task} --changes && spark-git complete {ctx.task}")]


def g_cleanup(ctx: Ctx) -> list[Unmet]:
    out = _owner(ctx)
    git, head = ctx.git(), _head(ctx)
    base = git.branch_head(ctx.tf.base_branch)
    if head is None or base is None or not git.is_ancestor(head, base):
        out.append(Unmet(f"the task branch {ctx.tf.task_branch} is not contained in {ctx.tf.base_branch}", f"spark-git complete {ctx.task}"))
    return out


def guard_for(tf: TaskFile, to: str) -> Callable[[Ctx], list[Unmet]]:
    frm, short = tf.state, variant_of(tf) == "short"
    if to == REQUIREMENTS and frm in (VALIDATION, REVIEW):
        return g_reopen
    if to == AWAITING:
        return g_scope_to_awaiting if frm == SCOPE else (g_short_awaiting if short else g_awaiting)
    if to == SYNTHESIS and frm == SCOPE:
        return g_scope_to_synthesis
    if to == IMPLEMENTATION and frm == REVIEW:
        return g_back_to_impl
    return {
        CLASSIFIED: g_classified, REQUIREMENTS: g_requirements, SYNTHESIS: g_synthesis, IMPLEMENTATION: g_implementation,
        VALIDATION: g_validation, REVIEW: g_review, SCOPE: g_scope, COMPLETE: g_complete, CLEANUP: g_cleanup,
    }[to]


def make_ctx(layout: Layout, tf: TaskFile, session: str | None, why: str | None = None, dry: bool = False) -> Ctx:
    return Ctx(layout, tf, session, why, dry, statuses={a: read_status(layout, tf.task_name, a) for a in tf.agents})


def blockers(layout: Layout, tf: TaskFile, session: str | None) -> dict[str, list[Unmet]]:
    """For `status`: each legal next state → what blocks it (dry: no gate runs)."""
    out = {}
    for to in next_states(tf):
        ctx = make_ctx(layout, tf, session if session is not None else tf.session_id, dry=True)
        out[to] = [u for u in guard_for(tf, to)(ctx) if not u.condition.startswith("the task lock is held")]
    return out


# -- advance ------------------------------------------------------------------------------------


class AdvanceData(BaseModel):
    task: str
    from_state: str
    to: str
    variant: str
    protocol: str
    evidence: dict[str, Any] = {}
    waived: list[str] = []  # unmet conditions recorded but not enforced (protocol = "light")
    next_states: list[str] = []


def refuse(what: str, unmet: list[Unmet], task: str, hint: str | None = None) -> Blocked:
    return Blocked(
        f"{what}: {len(unmet)} condition(s) not met",
        hint=hint or "nothing was changed",
        details={"unmet": [str(u) for u in unmet]},
        next=list(dict.fromkeys(u.fix for u in unmet if u.fix)),
        task=task,
    )


def advance(layout: Layout, task: str, to: str | None, *, session: str | None, why: str | None = None) -> AdvanceData:
    from spark_git.core.layout import task_name
    from spark_git.ops.tasks import updating

    task = task_name(task)
    if to is not None:
        to = to.strip().upper()
        known = {s for table in VARIANTS.values() for s in table}
        if to not in known:
            from spark_git.core.errors import BadInput

            raise BadInput(f"unknown state {to!r}: use one of {', '.join(VARIANTS['full'])}", task=task)
    with updating(layout, task, session, owner=False) as tf:
        legal = next_states(tf)
        frm = tf.state
        if to is None:
            if not legal:
                raise Blocked(f"task {task!r} is in {frm}: there is no state after it", task=task)
            to = legal[0]
        if to not in legal:
            raise Blocked(
                f"illegal transition {frm} → {to} for task {task!r} (variant {variant_of(tf)})",
                hint=f"legal next state(s) from {frm}: {', '.join(legal) or 'none'}",
                details={"legal_next_states": legal},
                next=[command_to(task, s) for s in legal],
                task=task,
            )
        ctx = make_ctx(layout, tf, session, why)
        unmet = guard_for(tf, to)(ctx)
        if to == COMPLETE:
            raise refuse(f"cannot advance {task} to COMPLETE", unmet, task)
        full = is_full(layout)
        owner_unmet = [u for u in unmet if u.condition.startswith("the task lock is held")]
        if unmet and (full or owner_unmet):
            raise refuse(f"cannot advance {task} from {frm} to {to}", unmet, task, hint=f"nothing was changed; the conditions of {frm} → {to} are listed")
        waived = [str(u) for u in unmet]
        head = _head(ctx)
        _effects(layout, tf, frm, to, ctx, head)
        evidence = {k: v for k, v in ctx.evidence.items() if not k.startswith("_")}
        evidence["task_head"] = head
        if waived:
            evidence["waived"] = waived
        if why:
            evidence["why"] = why
        record_transition(layout, tf, to, session, f"spark-git advance{' --why ' + repr(why) if why else ''}", evidence)
        if "_record_build" in ctx.evidence:
            audit.record(layout, task, "build_verifications", ctx.evidence["_record_build"], session=session)
        return AdvanceData(task=task, from_state=frm, to=to, variant=variant_of(tf), protocol=layout.config.protocol,
                           evidence=evidence, waived=waived, next_states=next_states(tf))


def _effects(layout: Layout, tf: TaskFile, frm: str, to: str, ctx: Ctx, head: str | None) -> None:
    if to == AWAITING:
        tf.checkpoint = Checkpoint(type="changes", commit_sha=head, presented_at=now(), approved=False)
        if frm == SCOPE:
            _write_follow_ups(layout, tf, ctx)
    if to in (SYNTHESIS, REQUIREMENTS) and frm in (SCOPE, VALIDATION, REVIEW):
        tf.plan_approval = None  # a new synthesis needs a new plan approval


def _write_follow_ups(layout: Layout, tf: TaskFile, ctx: Ctx) -> None:
    from spark_git.state.files import write_text_atomic

    lines = [f"# Follow-ups deferred from {tf.task_name}", ""]
    for a, st in _rejecters(ctx):
        for item in getattr(st, "deferrable", None) or []:
            lines.append(f"- [{a}] {item}")
    path = layout.task_dir(tf.task_name) / "follow-ups.md"
    write_text_atomic(path, "\n".join(lines) + "\n")
    ctx.evidence["follow_ups"] = str(path)


# -- conditions other commands ask for ------------------------------------------------------------


def merge_conditions(layout: Layout, tf: TaskFile) -> list[Unmet]:
    """Protocol conditions for `spark-git merge` (agent → task) beyond the merge gates."""
    if not is_full(layout):
        return []
    if variant_of(tf) == "short":
        if tf.state != SYNTHESIS:
            return [Unmet(f"task {tf.task_name} is in {tf.state}; under protocol \"full\" (variant short) agent merges are accepted only in SYNTHESIS after plan approval", _path_to(tf, SYNTHESIS))]
        pa = tf.plan_approval
        if pa is None or not pa.approved or getattr(pa, "task_md_sha256", None) != task_md_digest(layout, tf.task_name):
            return [Unmet("the plan is not approved (agent merges in SYNTHESIS need the human's plan approval)", f"spark-git approve {tf.task_name} --plan")]
        return []
    if tf.state != IMPLEMENTATION:
        return [Unmet(f"task {tf.task_name} is in {tf.state}; under protocol \"full\" agent merges are accepted only in IMPLEMENTATION", _path_to(tf, IMPLEMENTATION))]
    return []


def complete_conditions(layout: Layout, tf: TaskFile, head: str) -> list[Unmet]:
    """Protocol conditions for `spark-git complete` (task → base) beyond approval and the final gate."""
    if not is_full(layout):
        return []
    if tf.state != AWAITING:
        return [Unmet(f"task {tf.task_name} is in {tf.state}; under protocol \"full\" complete needs AWAITING_USER_APPROVAL", _path_to(tf, AWAITING))]
    presented = None
    for t in reversed(tf.transition_log):
        if t.to == AWAITING:
            presented = t.evidence.get("task_head")
            break
    if presented != head:
        return [Unmet(f"the task head {head[:12]} is not the commit presented for approval ({(presented or '?')[:12]})", f"spark-git advance {tf.task_name} --to REQUIREMENTS --why 'changed after review'")]
    return []


def approve_conditions(layout: Layout, tf: TaskFile, kind: str) -> list[Unmet]:
    """`approve --plan` only in SYNTHESIS, `approve --changes` only in AWAITING_USER_APPROVAL (full)."""
    if not is_full(layout):
        return []
    need = SYNTHESIS if kind == "plan" else AWAITING
    if tf.state != need:
        return [Unmet(f"task {tf.task_name} is in {tf.state}; approve --{kind} needs {need}", _path_to(tf, need))]
    return []


def agent_add_guard(layout: Layout) -> Callable[[TaskFile], None]:
    """For tasks.add_agent: refused outside AGENT_ADD_STATES (full); joining in SYNTHESIS voids the plan approval."""

    def guard(tf: TaskFile) -> None:
        check_consistent(layout, tf)
        if is_full(layout) and tf.state not in AGENT_ADD_STATES:
            raise Blocked(
                f"task {tf.task_name!r} is in {tf.state}: agents can join only in {', '.join(AGENT_ADD_STATES)}",
                hint="a new agent must state its requirements: the task must go back to REQUIREMENTS first"
                + (" (spark-git advance --to REQUIREMENTS --why ...)" if REQUIREMENTS in next_states(tf) else ""),
                next=[f"spark-git advance {tf.task_name} --to REQUIREMENTS --why '...'"] if REQUIREMENTS in next_states(tf) else [],
                details={"state": tf.state}, task=tf.task_name,
            )
        if tf.state == SYNTHESIS and tf.plan_approval is not None:
            tf.plan_approval = None

    return guard


def command_to(task: str, state: str) -> str:
    """The command that performs a transition: two of them are whole commands of their own."""
    if state == COMPLETE:
        return f"spark-git complete {task}"
    if state == CLEANUP:
        return f"spark-git cleanup {task}"
    return f"spark-git advance {task} --to {state}"


def _path_to(tf: TaskFile, state: str) -> str:
    nxt = next_states(tf)
    if state in nxt:
        return f"spark-git advance {tf.task_name} --to {state}"
    return f"spark-git advance {tf.task_name}  (from {tf.state}, towards {state})"


def record_transition(
    layout: Layout, tf: TaskFile, to: str, session: str | None, reason: str, evidence: dict[str, Any] | None = None
) -> Transition:
    """Appends a transition to `tf.transition_log` (the caller saves tf, under the task mutex) and
    to the audit trail's `state_transitions`."""
    t = Transition(from_state=tf.state, to=to, session_id=session, reason=reason, evidence=evidence or {}, protocol=layout.config.protocol)
    tf.transition_log.append(t)
    tf.state = to  # type: ignore[assignment]
    audit.record(layout, tf.task_name, "state_transitions", t.model_dump(mode="json", by_alias=True), session=session)
    return t
