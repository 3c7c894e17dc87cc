"""The one rule on an agent's evidence (`report --evidence`): a COMPLETE report whose evidence says
otherwise is not COMPLETE for a transition. Each refusal names the field that says so."""

from __future__ import annotations

from spark_git.protocol.context import Ctx
from spark_git.protocol.unmet import Unmet
from spark_git.state.models import AgentStatus


def evidence_problem(ctx: Ctx, agent: str, st: AgentStatus) -> Unmet | None:
    ev = st.evidence
    if ev is None:
        return None
    fix = f"spark-git report {ctx.task} --agent {agent} --status COMPLETE --evidence output.json"
    problem = None
    if ev.output is not None and ev.output.status != "OK":
        problem = f"status is {ev.output.status}, not OK (004 output JSON): {ev.output.summary or '(no summary)'}"
    elif ev.spark is not None:
        q = ev.spark.quality
        cov = q.step_6_testing.coverage if q.step_6_testing else None
        minimum = ctx.layout.config.evidence.coverage_min
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
