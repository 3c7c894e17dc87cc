"""Conditions several guards share: each agent's report, its requirements report, every agent COMPLETE,
the task branch's commits attributed, agents actually invoked, the human's signed plan approval."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from spark_git.core.git import branch_ref
from spark_git.core.layout import Layout
from spark_git.protocol.context import Ctx, PlanCheck, entered_at, requirements_path, task_head, task_md_digest
from spark_git.protocol.unmet import Unmet
from spark_git.state.models import TaskFile

if TYPE_CHECKING:
    from spark_git.state.report_evidence import AgentStatus

# The attribution forms of the merge gate (gates/attribution.py): `[agent] subject` or a trailer.
_PREFIX = re.compile(r"\[([a-z0-9][a-z0-9._-]{0,62})\]")
_TRAILER = re.compile(r"^Spark-Agent:\s*(\S+)\s*$", re.M)


def report_cmd(ctx: Ctx, agent: str, extra: str = "") -> str:
    return f"spark-git report {ctx.task} --agent {agent} --status COMPLETE{extra}"


def status_problem(ctx: Ctx, agent: str, st: AgentStatus | None) -> Unmet | None:
    if st is None and agent in ctx.unusable:
        return Unmet(f"agent {agent} has no report that counts: {ctx.unusable[agent]}", report_cmd(ctx, agent))
    if st is None or st.status == "NEW":
        return Unmet(f"agent {agent} has not reported (no status)", report_cmd(ctx, agent))
    if st.status in ("ERROR", "BLOCKED"):
        return Unmet(f"agent {agent} reports {st.status}: {st.feedback or '(no message)'}", report_cmd(ctx, agent), how="resolve it")
    if st.status != "COMPLETE":
        return Unmet(f"agent {agent} reports {st.status}, not COMPLETE", report_cmd(ctx, agent))
    return evidence_problem(ctx, agent, st)


def every_agent_complete(ctx: Ctx) -> list[Unmet]:
    """Re-checked before COMPLETE and CLEANUP: an agent that reported ERROR after the review stops both.
    Under protocol "light" agents need not report at all."""
    if ctx.protocol != "full":
        return []
    return [u for a in ctx.tf.agents if (u := status_problem(ctx, a, ctx.statuses.get(a)))]


def rejected_since_presented(ctx: Ctx) -> list[Unmet]:
    """Before `complete` (protocol full): a reviewer who REJECTED the changes after they were presented
    for approval is not overruled by the human's change approval (003: no human override of an agent's
    rejection). Rejections from before (deferred in SCOPE_NEGOTIATION) were settled on the way in."""
    presented = entered_at(ctx.tf, "AWAITING_USER_APPROVAL")
    if ctx.protocol != "full" or presented is None:
        return []
    cmd = f"spark-git approve {ctx.task} --request-changes --why '...'"
    return [Unmet(f"reviewer {a} decided REJECTED after the changes were presented: {st.feedback or '(no feedback)'}", cmd)
            for a, e in ctx.tf.agents.items()
            if e.role == "reviewer" and (st := ctx.statuses.get(a)) is not None and st.decision == "REJECTED" and st.updated_at >= presented]


def requirements_reports(ctx: Ctx) -> list[Unmet]:
    """Every agent's requirements report exists and has at least `rules.requirements_min_bytes` bytes."""
    out = []
    minimum = ctx.rules.requirements_min_bytes
    for a in ctx.tf.agents:
        p = requirements_path(ctx.layout, ctx.task, a, ctx.statuses.get(a))
        size = len(p.read_bytes().strip()) if p.is_file() else None
        if size is None or size == 0 or size < minimum:
            what = "does not exist" if size is None else "is empty" if size == 0 else f"has {size} bytes, fewer than rules.requirements_min_bytes = {minimum}"
            out.append(Unmet(f"agent {a}'s requirements report {p} {what}", report_cmd(ctx, a, f" --report {p}"), how="write it"))
    return out


def _commit_agent(message: str) -> str | None:
    m = _TRAILER.findall(message)
    if m:
        return str(m[-1])
    p = _PREFIX.match(message)
    return p.group(1) if p else None


