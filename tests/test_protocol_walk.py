"""Whole tasks walked through the protocol with spark-git commands and agent commits only."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import git

from tests.protokit import P

REV, UPA, UPT = "architecture-reviewer", "architecture-updater", "test-updater"


def test_high_task_walks_every_state_and_lands_on_main(tmp_path: Path) -> None:
    p = P(tmp_path, title="Refactor the app")
    d = p.ok("classify", p.task, "--files", "src/app.py")["data"]
    assert d["decision"]["level"] == "HIGH" and d["decision"]["variant"] == "full"
    assert sorted(d["added_agents"]) == sorted([REV, UPA, UPT])
    agents = [REV, UPA, UPT]
    assert p.go()["to"] == "CLASSIFIED"
    assert p.go()["to"] == "REQUIREMENTS"
    for a in agents:
        p.requirements(a)
        p.report(a)
    assert p.go()["to"] == "SYNTHESIS"
    p.plans(agents)
    assert p.ok("approve", p.task, "--plan")["data"]["kind"] == "plan"
    assert p.go()["to"] == "IMPLEMENTATION"

    for a in (UPA, UPT):
        p.report(a, "WORKING")
    p.commit(UPA, {"src/app.py": "print('hello')\n"}, "say hello")
    p.ok("merge", p.task, "--agent", UPA)
    p.commit(UPT, {"tests/test_app.py": "def test(): pass\n"}, "add a test")
    p.ok("merge", p.task, "--agent", UPT)
    for a in (UPA, UPT):
        p.report(a, "COMPLETE", "--work-remaining", "none")
    head = p.head()
    rep = p.report(REV, "COMPLETE", "--decision", "APPROVED")["data"]["status"]
    assert rep["last_review_sha"] == head and rep["round"] == 2

    assert p.go()["to"] == "VALIDATION"
    rv = p.go()
    assert rv["to"] == "REVIEW" and rv["evidence"]["build"]["commit"] == head
    aw = p.go()
    assert aw["to"] == "AWAITING_USER_APPROVAL"
    cp = p.task_json()["checkpoint"]
    assert cp["type"] == "changes" and cp["commit_sha"] == head and cp["approved"] is False and cp["presented_at"]
    p.ok("approve", p.task, "--changes")
    p.ok("complete", p.task)
    assert git(p.repo, "rev-parse", "main^2") == head
    assert p.go()["to"] == "CLEANUP"

    tf = p.task_json()
    path = [(t["from"], t["to"]) for t in tf["transition_log"]]
    states = ["INIT", "CLASSIFIED", "REQUIREMENTS", "SYNTHESIS", "IMPLEMENTATION", "VALIDATION", "REVIEW",
              "AWAITING_USER_APPROVAL", "COMPLETE", "CLEANUP"]
    assert path == list(zip([None, *states[:-1]], states, strict=True))
    trail = json.loads((p.root / "audit-trail.json").read_text())
    assert [(t["from"], t["to"]) for t in trail["state_transitions"]] == path
    assert {c["agent"] for c in trail["commits"]} == {UPA, UPT}
    assert {i["agent"] for i in trail["agent_invocations"]} == set(agents)
    au = p.ok("audit", p.task)["data"]
    assert au["smells"] == [] and au["state"] == "CLEANUP"


def test_low_docs_task_skips_the_implementation_states(tmp_path: Path) -> None:
    p = P(tmp_path, title="Usage docs")
    d = p.ok("classify", p.task, "--files", "docs/usage.md")["data"]["decision"]
    assert (d["level"], d["variant"], d["agents"]) == ("LOW", "short", [REV, "docs-updater"])  # 003: a reviewer for every change
    a = "docs-updater"
    p.to_synthesis_planned([REV, a])
    # merges wait for the plan approval
    p.commit(a, {"docs/usage.md": "# usage\n"}, "usage docs")
    r = p.spark("--json", "merge", p.task, "--agent", a)
    assert r.returncode == 3 and "approve t1 --plan" in r.stdout
    p.ok("approve", p.task, "--plan")
    r = p.advance("IMPLEMENTATION")
    assert r.returncode == 3 and r.json["data"]["legal_next_states"] == ["AWAITING_USER_APPROVAL"]
    p.ok("merge", p.task, "--agent", a)
    p.report(a, "COMPLETE", "--work-remaining", "none")
    assert p.go()["to"] == "AWAITING_USER_APPROVAL"
    p.ok("approve", p.task, "--changes")
    p.ok("complete", p.task)
    assert git(p.repo, "rev-parse", "main^2") == p.head()
    assert [t["to"] for t in p.task_json()["transition_log"]] == [
        "INIT", "CLASSIFIED", "REQUIREMENTS", "SYNTHESIS", "AWAITING_USER_APPROVAL", "COMPLETE"]
    # a COMPLETE task points at the command that ends it, not at a bare state change
    r = p.spark("status", p.task)
    assert r.returncode == 0, r
    assert f"next: CLEANUP ready (spark-git cleanup {p.task})" in r.stdout, r.stdout
