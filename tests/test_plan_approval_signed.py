"""A plan approval counts only as the human's signature (issue 23): a `plan_approval` hand-written into
task.json, copied from another task, edited, or signed with a key that is not an allowed approver's
(an agent's own) takes no task from SYNTHESIS to IMPLEMENTATION, nor lets an agent merge in the short
variant's SYNTHESIS. Each refusal changes nothing on disk or in git and names the command that would
be accepted; `doctor`, `audit` and `status` report the record; the human's real `approve --plan` still goes through."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from fixtures.repo import git, share_records_key, spark

from tests.protokit import FULL_CONFIG, P

REV, UP = "rev-reviewer", "up-updater"
CONFIG = FULL_CONFIG + f"""[risk]
replace = ["agents"]
[risk.agents]
HIGH = ["{REV}", "{UP}"]
MEDIUM = ["{REV}", "{UP}"]
LOW = ["{REV}", "{UP}"]
"""
FAKE_SIGNATURE = "-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAg\n-----END SSH SIGNATURE-----\n"


def _planned(tmp: Path, task: str = "t1", repo: Path | None = None, files: str = "src/app.py") -> P:
    """A task in SYNTHESIS with every agent's requirements and plan: only the plan approval is missing."""
    p = P(tmp, task, config=CONFIG, repo=repo)
    p.ok("classify", task, "--files", files)
    p.to_synthesis_planned([REV, UP])
    assert p.state() == "SYNTHESIS"
    return p


def _digest(p: P) -> str:
    return hashlib.sha256((p.root / "task.md").read_bytes()).hexdigest()


def _world(p: P) -> tuple[bytes, bytes, str]:
    """task.json, the audit trail and every ref: what a refusal must leave as it was."""
    return (*p.snapshot(), git(p.repo, "for-each-ref", "--format=%(objectname) %(refname)"))


def _forge(p: P, pa: dict | None) -> None:
    tj = p.task_json()
    tj["plan_approval"] = pa
    (p.root / "task.json").write_text(json.dumps(tj, indent=2))


def _advance_refused(p: P, needle: str) -> None:
    before = _world(p)
    r = p.advance("IMPLEMENTATION")
    assert r.returncode == 3, r  # core/errors.py: BLOCKED
    unmet = r.json["data"]["unmet"]
    assert any("plan approval does not count" in u and needle in u for u in unmet), unmet
    assert f"spark-git approve {p.task} --plan" in r.json["next"], r.json["next"]
    assert _world(p) == before and p.state() == "SYNTHESIS"


def test_forged_plan_approvals_are_refused_and_the_real_one_passes(tmp_path: Path) -> None:
    p = _planned(tmp_path / "a")
    other = _planned(tmp_path / "b", "t2", repo=p.repo)
    assert other.spark("approve", "t2", "--plan").returncode == 0
    real = other.task_json()["plan_approval"]
    assert json.loads(real["signed"])["task"] == "t2"
    mine = _digest(p)
    hand = {"type": "plan", "approved": True, "approved_by": "me", "approved_at": real["approved_at"], "task_md_sha256": mine,
            "commit_sha": p.head(), "presented_at": real["presented_at"]}
    rec = {**json.loads(real["signed"]), "task": "t1", "task_md_sha256": mine}
    forgeries = {
        "not signed": hand,  # what passed SYNTHESIS → IMPLEMENTATION before: checked to fail before the fix
        "not an approval of the plan of t1": {**real, "task_md_sha256": mine},  # t2's signed approval, its digest set to t1's
        "signature does not verify": {**real, "task_md_sha256": mine, "signed": json.dumps(rec)},  # t2's signature, the record edited to t1
    }
    forgeries["signature does not verify "] = {**forgeries["signature does not verify"], "signature": FAKE_SIGNATURE}  # a made-up signature
    for needle, pa in forgeries.items():
        _forge(p, pa)
        _advance_refused(p, needle.strip())
    doc = p.spark("--json", "doctor", "t1")
    assert doc.returncode == 1, doc  # a problem remains: the human's to repair
    findings = [f for f in doc.json["data"]["findings"] if f["kind"] == "approval-invalid"]
    assert len(findings) == 1 and findings[0]["details"]["approval"] == "plan" and "spark-git approve t1 --plan" in findings[0]["repair"], findings
    smells = p.ok("audit", "t1")["data"]["smells"]
    assert any("approval of the plan does not count" in s for s in smells), smells
    view = next(t for t in p.ok("status", "t1")["data"]["tasks"] if t["task"] == "t1")
    blockers = {s["state"]: s["blockers"] for s in view["next_states"]}
    assert any("plan approval does not count" in b for b in blockers["IMPLEMENTATION"]), blockers
    # The human's own approval goes through, over the forged record, and counts.
    assert p.spark("--json", "approve", "t1", "--plan").returncode == 0
    assert p.go()["to"] == "IMPLEMENTATION"
    assert not [f for f in p.ok("doctor", "t1")["data"]["findings"] if f["kind"] == "approval-invalid"]


