"""Issue 15's rules, each walked: refused (task.json and the audit trail byte-identical), then accepted
once the condition holds."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import commit, git

from tests.protokit import P
from tests.test_update import REV, UPA, UPT, walk_to_awaiting


def refused(p: P, *args: str, says: str, code: int = 3) -> dict:
    before = p.snapshot()
    r = p.spark("--json", *args)
    assert r.returncode == code, r
    assert says in json.dumps(r.json), r
    assert p.snapshot() == before
    return r.json


def to_requirements(p: P) -> None:
    p.ok("classify", p.task, "--risk", "HIGH", "--why", "test")
    p.go(), p.go()


def to_synthesis(p: P) -> None:
    to_requirements(p)
    for a in (REV, UPA, UPT):
        p.requirements(a)
        p.report(a)
    p.go()


def test_an_agent_reporting_error_after_the_review_stops_complete_and_cleanup(tmp_path: Path) -> None:
    p = P(tmp_path)
    walk_to_awaiting(p, {"src/one.py": "one = 1\n"})
    p.ok("approve", p.task, "--changes")
    p.report(UPT, "ERROR", "--feedback", "the flaky test is back")
    refused(p, "complete", p.task, says=f"agent {UPT} reports ERROR")
    p.report(UPT, "COMPLETE", "--work-remaining", "none")
    p.ok("complete", p.task)
    p.report(UPA, "ERROR", "--feedback", "found a bug after landing")
    refused(p, "cleanup", p.task, says=f"agent {UPA} reports ERROR")
    p.report(UPA, "COMPLETE", "--work-remaining", "none")
    p.ok("cleanup", p.task)


def test_a_reviewer_rejecting_after_the_review_stops_complete(tmp_path: Path) -> None:
    """003: no human override of an agent's rejection: the change approval does not outvote a reviewer
    who rejects the presented head afterwards."""
    p = P(tmp_path)
    walk_to_awaiting(p, {"src/one.py": "one = 1\n"})
    p.report(REV, "COMPLETE", "--decision", "REJECTED", "--feedback", "found a bug in one.py")
    p.ok("approve", p.task, "--changes")
    r = refused(p, "complete", p.task, says=f"reviewer {REV} decided REJECTED after the changes were presented: found a bug in one.py")
    assert f"spark-git approve {p.task} --request-changes --why" in " ".join(r["next"])
    (blockers,) = [n["blockers"] for n in p.ok("status", p.task)["data"]["tasks"][0]["next_states"] if n["state"] == "COMPLETE"]
    assert any(f"reviewer {REV} decided REJECTED after" in b for b in blockers), blockers
    p.report(REV, "COMPLETE", "--decision", "APPROVED")  # the reviewer withdraws it
    p.ok("complete", p.task)


def test_an_updaters_complete_from_an_earlier_round_does_not_count(tmp_path: Path) -> None:
    p = P(tmp_path)
    walk_to_awaiting(p, {"src/one.py": "one = 1\n"})
    p.ok("approve", p.task, "--request-changes", "--why", "name it better")
    assert p.state() == "IMPLEMENTATION"
    p.commit(UPA, {"src/one.py": "better = 1\n"}, "rename")
    p.ok("merge", p.task, "--agent", UPA)
    p.report(UPA, "COMPLETE", "--work-remaining", "none")
    p.report(REV, "COMPLETE", "--decision", "APPROVED")
    # the test-updater's COMPLETE was reported in the first IMPLEMENTATION round
    refused(p, "advance", p.task, "--to", "VALIDATION", says=f"updater {UPT}'s COMPLETE is from an earlier round")
    p.report(UPT, "COMPLETE", "--work-remaining", "none")
    assert p.go()["to"] == "VALIDATION"


def test_a_reviewer_with_work_remaining_does_not_pass(tmp_path: Path) -> None:
    p = P(tmp_path)
    walk_to_awaiting(p, {"src/one.py": "one = 1\n"})
    p.ok("approve", p.task, "--request-changes", "--why", "again")
    for a in (UPA, UPT):
        p.report(a, "COMPLETE", "--work-remaining", "none")
    p.report(REV, "COMPLETE", "--decision", "APPROVED", "--work-remaining", "still need to read the tests")
    refused(p, "advance", p.task, "--to", "VALIDATION", says=f"reviewer {REV} reports work remaining")
    p.report(REV, "COMPLETE", "--decision", "APPROVED", "--work-remaining", "none")
    assert p.go()["to"] == "VALIDATION"


def test_an_agent_added_in_synthesis_is_a_stakeholder_and_owes_requirements(tmp_path: Path) -> None:
    p = P(tmp_path)
    to_synthesis(p)
    sec = "security-reviewer"
    p.ok("agent", "add", p.task, sec, "--why", "touches the login")
    tf = p.task_json()
    assert sec in tf["required_agents"]
    md = (p.root / "task.md").read_text()
    stake = md.split("## Stakeholder Agent Reports", 1)[1].split("\n#", 1)[0]
    assert f"- {sec}: `" in stake
    p.plans([REV, UPA, UPT, sec])
    p.ok("approve", p.task, "--plan")
    refused(p, "advance", p.task, "--to", "IMPLEMENTATION", says=f"agent {sec}'s requirements report")
    p.requirements(sec)
    assert p.go()["to"] == "IMPLEMENTATION"


def test_a_requirements_report_below_the_minimum_size_does_not_count(tmp_path: Path) -> None:
    p = P(tmp_path)
    to_requirements(p)
    for a in (REV, UPA, UPT):
        p.requirements(a)
        p.report(a)
    p.requirements(UPT, "ok\n")
    refused(p, "advance", p.task, says="has 2 bytes, fewer than rules.requirements_min_bytes = 100")
    p.requirements(UPT)
    assert p.go()["to"] == "SYNTHESIS"


def test_the_minimum_size_is_configurable(tmp_path: Path) -> None:
    from tests.protokit import FULL_CONFIG
    p = P(tmp_path, config=FULL_CONFIG + "[rules]\nrequirements_min_bytes = 2\n")
    to_requirements(p)
    for a in (REV, UPA, UPT):
        p.requirements(a, "ok\n")
        p.report(a)
    assert p.go()["to"] == "SYNTHESIS"


def test_implementation_entry_rechecks_reports_and_task_md_sections(tmp_path: Path) -> None:
    p = P(tmp_path)
    to_synthesis(p)
    p.plans([REV, UPA, UPT])
    md = p.root / "task.md"
    text = md.read_text()
    md.write_text(text.replace("## Scope", "## Notes"))
    p.ok("approve", p.task, "--plan")
    refused(p, "advance", p.task, "--to", "IMPLEMENTATION", says="lacks the section(s) Scope")
    md.write_text(text)
    p.ok("approve", p.task, "--plan")
    req = p.root / f"{p.task}-{UPA}-requirements.md"
    req.unlink()
    refused(p, "advance", p.task, "--to", "IMPLEMENTATION", says=f"agent {UPA}'s requirements report")
    p.requirements(UPA)
    assert p.go()["to"] == "IMPLEMENTATION"


def _forge(p: P, to: str) -> None:
    """A legal-looking transition written into task.json by hand (not by spark-git)."""
    path = p.root / "task.json"
    tf = json.loads(path.read_text())
    last = tf["transition_log"][-1]
    tf["transition_log"].append({"from": last["to"], "to": to, "at": "2099-01-01T00:00:00.000000Z", "session_id": "s1", "reason": "x",
                                 "evidence": {}, "protocol": "full", "hash": last["hash"]})
    tf["state"] = to
    path.write_text(json.dumps(tf, indent=2))


def test_a_hand_written_transition_is_refused_by_every_command(tmp_path: Path) -> None:
    p = P(tmp_path)
    to_requirements(p)
    good = (p.root / "task.json").read_bytes()
    _forge(p, "SYNTHESIS")
    for args in (["advance", p.task], ["report", p.task, "--agent", UPA, "--status", "WORKING"], ["agent", "add", p.task, "x-reviewer", "--why", "w"],
                 ["approve", p.task, "--plan"], ["classify", p.task]):
        refused(p, *args, says="does not fit the hash chain")
    # stripping every hash does not make it a pre-chain log: the audit trail recorded chained transitions
    tf = json.loads((p.root / "task.json").read_text())
    for t in tf["transition_log"]:
        t.pop("hash", None)
    (p.root / "task.json").write_text(json.dumps(tf))
    refused(p, "advance", p.task, says="does not carry spark-git's MAC")  # issue 31: the MAC is over the hash
    r = p.spark("--json", "doctor", p.task)
    assert r.returncode == 1 and any("hash chain" in f["problem"] for f in r.json["data"]["findings"]), r
    (p.root / "task.json").write_bytes(good)
    assert p.report(UPA, "WORKING")["data"]["task_state"] == "REQUIREMENTS"  # the untouched log is accepted again


def test_a_task_from_before_the_chain_is_refused_until_a_human_reseals_it(tmp_path: Path) -> None:
    """Issue 31: a log without hashes and MACs is what a forger writes too (the audit trail is a file as
    well), so it is no longer taken as a task from before the chain; `lock break` rebuilds it, MAC'd."""
    p = P(tmp_path)
    for name in ("task.json", "audit-trail.json"):
        data = json.loads((p.root / name).read_text())
        for t in data.get("transition_log", data.get("state_transitions", [])):
            t.pop("hash", None)
            t.pop("mac", None)
        (p.root / name).write_text(json.dumps(data))
    refused(p, "classify", p.task, "--risk", "HIGH", "--why", "test", says="does not carry spark-git's MAC")
    (p.root / "task.json").rename(p.root / "task.json.old")
    p.ok("lock", "break", p.task, "--why", "re-seal a task from before the MAC")
    p.ok("classify", p.task, "--risk", "HIGH", "--why", "test")
    assert p.go()["to"] == "CLASSIFIED"
    log = p.task_json()["transition_log"]
    assert all(t["hash"] and t["mac"] for t in log) and len(log) == 2