def unattributed_commits(ctx: Ctx) -> list[Unmet]:
    """Commits on the task branch that no agent of the task is named on (a coordinator's own commit)."""
    head = task_head(ctx)
    if head is None:
        return []
    trail = ctx.store.read_audit(ctx.task)
    recorded = {str(c.get("sha")) for c in (trail.commits if trail else [])}
    rows = ctx.git().log_fields(f"{branch_ref(ctx.tf.base_branch)}..{head}", ["%H", "%B"])
    bad = [sha for sha, body in rows if sha not in recorded and _commit_agent(body) not in ctx.tf.agents]
    if not bad:
        return []
    wt = Path(ctx.tf.worktree)
    return [Unmet(f"commit(s) {', '.join(s[:12] for s in bad)} on the task branch are attributed to no agent of the task "
                  "(a coordinator's own commit must name the agent it is for: `[agent] subject` or a Spark-Agent: trailer)",
                  f"git -C {wt} commit --amend --no-edit --trailer 'Spark-Agent: <agent>'")]


def invoked(ctx: Ctx) -> list[Unmet]:
    """Under `full`, a task that ends with no agent report at all needs a reason (`--why`)."""
    if ctx.protocol != "full" or (ctx.why or "").strip():
        return []
    trail = ctx.store.read_audit(ctx.task)
    if trail is not None and trail.agent_invocations:
        return []
    return [Unmet(f"no agent was ever invoked on task {ctx.task} (no agent report in the audit trail)",
                  f"spark-git cleanup {ctx.task} --why '...'")]


# The one rule on an agent's evidence (`report --evidence`): a COMPLETE report whose evidence says
# otherwise is not COMPLETE for a transition. Each refusal names the field that says so.
def evidence_problem(ctx: Ctx, agent: str, st: AgentStatus) -> Unmet | None:
    ev = st.evidence
    if ev is None:
        return None
    fix = f"spark-git report {ctx.task} --agent {agent} --status COMPLETE --evidence output.json"
    problem = None
    if ev.output is not None and ev.output.status != "OK":
        problem = f"status is {ev.output.status}, not OK (004 output JSON): {ev.output.summary or '(no summary)'}"
    elif ev.output is not None and ev.output.gates.meets_definition_of_done is False:
        problem = "gates.meets_definition_of_done is false (004 output JSON)"
    elif ev.spark is not None:
        q = ev.spark.quality
        cov = q.step_6_testing.coverage if q.step_6_testing else None
        minimum = ctx.rules.coverage_min
        run = ev.spark.state
        if run is not None and run.status != "completed":  # 000 4.3: status == completed, with the two below
            problem = f"state.status is {run.status}, not completed"
        elif not q.can_proceed:
            problem = "quality.can_proceed is false"
        elif q.violations_total > 0:
            problem = f"quality.violations_total is {q.violations_total}, not 0"
        elif q.step_6_testing and q.step_6_testing.tests_failed:  # 000: "MUST be 0"
            problem = f"quality.step_6_testing.tests_failed is {q.step_6_testing.tests_failed}, not 0"
        elif minimum is not None and (cov is None or cov < minimum):
            problem = f"quality.step_6_testing.coverage is {'missing' if cov is None else f'{cov:.1%}'}, below evidence.coverage_min {minimum:.1%}"
    if problem is None:
        return None
    return Unmet(f"agent {agent} reports COMPLETE but its evidence says otherwise: {problem}", fix, how="fix it, write the output JSON to output.json")


def plan_unmet(layout: Layout, tf: TaskFile, verify: PlanCheck | None) -> list[Unmet]:
    """The human's plan approval: recorded, of today's task.md, and signed by an allowed approver
    (`verify`, from the ops layer; without one no approval counts)."""
    pa, again = tf.plan_approval, f"spark-git approve {tf.task_name} --plan"
    if pa is None or not pa.approved:
        return [Unmet("the human has not approved the plan", again)]
    if pa.task_md_sha256 != task_md_digest(layout, tf.task_name):
        return [Unmet("task.md changed after the plan was approved (the approval is void)", again)]
    wrong = verify(layout, tf, pa) if verify is not None else "its signature was not checked (no verifier was given)"
    return [Unmet(f"the plan approval does not count: {wrong}", again)] if wrong else []

