"""Agent reports: status.json contents, rounds, review sha, audit agent_invocations; status flags."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import git

from tests.protokit import P

CFG = """stale_minutes = 45
[approval]
allow_non_interactive = true
"""


def test_report_writes_status_json_and_agent_invocations(tmp_path: Path) -> None:
    p = P(tmp_path, agents="code-reviewer,code-updater", config=CFG)
    head = p.head()
    d = p.report("code-reviewer", "COMPLETE", "--decision", "approved", "--feedback", "fine")["data"]
    st = json.loads(p.status_file("code-reviewer").read_text())
    assert st == d["status"]
    assert (st["agent"], st["task"], st["status"], st["decision"], st["round"], st["last_review_sha"], st["feedback"], st["task_state"]) == (
        "code-reviewer", "t1", "COMPLETE", "APPROVED", 1, head, "fine", "INIT")
    p.report("code-updater", "WORKING", "--report", "notes/req.md", "--work-remaining", "everything")
    st = json.loads(p.status_file("code-updater").read_text())
    assert st["round"] == 0 and st["last_review_sha"] is None and st["report_path"] == str(p.repo / "notes/req.md")
    p.report("code-updater", "COMPLETE", "--work-remaining", "none")
    st = json.loads(p.status_file("code-updater").read_text())
    assert st["round"] == 1 and st["report_path"] == str(p.repo / "notes/req.md")  # kept from the earlier report
    trail = json.loads((p.root / "audit-trail.json").read_text())
    inv = trail["agent_invocations"]
    assert [(i["agent"], i["status"], i["decision"]) for i in inv] == [
        ("code-reviewer", "COMPLETE", "APPROVED"), ("code-updater", "WORKING", None), ("code-updater", "COMPLETE", None)]
    assert inv[0]["working_dir"] == str(p.wt("code-reviewer")) and inv[0]["task_head"] == head
    au = p.ok("audit", p.task)["data"]
    agents = {a["agent"]: a for a in au["agents"]}
    assert agents["code-updater"]["reports"] == 2 and agents["code-updater"]["last_status"] == "COMPLETE"
    assert agents["code-updater"]["first_report"] == inv[1]["at"] and agents["code-updater"]["last_report"] == inv[2]["at"]


def test_bad_reports_are_refused_and_change_nothing(tmp_path: Path) -> None:
    p = P(tmp_path, agents="code-reviewer", config=CFG)
    before = (*p.snapshot(), p.status_file("code-reviewer").read_bytes())
    for args, text in [
        (["--agent", "code-reviewer", "--status", "DONE"], "bad --status"),
        (["--agent", "code-reviewer", "--status", "WORKING", "--decision", "APPROVED"], "goes with --status COMPLETE"),
        (["--agent", "code-reviewer", "--status", "COMPLETE", "--decision", "REJECTED"], "needs --feedback"),
        (["--agent", "code-reviewer", "--status", "COMPLETE", "--decision", "MAYBE"], "bad --decision"),
        (["--agent", "nobody", "--status", "COMPLETE"], "has no agent 'nobody'"),
        (["--agent", "code-reviewer", "--status", "COMPLETE", "--scope", "LATER"], "bad --scope"),
    ]:
        r = p.spark("--json", "report", p.task, *args)
        assert r.returncode == 2 and text in r.stdout, r
    r = p.spark("--json", "report", p.task, "--agent", "code-reviewer", "--status", "COMPLETE", session="other")
    assert r.returncode == 3
    assert (*p.snapshot(), p.status_file("code-reviewer").read_bytes()) == before


def test_status_flags_agents_and_shows_next_states(tmp_path: Path) -> None:
    p = P(tmp_path, agents="a-reviewer,b-updater,c-updater,d-updater", config=CFG)
    p.report("b-updater", "ERROR", "--feedback", "cannot import numpy")
    p.report("c-updater", "WORKING")
    p.report("d-updater", "WORKING")
    old = "2026-01-01T00:00:00.000000Z"
    p.set_status("c-updater", updated_at=old)  # an hour-old WORKING report, without waiting an hour
    t = p.ok("status", p.task)["data"]["tasks"][0]
    flags = {a["name"]: a["flags"] for a in t["agents"]}
    assert flags["a-reviewer"] == ["never reported"]
    assert flags["b-updater"] == ["ERROR: cannot import numpy"]
    assert len(flags["c-updater"]) == 1 and flags["c-updater"][0].startswith("WORKING without an update for")
    assert flags["d-updater"] == []
    assert [n["state"] for n in t["next_states"]] == ["CLASSIFIED"]
    assert any("spark-git classify t1" in b for b in t["next_states"][0]["blockers"])
    r = p.spark("status", p.task)
    assert r.returncode == 0
    for text in ("never reported: a-reviewer", "b-updater: ERROR: cannot import numpy", "c-updater: WORKING without an update",
                 "next: CLASSIFIED blocked by:", "risk level and agent set are not decided"):
        assert text in r.stdout, r.stdout
    p.ok("classify", p.task, "--files", "README.md")
    r = p.spark("status", p.task)
    assert "next: CLASSIFIED ready (spark-git advance t1 --to CLASSIFIED)" in r.stdout, r.stdout


def test_stale_minutes_is_configurable(tmp_path: Path) -> None:
    p = P(tmp_path, agents="c-updater", config="stale_minutes = 100000000\n")
    p.report("c-updater", "WORKING")
    p.set_status("c-updater", updated_at="2026-01-01T00:00:00.000000Z")
    t = p.ok("status", p.task)["data"]["tasks"][0]
    assert t["agents"][0]["flags"] == []
    assert git(p.repo, "rev-parse", "t1") == git(p.repo, "rev-parse", "main")