def test_a_coordinators_own_commit_blocks_review_until_attributed(tmp_path: Path) -> None:
    p = P(tmp_path)
    walk_to_awaiting(p, {"src/one.py": "one = 1\n"})
    p.ok("approve", p.task, "--request-changes", "--why", "one more")
    p.commit(UPA, {"src/one.py": "one = 2\n"}, "fix")
    p.ok("merge", p.task, "--agent", UPA)
    sha = commit(p.wt(), {"src/two.py": "two = 2\n"}, "quick fix by the coordinator")
    for a in (UPA, UPT):
        p.report(a, "COMPLETE", "--work-remaining", "none")
    p.report(REV, "COMPLETE", "--decision", "APPROVED")
    assert p.go()["to"] == "VALIDATION"
    refused(p, "advance", p.task, "--to", "REVIEW", says=f"commit(s) {sha[:12]} on the task branch are attributed to no agent")
    git(p.wt(), "commit", "--amend", "--no-edit", "--trailer", f"Spark-Agent: {UPA}")
    p.report(REV, "COMPLETE", "--decision", "APPROVED")
    assert p.go()["to"] == "REVIEW"


def test_a_coordinators_commit_made_in_review_does_not_reach_the_change_approval(tmp_path: Path) -> None:
    p = P(tmp_path)
    walk_to_awaiting(p, {"src/one.py": "one = 1\n"})
    p.ok("approve", p.task, "--request-changes", "--why", "one more")
    p.commit(UPA, {"src/one.py": "one = 2\n"}, "fix")
    p.ok("merge", p.task, "--agent", UPA)
    for a in (UPA, UPT):
        p.report(a, "COMPLETE", "--work-remaining", "none")
    p.report(REV, "COMPLETE", "--decision", "APPROVED")
    assert p.go()["to"] == "VALIDATION"
    assert p.go()["to"] == "REVIEW"
    sha = commit(p.wt(), {"src/two.py": "two = 2\n"}, "quick fix by the coordinator, after the build")
    p.report(REV, "COMPLETE", "--decision", "APPROVED")  # the reviewer approves the new head
    refused(p, "advance", p.task, "--to", "AWAITING_USER_APPROVAL", says=f"commit(s) {sha[:12]} on the task branch are attributed to no agent")
    git(p.wt(), "commit", "--amend", "--no-edit", "--trailer", f"Spark-Agent: {UPA}")
    p.report(REV, "COMPLETE", "--decision", "APPROVED")
    assert p.go()["to"] == "AWAITING_USER_APPROVAL"


