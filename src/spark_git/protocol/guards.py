"""The guards: one function per transition, Ctx -> every unmet condition (empty: it may go through).
They read facts through the Ctx and never take them on trust; the only thing one runs, the build gate
of VALIDATION → REVIEW, is handed in by the caller (`Ctx.run_build`)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from spark_git.core.git import Git
from spark_git.protocol.checks import (
    every_agent_complete,
    invoked,
    plan_unmet,
    rejected_since_presented,
    report_cmd,
    requirements_reports,
    status_problem,
    unattributed_commits,
)
from spark_git.protocol.context import (
    TASK_MD_SECTIONS,
    BuildRun,
    Ctx,
    build_evidence,
    entered_at,
    task_head,
)
from spark_git.protocol.states import State
from spark_git.protocol.unmet import OWNER, Unmet
from spark_git.state.taskmd import plan_section, task_md_sections

if TYPE_CHECKING:
    from spark_git.state.report_evidence import AgentStatus


def _role(ctx: Ctx, agent: str) -> str:
    return ctx.tf.agents[agent].role if agent in ctx.tf.agents else "other"


def _agents(ctx: Ctx, role: str | None = None) -> list[str]:
    return [a for a in ctx.tf.agents if role is None or _role(ctx, a) == role]


def owner(ctx: Ctx) -> list[Unmet]:
    if ctx.session != ctx.tf.session_id:
        return [Unmet(f"the task lock is held by session {ctx.tf.session_id}, not by {ctx.session or '(no session)'}",
                      f"export SPARK_SESSION_ID={ctx.tf.session_id}", kind=OWNER)]
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
        return [Unmet(f"{p} lacks the section(s) {', '.join(missing)}", how=f"add `## {missing[0]}` to {p}")]
    return []


def g_classified(ctx: Ctx) -> list[Unmet]:
    out = owner(ctx) + _worktrees(ctx)
    if not ctx.tf.risk or not ctx.tf.variant:
        out.append(Unmet("the risk level and agent set are not decided", f"spark-git classify {ctx.task}"))
    return out + _task_md(ctx)


def g_requirements(ctx: Ctx) -> list[Unmet]:
    return owner(ctx) + _worktrees(ctx) + _task_md(ctx)


def g_synthesis(ctx: Ctx) -> list[Unmet]:
    out = owner(ctx)
    for a in _agents(ctx):
        u = status_problem(ctx, a, ctx.statuses.get(a))
        if u:
            out.append(u)
    return out + requirements_reports(ctx)


def _plan(ctx: Ctx) -> list[Unmet]:
    out = []
    p = ctx.layout.task_md(ctx.task)
    sections = task_md_sections(p.read_text(errors="replace")) if p.is_file() else {}
    for a in _agents(ctx):
        body = plan_section(sections, a)
        if not body:
            out.append(Unmet(f"task.md has no {'non-empty ' if body is not None else ''}implementation plan of {a}",
                             f"spark-git agent run {ctx.task} {a}" if ctx.protocol == "full" else None,
                             how=f"its answer's `plan` is filed as the `## Implementation Plan: {a}` section of {p}"))
    # the plan approval only once every section is there: one given now would be voided by them
    return out or plan_unmet(ctx.layout, ctx.tf, ctx.verify_plan)


def _updater_report(ctx: Ctx, a: str, phase: str) -> Unmet | None:
    st = ctx.statuses.get(a)
    u = status_problem(ctx, a, st)
    if u or st is None:
        return u
    if st.task_state != phase:
        return Unmet(f"updater {a} has not reported COMPLETE during {phase} (its last report is from {st.task_state or 'an earlier state'})", report_cmd(ctx, a, " --work-remaining none"))
    entered = entered_at(ctx.tf, phase)
    if entered and st.updated_at < entered:  # a round is one stay in the phase: an earlier round's report does not count
        return Unmet(f"updater {a}'s COMPLETE is from an earlier round of {phase} (reported {st.updated_at}, this round began {entered})",
                     report_cmd(ctx, a, " --work-remaining none"))
    if (st.work_remaining or "none").strip().lower() != "none":
        return Unmet(f"updater {a} reports work remaining: {st.work_remaining}", report_cmd(ctx, a, " --work-remaining none"))
    return None


def _updaters_done(ctx: Ctx, phase: str) -> list[Unmet]:
    out = []
    git, head = ctx.git(), task_head(ctx)
    for a in _agents(ctx, "updater"):
        u = _updater_report(ctx, a, phase)
        if u:
            out.append(u)
        ahead = git.branch_head(ctx.tf.agents[a].branch)
        if ahead and head and not git.is_ancestor(ahead, head):
            out.append(Unmet(f"updater {a}'s branch ({ahead[:12]}) is not contained in the task branch", f"spark-git merge {ctx.task} --agent {a}"))
    return out


def _review(ctx: Ctx, a: str, head: str, what: str) -> Unmet | None:
    st = ctx.statuses.get(a)
    # the reviewer's decision is the reviewer's: the coordinator's step is to run it (agent run files
    # the decision its answer carries); under protocol light a human reviewer reports by hand
    cmd = (f"spark-git agent run {ctx.task} {a}" if ctx.protocol == "full"
           else f"spark-git report {ctx.task} --agent {a} --status COMPLETE --decision APPROVED")
    u = status_problem(ctx, a, st)
    if u or st is None:
        return Unmet(u.condition, cmd) if u else None
    if (st.work_remaining or "none").strip().lower() != "none":
        return Unmet(f"reviewer {a} reports work remaining: {st.work_remaining}", cmd if ctx.protocol == "full" else f"{cmd} --work-remaining none")
    if st.decision != "APPROVED":
        return Unmet(f"reviewer {a} decided {st.decision or 'nothing'}" + (f": {st.feedback}" if st.feedback else ""), cmd)
    since = ctx.tf.reviews_since
    if since and st.updated_at < since:
        return Unmet(f"reviewer {a}'s approval is from before the human requested changes ({since}): a new round needs a new review", cmd)
    if not ctx.holds(st.last_review_sha, st.last_review_patch_id):
        return Unmet(f"reviewer {a}'s approval is stale: it reviewed {(st.last_review_sha or '?')[:12]}, the task head is {head[:12]} with another patch ({what})", cmd)
    return None


def _reviews(ctx: Ctx, what: str) -> list[Unmet]:
    head = task_head(ctx) or "?"
    return [u for a in _agents(ctx, "reviewer") if (u := _review(ctx, a, head, what))]


def _build_on_head(ctx: Ctx, since: str | None = None) -> list[Unmet]:
    head = task_head(ctx)
    if head is None:
        return [Unmet(f"task branch {ctx.tf.task_branch} does not exist", f"spark-git doctor {ctx.task}")]
    tree = ctx.git().tree_of(head)
    ev = build_evidence(ctx.store, ctx.task, head, tree, since)
    if ev is None and since is None:  # after an `update`: the build of the same patch before it (VALIDATION gates the new tree)
        last = build_evidence(ctx.store, ctx.task, "", None, any_commit=True)
        ev = last if last and ctx.holds(str(last.get("commit") or ""), None) else None
    if ev is None:
        return [Unmet(f"no passing gates.build result for the task head {head[:12]}" + (" since entering VALIDATION" if since else ""),
                      f"spark-git merge {ctx.task} --all" if not since else ctx.advance_cmd(State.REVIEW))]
    ctx.evidence["build"] = {k: ev.get(k) for k in ("at", "commit", "tree", "log_path", "ran")}
    return []


def _entering_implementation(ctx: Ctx) -> list[Unmet]:
    """Every way into IMPLEMENTATION re-checks what REQUIREMENTS and SYNTHESIS established: an agent that
    joined later owes its requirements too, and task.md may have lost a section since. (The human's
    request for changes is not held up by it: that is the human's decision.)"""
    return _task_md(ctx) + requirements_reports(ctx)


def g_implementation(ctx: Ctx) -> list[Unmet]:
    return owner(ctx) + _entering_implementation(ctx) + _plan(ctx)


def g_validation(ctx: Ctx) -> list[Unmet]:
    return _build_or_run(ctx, owner(ctx) + _reviews(ctx, "a later merge voids a review") + _updaters_done(ctx, State.IMPLEMENTATION))


def _build_or_run(ctx: Ctx, out: list[Unmet]) -> list[Unmet]:
    """A passing build result for the head, or — once everything else holds — the build run now on the
    task worktree (after an `update` there is no merge left to produce one)."""
    missing = _build_on_head(ctx)
    if not missing or ctx.dry or out or ctx.run_build is None:
        return out + missing
    unclean = _clean_task_worktree(ctx)
    if unclean:
        return missing + unclean
    return _build_now(ctx, ctx.run_build, f"spark-git merge {ctx.task} --all", "no passing gates.build result for the task head: it ran now and ")


def _clean_task_worktree(ctx: Ctx) -> list[Unmet]:
    wt = Path(ctx.tf.worktree)
    if not wt.is_dir():
        return [Unmet(f"the task worktree {wt} does not exist", f"spark-git doctor {ctx.task}")]
    g = Git(wt)
    dirty = g.status()
    if dirty:
        return [Unmet(f"the task worktree is not clean: {', '.join(str(d) for d in dirty[:10])}", how=f"commit or remove the changes in {wt}")]
    if g.head() != task_head(ctx):
        return [Unmet(f"the task worktree is not at the task head {(task_head(ctx) or '?')[:12]}", f"cd {shlex.quote(str(wt))} && git checkout {ctx.tf.task_branch}")]
    return []


def g_review(ctx: Ctx) -> list[Unmet]:
    out = owner(ctx) + _clean_task_worktree(ctx) + unattributed_commits(ctx)
    if not _build_on_head(ctx, entered_at(ctx.tf, State.VALIDATION)):
        return out
    if ctx.dry:  # status: the gate runs at `advance` once everything else holds
        return out
    if out or ctx.run_build is None:
        return [*out, Unmet(f"gates.build has not passed on the task head {(task_head(ctx) or '?')[:12]} since entering VALIDATION (advance runs it once the other conditions hold)",
                            ctx.advance_cmd(State.REVIEW))]
    return _build_now(ctx, ctx.run_build)


def _build_now(ctx: Ctx, run_build: Callable[[], BuildRun], fix: str | None = None, prefix: str = "") -> list[Unmet]:
    """No fresh result on this head: the build gate runs now, on the task worktree. `fix`: the way on
    after a failure (default: back to IMPLEMENTATION from VALIDATION)."""
    ev = run_build()
    if not ev.passed:
        return [Unmet(f"{prefix}gates.build failed on the task head {(task_head(ctx) or '?')[:12]} ({ev.error or f'exit code {ev.exit_code}'}); log: {ev.log_path}",
                      fix or f"{ctx.advance_cmd(State.IMPLEMENTATION)} --why 'gates.build failed: {ev.log_path}'")]
    ctx.record_build = ev  # ops records it (audit entry and transition evidence) once the transition goes through
    return []


def g_awaiting(ctx: Ctx) -> list[Unmet]:
    # attribution again: the head may have moved in REVIEW (a coordinator's commit after VALIDATION)
    return owner(ctx) + unattributed_commits(ctx) + _reviews(ctx, "approval must be unanimous for the current head")


def _a_reviewer(ctx: Ctx) -> str:
    """A reviewer to name in a hint (the first; a hint is a command, not a placeholder)."""
    return next(iter(_agents(ctx, "reviewer")), "reviewer")


def rejecters(ctx: Ctx) -> list[tuple[str, AgentStatus]]:
    return [(a, st) for a in _agents(ctx, "reviewer") if (st := ctx.statuses.get(a)) is not None and st.decision == "REJECTED"]


def _rejected(ctx: Ctx) -> list[Unmet]:
    rej = rejecters(ctx)
    ctx.evidence["feedback"] = {a: st.feedback for a, st in rej}
    if not rej:
        return [Unmet("no reviewer has REJECTED the changes", f"spark-git report {ctx.task} --agent {_a_reviewer(ctx)} --status COMPLETE --decision REJECTED --feedback '...'")]
    return []


def g_back_to_impl(ctx: Ctx) -> list[Unmet]:
    return owner(ctx) + _entering_implementation(ctx) + _rejected(ctx)


def g_scope(ctx: Ctx) -> list[Unmet]:
    out = owner(ctx) + _rejected(ctx)
    for a, st in rejecters(ctx):
        if not (getattr(st, "blocking", None) or getattr(st, "deferrable", None)):
            out.append(Unmet(f"reviewer {a} has not listed BLOCKING / DEFERRABLE items", f"spark-git report {ctx.task} --agent {a} --status COMPLETE --decision REJECTED --blocking '...' --deferrable '...' --scope RESOLVE_NOW",
                             how="list the items; --scope DEFER defers the DEFERRABLE ones"))
        if getattr(st, "scope_decision", None) not in ("RESOLVE_NOW", "DEFER"):
            out.append(Unmet(f"reviewer {a} has not recorded a scope decision", f"spark-git report {ctx.task} --agent {a} --status COMPLETE --decision REJECTED --scope RESOLVE_NOW",
                             how="decide RESOLVE_NOW or DEFER"))
    return out


def _scope_decisions(ctx: Ctx) -> dict[str, str | None]:
    return {a: getattr(st, "scope_decision", None) for a, st in rejecters(ctx)}


def _ruler(ctx: Ctx) -> str | None:
    """A rejecting reviewer with the final say (`scope.final_say`, 003: architecture) who decided DEFER:
    it settles the others' RESOLVE_NOW, except a veto role's (`scope.veto`, 003: security)."""
    final = ctx.rules.final_say
    return next((a for a, d in _scope_decisions(ctx).items() if a in final and d == "DEFER"), None)


def _overruled(ctx: Ctx, agent: str, ruler: str | None) -> bool:
    return ruler is not None and agent != ruler and agent not in ctx.rules.veto


def g_scope_to_synthesis(ctx: Ctx) -> list[Unmet]:
    out = owner(ctx)
    resolve = [a for a, d in _scope_decisions(ctx).items() if d == "RESOLVE_NOW"]
    ruler = _ruler(ctx)
    if not resolve:
        out.append(Unmet("no rejecting reviewer decided RESOLVE_NOW", f"spark-git report {ctx.task} --agent {_a_reviewer(ctx)} --status COMPLETE --decision REJECTED --scope RESOLVE_NOW"))
    elif all(_overruled(ctx, a, ruler) for a in resolve):
        out.append(Unmet(f"reviewer {ruler} has the final say and decided DEFER (over {', '.join(resolve)})", ctx.advance_cmd(State.AWAITING_USER_APPROVAL)))
    return out


def g_scope_to_awaiting(ctx: Ctx) -> list[Unmet]:
    out = owner(ctx) + unattributed_commits(ctx)
    ruler = _ruler(ctx)
    for a, d in _scope_decisions(ctx).items():
        if d != "DEFER" and not _overruled(ctx, a, ruler):
            veto = " (a veto: it cannot be deferred)" if a in ctx.rules.veto and ruler else ""
            out.append(Unmet(f"reviewer {a} decided {d or 'nothing'}, not DEFER{veto}", f"spark-git report {ctx.task} --agent {a} --status COMPLETE --decision REJECTED --scope DEFER"))
    for a, st in rejecters(ctx):
        if getattr(st, "blocking", None) and not _overruled(ctx, a, ruler):
            out.append(Unmet(f"reviewer {a} lists BLOCKING items: {'; '.join(st.blocking)}", ctx.advance_cmd(State.SYNTHESIS)))
    if ruler and not out:
        ctx.evidence["final_say"] = ruler
    return out


def g_short_awaiting(ctx: Ctx) -> list[Unmet]:
    out = owner(ctx) + _plan(ctx) + _updaters_done(ctx, State.SYNTHESIS) + _clean_task_worktree(ctx) + unattributed_commits(ctx)
    head = task_head(ctx)
    if head and head != ctx.tf.base_commit:
        return _build_or_run(ctx, out)
    return out


def g_reopen(ctx: Ctx) -> list[Unmet]:
    out = owner(ctx)
    if not (ctx.why or "").strip():
        out.append(Unmet("going back to REQUIREMENTS needs a justification", f"{ctx.advance_cmd(State.REQUIREMENTS)} --why '...'"))
    return out


def g_build_failed(ctx: Ctx) -> list[Unmet]:
    """VALIDATION → IMPLEMENTATION: back to fixing after a failed build (recorded for the head), or with a reason."""
    out = owner(ctx) + _entering_implementation(ctx)
    head = task_head(ctx)
    failed = head and build_evidence(ctx.store, ctx.task, head, ctx.git().tree_of(head), entered_at(ctx.tf, State.VALIDATION), result="failed")
    if failed:
        ctx.evidence["failed_build"] = {k: failed.get(k) for k in ("at", "commit", "tree", "log_path")}
    elif not (ctx.why or "").strip():
        out.append(Unmet("going back to IMPLEMENTATION needs a failed gates.build on the task head or a reason",
                         f"{ctx.advance_cmd(State.IMPLEMENTATION)} --why 'gates.build failed: ...'"))
    return out


def g_changes_requested(ctx: Ctx) -> list[Unmet]:
    """AWAITING_USER_APPROVAL → back to work: only the human's `approve --request-changes --why`."""
    cmd = f"spark-git approve {ctx.task} --request-changes --why '...'"
    if ctx.decision is None:
        return [Unmet("going back from AWAITING_USER_APPROVAL is the human's decision (approve --request-changes)", cmd)]
    if not (ctx.why or "").strip():
        return [Unmet("a request for changes needs a reason (--why)", cmd)]
    return []


def g_complete(ctx: Ctx) -> list[Unmet]:
    if ctx.dry:  # status: what `complete` still waits for (it also runs the final gate)
        cp, head = ctx.tf.checkpoint, task_head(ctx)
        if cp is None or not cp.approved or not ctx.holds(cp.commit_sha, cp.patch_id):
            return [Unmet(f"the human has not approved the changes at {(head or '?')[:12]}", f"spark-git approve {ctx.task} --changes")]
        return every_agent_complete(ctx) + rejected_since_presented(ctx)
    return [Unmet("AWAITING_USER_APPROVAL → COMPLETE is performed by `spark-git complete` (after the human's change approval)", f"spark-git approve {ctx.task} --changes && spark-git complete {ctx.task}")]


def g_cleanup(ctx: Ctx) -> list[Unmet]:
    out = owner(ctx) + every_agent_complete(ctx) + invoked(ctx)
    git, head = ctx.git(), task_head(ctx)
    base = git.branch_head(ctx.tf.base_branch)
    if head is None or base is None or not git.is_ancestor(head, base):
        out.append(Unmet(f"the task branch {ctx.tf.task_branch} is not contained in {ctx.tf.base_branch}", f"spark-git complete {ctx.task}"))
    return out