def test_a_signed_plan_of_an_earlier_task_md_does_not_count(tmp_path: Path) -> None:
    p = _planned(tmp_path)
    assert p.spark("approve", "t1", "--plan").returncode == 0
    signed = p.task_json()["plan_approval"]
    md = p.root / "task.md"
    md.write_text(md.read_text() + "\n## Implementation Plan: up-updater\n\nAlso delete the tests.\n")
    _forge(p, {**signed, "task_md_sha256": _digest(p)})  # the digest moved along, the signature did not
    _advance_refused(p, "the signature is for task.md with sha256")


def test_an_agent_signing_with_its_own_key_approves_nothing(tmp_path: Path) -> None:
    """The agent's boundary keeps it from the human's state directory, so `approve --plan` run by the
    agent (stdin a terminal or not) signs with a key of its own, which no allowed-signers file lists."""
    p = _planned(tmp_path)
    agent = dict(os.environ, SPARK_SESSION_ID="s1", XDG_STATE_HOME=str(tmp_path / "agent-state"))
    share_records_key(tmp_path / "agent-state")  # about the approval key: the records' MAC would refuse it earlier
    assert spark(p.repo, "approve", "t1", "--plan", env=agent).returncode == 0
    assert (tmp_path / "agent-state" / "spark-git" / "approval_ed25519").is_file()
    _advance_refused(p, "signature does not verify")
    assert p.spark("--json", "approve", "t1", "--plan").returncode == 0  # the human's: not "already approved"
    assert p.go()["to"] == "IMPLEMENTATION"


def test_short_variant_merge_needs_a_verified_plan_approval(tmp_path: Path) -> None:
    short = FULL_CONFIG + "[risk]\nreplace = [\"agents\"]\n[risk.agents]\nLOW = [\"architecture-reviewer\", \"docs-updater\"]\n"
    p = P(tmp_path, config=short)
    p.ok("classify", "t1", "--files", "README.md")
    p.to_synthesis_planned(["architecture-reviewer", "docs-updater"])
    assert p.task_json()["variant"] == "short", p.task_json()["variant"]
    p.commit("docs-updater", {"README.md": "# demo, documented\n"}, "document")
    _forge(p, {"type": "plan", "approved": True, "approved_by": "me", "task_md_sha256": _digest(p), "commit_sha": p.head()})
    before = _world(p)
    r = p.spark("--json", "merge", "t1", "--agent", "docs-updater")
    assert r.returncode == 3 and any("plan approval does not count" in u for u in r.json["data"]["unmet"]), r
    assert "spark-git approve t1 --plan" in r.json["next"] and _world(p) == before
    assert p.spark("--json", "approve", "t1", "--plan").returncode == 0
    assert p.spark("--json", "merge", "t1", "--agent", "docs-updater").returncode == 0


def test_a_shared_task_keeps_its_approver_when_the_next_test_has_another_home(tmp_path: Path, monkeypatch) -> None:
    """Module-scoped worlds (test_protocol_guards) hand a task to later tests, each sealed in a HOME of
    its own: the task keeps the state directory of the human who made it (tests/protokit.P), so the
    plan approval that human signed still verifies."""
    p = _planned(tmp_path)
    assert p.spark("approve", "t1", "--plan").returncode == 0
    later = tmp_path / "next-test-home"
    monkeypatch.setenv("HOME", str(later))
    monkeypatch.setenv("XDG_STATE_HOME", str(later / ".local" / "state"))
    assert p.go()["to"] == "IMPLEMENTATION"