def test_a_coordinators_commit_does_not_reach_the_change_approval_through_scope_negotiation(tmp_path: Path) -> None:
    p = to_review_with_two_reviewers(tmp_path)
    sha = commit(p.wt(), {"src/two.py": "two = 2\n"}, "quick fix by the coordinator")
    for a in (REV, SEC):
        reject(p, a, "DEFER")
    p.go("SCOPE_NEGOTIATION")
    refused(p, "advance", p.task, "--to", "AWAITING_USER_APPROVAL", says=f"commit(s) {sha[:12]} on the task branch are attributed to no agent")
    git(p.wt(), "commit", "--amend", "--no-edit", "--trailer", f"Spark-Agent: {UPA}")
    assert p.go("AWAITING_USER_APPROVAL")["to"] == "AWAITING_USER_APPROVAL"


def test_a_coordinators_commit_does_not_reach_the_change_approval_in_the_short_variant(tmp_path: Path) -> None:
    p = P(tmp_path, title="Usage docs")
    p.ok("classify", p.task, "--files", "docs/usage.md")
    a = "docs-updater"
    p.to_synthesis_planned([REV, a])
    p.ok("approve", p.task, "--plan")
    p.commit(a, {"docs/usage.md": "# usage\n"}, "usage docs")
    p.ok("merge", p.task, "--agent", a)
    p.report(a, "COMPLETE", "--work-remaining", "none")
    sha = commit(p.wt(), {"docs/more.md": "# more\n"}, "the coordinator's own page")
    refused(p, "advance", p.task, "--to", "AWAITING_USER_APPROVAL", says=f"commit(s) {sha[:12]} on the task branch are attributed to no agent")
    git(p.wt(), "commit", "--amend", "--no-edit", "-m", f"[{a}] the coordinator's page, for the docs-updater")
    assert p.go()["to"] == "AWAITING_USER_APPROVAL"


