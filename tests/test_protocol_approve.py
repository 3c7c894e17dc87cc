"""Plan approval (`approve --plan`): refused for a non-terminal caller, recorded through a terminal
(driven here by a pseudo-terminal), bound to task.md's content."""

from __future__ import annotations

from pathlib import Path

from tests.protokit import P
from tests.ptyutil import answer_on_pty

NO_AUTO = """[gates]
build = ["sh", "-c", "true"]
"""


def _in_synthesis(tmp_path: Path) -> P:
    p = P(tmp_path, config=NO_AUTO)
    p.ok("classify", p.task, "--files", "README.md")
    p.go(), p.go()
    agents = ["architecture-reviewer", "docs-updater"]  # LOW: 003's mandatory reviewer and the updater
    for a in agents:
        p.requirements(a)
        p.report(a)
    p.go()
    p.plans(agents)
    assert p.state() == "SYNTHESIS"
    return p


def test_plan_approval_needs_a_terminal(tmp_path: Path) -> None:
    p = _in_synthesis(tmp_path)
    before = p.snapshot()
    r = p.spark("--json", "approve", p.task, "--plan", input="t1\n")  # a pipe, not a terminal
    assert r.returncode == 3 and "needs a human at a terminal" in r.json["summary"]
    assert p.snapshot() == before
    r = p.advance()  # LOW docs task: SYNTHESIS → AWAITING_USER_APPROVAL needs the plan approval
    assert r.returncode == 3 and any("not approved the plan" in u for u in r.json["data"]["unmet"])


def test_plan_approval_through_a_pseudo_terminal(tmp_path: Path) -> None:
    p = _in_synthesis(tmp_path)
    before = p.snapshot()
    rc, out = answer_on_pty(p.repo, ["approve", p.task, "--plan"], b"not-it\n")
    assert rc == 3 and "did not match" in out and p.snapshot() == before
    rc, out = answer_on_pty(p.repo, ["approve", p.task, "--plan"], b"t1\n")
    assert rc == 0, out
    assert "Approve the plan of task 't1'" in out
    pa = p.task_json()["plan_approval"]
    import hashlib

    assert pa["approved"] is True and pa["via"] == "terminal" and pa["type"] == "plan"
    assert pa["task_md_sha256"] == hashlib.sha256((p.root / "task.md").read_bytes()).hexdigest()
    r = p.advance()  # still blocked (the updater has not reported its work), but not by the plan
    assert r.returncode == 3 and not any("plan" in u for u in r.json["data"]["unmet"]), r
