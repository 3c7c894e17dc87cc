"""The PR/MR body of `complete --via`: the evidence a reviewer on the forge sees (the final gate on the
pushed head, the human's approvals, who wrote what), and the same as one JSON line for tools."""

from __future__ import annotations

import json
from typing import Any

from spark_git.core.errors import SparkError
from spark_git.core.layout import Layout
from spark_git.gates import command as gates
from spark_git.gates import evidence
from spark_git.ops.shared import history
from spark_git.state.models import Checkpoint, TaskFile
from spark_git.state.store import Store

MARKER = "spark-git evidence"  # the HTML comment holding the JSON evidence


def compose(layout: Layout, store: Store, tf: TaskFile, head: str, ev: gates.GateEvidence, via: str) -> tuple[str, str]:
    title = tf.title or tf.task_name
    approvals = [_approval(kind, cp) for kind, cp in (("changes", tf.checkpoint), ("plan", tf.plan_approval)) if cp is not None and cp.approved]
    agents = _agents(layout, store, tf.task_name)
    lines = [f"Task `{tf.task_name}` landed through spark-git (`complete --via {via}`): head `{head}` onto `{tf.base_branch}`.", "",
             "## Gates", "", _gate_line(ev), "", "## Approvals", ""]
    lines += [f"- {a['kind']}: approved by {a['by'] or '?'} at {a['at'] or '?'} (commit `{(a['commit'] or '?')[:12]}`)" for a in approvals] or ["- none recorded"]
    lines += ["", "## Attribution", ""]
    if agents:
        lines += ["| agent | commits | files | +lines | -lines |", "|---|---|---|---|---|"]
        lines += [f"| {w['agent']} | {len(w['commits'])} | {len(w['files'])} | {w['added']} | {w['removed']} |" for w in agents]
    else:
        lines.append("- no attributed commits")
    doc = {"task": tf.task_name, "head": head, "base": tf.base_branch, "gate": ev.model_dump(mode="json", exclude={"reports"}),
           "approvals": approvals, "agents": agents}
    lines += ["", f"<!-- {MARKER}: {json.dumps(doc, sort_keys=True)} -->", ""]
    return title, "\n".join(lines)


def _gate_line(ev: gates.GateEvidence) -> str:
    if not ev.ran:
        return f"- {ev.gate}: no gate configured (gates.final is empty)"
    cmd = ev.command if isinstance(ev.command, str) else " ".join(ev.command or [])
    result = "passed" if ev.passed else "failed"
    reused = f", verdict reused from {ev.reused_from}" if ev.reused_from else ""
    tests = f", tests: {evidence.counts(ev.tests)}" if ev.tests else ""
    return f"- {ev.gate}: {result} on tree `{ev.tree[:12]}` (`{cmd}`, {ev.duration_s:.1f} s{tests}{reused})"


def _approval(kind: str, cp: Checkpoint) -> dict[str, Any]:
    return {"kind": kind, "by": cp.approved_by, "at": cp.approved_at, "commit": cp.commit_sha, "patch_id": cp.patch_id}


def _agents(layout: Layout, store: Store, task: str) -> list[dict[str, Any]]:
    try:
        return [w.model_dump(mode="json") for w in history.who(layout, store, task).agents]
    except SparkError:  # attribution is evidence, not a guard: a task without notes still lands
        return []