def test_cleanup_of_a_task_no_agent_worked_on_needs_a_reason(tmp_path: Path) -> None:
    p = P(tmp_path)
    p.ok("classify", p.task, "--risk", "LOW", "--why", "test", "--files", "docs/a.md")
    p.go(), p.go()
    # the agents' requirements arrive, but no agent ever reports: written by the coordinator
    tf = p.task_json()
    for a in tf["agents"]:
        p.requirements(a)
        p.set_status(a, status="COMPLETE")
    p.go()
    p.plans(list(tf["agents"]))
    p.ok("approve", p.task, "--plan")
    for a in tf["agents"]:
        p.set_status(a, status="COMPLETE", task_state="SYNTHESIS", updated_at="2099-01-01T00:00:00.000000Z")
    p.go()
    p.ok("approve", p.task, "--changes")
    p.ok("complete", p.task)
    refused(p, "cleanup", p.task, says="no agent was ever invoked")
    p.ok("cleanup", p.task, "--why", "a one-line typo fix, done by hand")


def test_intermediate_statuses_and_a_pending_decision_are_accepted_but_not_complete(tmp_path: Path) -> None:
    p = P(tmp_path)
    to_requirements(p)
    for s in ("IN_PROGRESS", "WAITING", "MERGING"):
        assert p.report(UPA, s)["data"]["status"]["status"] == s
    assert p.report(REV, "WORKING", "--decision", "PENDING")["data"]["status"]["decision"] == "PENDING"
    for a in (REV, UPA, UPT):
        p.requirements(a)
    p.report(REV)
    p.report(UPT)
    refused(p, "advance", p.task, says=f"agent {UPA} reports MERGING, not COMPLETE")
    p.report(UPA)
    assert p.go()["to"] == "SYNTHESIS"


def test_every_checkpoint_decision_is_in_the_decision_history(tmp_path: Path) -> None:
    p = P(tmp_path)
    to_synthesis(p)
    p.plans([REV, UPA, UPT])
    r = p.ok("approve", p.task, "--plan", "--request-changes", "--why", "the plan misses the migration")
    assert r["data"]["why"] == "the plan misses the migration" and p.state() == "SYNTHESIS"
    refused(p, "advance", p.task, "--to", "IMPLEMENTATION", says="not approved the plan")
    p.ok("approve", p.task, "--plan")
    p.go()
    p.commit(UPA, {"src/one.py": "one = 1\n"}, "the change")
    p.ok("merge", p.task, "--agent", UPA)
    for a in (UPA, UPT):
        p.report(a, "COMPLETE", "--work-remaining", "none")
    p.report(REV, "COMPLETE", "--decision", "APPROVED")
    p.go(), p.go(), p.go()
    p.ok("approve", p.task, "--changes")
    p.ok("approve", p.task, "--request-changes", "--why", "on second thought, rename it")
    kinds = ["plan_rejected", "plan_approved", "approved", "changes_requested"]
    assert [d["decision"] for d in p.task_json()["checkpoint_history"]] == kinds
    assert [d["decision"] for d in p.ok("audit", p.task)["data"]["decisions"]] == kinds
    assert [d["decision"] for d in p.ok("status", p.task)["data"]["tasks"][0]["decisions"]] == kinds


SEC = "security-reviewer"


def to_review_with_two_reviewers(tmp_path: Path, config: str | None = None) -> P:
    from tests.protokit import FULL_CONFIG
    p = P(tmp_path, title="Harden the login", config=FULL_CONFIG + (config or ""))
    p.ok("classify", p.task, "--risk", "HIGH", "--why", "test")
    agents = [REV, UPA, UPT, SEC]
    assert sorted(p.task_json()["agents"]) == sorted(agents)  # "login": 003 adds the security reviewer
    p.go(), p.go()
    for a in agents:
        p.requirements(a)
        p.report(a)
    p.go()
    p.plans(agents)
    p.ok("approve", p.task, "--plan")
    p.go()
    p.commit(UPA, {"src/login.py": "ok = True\n"}, "login")
    p.ok("merge", p.task, "--agent", UPA)
    for a in (UPA, UPT):
        p.report(a, "COMPLETE", "--work-remaining", "none")
    for a in (REV, SEC):
        p.report(a, "COMPLETE", "--decision", "APPROVED")
    p.go(), p.go()
    assert p.state() == "REVIEW"
    return p


def reject(p: P, agent: str, scope: str, blocking: str | None = None) -> None:
    p.report(agent, "COMPLETE", "--decision", "REJECTED", "--feedback", "no", "--deferrable", f"{agent} later", "--scope", scope,
             *(["--blocking", blocking] if blocking else []))


def test_the_architecture_reviewer_has_the_final_say_in_scope_negotiation(tmp_path: Path) -> None:
    p = to_review_with_two_reviewers(tmp_path, '[scope]\nveto = []\n')
    reject(p, REV, "DEFER")
    reject(p, SEC, "RESOLVE_NOW", "rotate the key")
    p.go("SCOPE_NEGOTIATION")
    refused(p, "advance", p.task, "--to", "SYNTHESIS", says=f"reviewer {REV} has the final say and decided DEFER")
    d = p.go("AWAITING_USER_APPROVAL")
    assert d["evidence"]["final_say"] == REV
    assert "rotate the key (BLOCKING for security-reviewer; deferred by architecture-reviewer" in (p.root / "follow-ups.md").read_text()
    p.ok("approve", p.task, "--changes")
    p.ok("complete", p.task)  # the rejections settled in SCOPE_NEGOTIATION do not stop it


def test_the_security_reviewer_has_a_veto(tmp_path: Path) -> None:
    p = to_review_with_two_reviewers(tmp_path)
    reject(p, REV, "DEFER")
    reject(p, SEC, "RESOLVE_NOW", "rotate the key")
    p.go("SCOPE_NEGOTIATION")
    refused(p, "advance", p.task, "--to", "AWAITING_USER_APPROVAL", says=f"reviewer {SEC} decided RESOLVE_NOW, not DEFER (a veto")
    assert p.go("SYNTHESIS")["to"] == "SYNTHESIS"


def test_the_way_back_into_implementation_rechecks_too(tmp_path: Path) -> None:
    p = to_review_with_two_reviewers(tmp_path)
    reject(p, REV, "RESOLVE_NOW")
    (p.root / f"{p.task}-{UPT}-requirements.md").write_text("tiny\n")
    refused(p, "advance", p.task, "--to", "IMPLEMENTATION", says=f"agent {UPT}'s requirements report")
    p.requirements(UPT)
    assert p.go("IMPLEMENTATION")["to"] == "IMPLEMENTATION"
