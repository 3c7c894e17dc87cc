"""`approve --changes` shows what is approved before asking: the commits (agent, subject), a diffstat
against the base, the last gate results, the reviewers' decisions and the open flags; --json carries
the same data (`data.presented`)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.mergekit import PY, Task, config
from tests.ptyutil import answer_on_pty

OK_GATE = [PY, "-c", "pass"]


def _reviewed(tmp_path: Path, **cfg) -> Task:
    t = Task(tmp_path, ["coder", "docs-reviewer"], config(build=OK_GATE, **cfg))
    t.commit("coder", {"src/app.py": "line1\nchanged\nline3\nline4\n"}, "[coder] change app")
    t.commit("coder", {"notes.txt": "n\n"}, "[coder] add notes")
    assert t.merge("coder").returncode == 0
    r = t.spark("report", "t1", "--agent", "docs-reviewer", "--status", "COMPLETE", "--decision", "APPROVED")
    assert r.returncode == 0, r
    return t


def test_json_carries_commits_diffstat_gates_reviewers_and_flags(tmp_path: Path) -> None:
    t = _reviewed(tmp_path, non_interactive=True)
    head = t.head()
    t.commit("coder", {"later.txt": "l\n"}, "[coder] not merged yet")  # an open flag: work not in what is approved
    r = t.spark("--json", "approve", "t1", "--changes")
    assert r.returncode == 0, r
    p = r.json["data"]["presented"]
    assert p["commit_sha"] == head and p["base_branch"] == "main"
    assert [(c["agent"], c["subject"]) for c in p["commits"]] == [("coder", "[coder] add notes"), ("coder", "[coder] change app")]
    assert {f["path"]: (f["added"], f["removed"]) for f in p["files"]} == {"src/app.py": (2, 1), "notes.txt": (1, 0)}
    assert (p["added"], p["removed"]) == (3, 1)
    (gate,) = p["gates"]
    assert (gate["gate"], gate["result"], gate["on_this_commit"], gate["agent"]) == ("build", "passed", True, "coder")
    (rev,) = p["reviewers"]
    assert (rev["agent"], rev["decision"], rev["current"]) == ("docs-reviewer", "APPROVED", True)
    assert p["flags"] == ["agent coder has commits on task-t1-agent-coder that are not in what you approve"]


def test_stale_review_and_failed_gate_are_flagged(tmp_path: Path) -> None:
    t = _reviewed(tmp_path, non_interactive=True)
    t.commit("coder", {"more.txt": "m\n"}, "[coder] more")
    assert t.merge("coder").returncode == 0
    r = t.spark("--json", "approve", "t1", "--changes")
    flags = r.json["data"]["presented"]["flags"]
    assert any(f.startswith("reviewer docs-reviewer approved ") for f in flags), flags


def test_terminal_shows_it_all_before_the_question(tmp_path: Path) -> None:
    t = _reviewed(tmp_path)  # allow_non_interactive is false: the terminal path
    rc, out = answer_on_pty(t.repo, ["approve", "t1", "--changes"], b"t1\n")
    assert rc == 0, out
    shown = re.sub(r"\x1b\[[0-9;]*m", "", out[: out.index("Type the task name")])
    for expected in ("2 commits on main", "[coder] change app", "[coder] add notes", "2 files changed", "src/app.py",
                     "build", "passed on this commit", "docs-reviewer: APPROVED for this commit", "open flags: none"):
        assert expected in shown, (expected, out)
    assert t.task_json()["checkpoint"]["via"] == "terminal"


def test_human_output_without_a_terminal_draws_it_in_the_result(tmp_path: Path) -> None:
    t = _reviewed(tmp_path, non_interactive=True)
    r = t.spark("approve", "t1", "--changes")
    assert r.returncode == 0, r
    assert "2 commits on main" in r.stdout and "docs-reviewer: APPROVED" in r.stdout and r.stderr == ""


def test_an_agent_reporting_an_error_is_flagged(tmp_path: Path) -> None:
    t = _reviewed(tmp_path, non_interactive=True)
    r = t.spark("report", "t1", "--agent", "coder", "--status", "ERROR", "--feedback", "cannot run the migration")
    assert r.returncode == 0, r
    flags = t.spark("--json", "approve", "t1", "--changes").json["data"]["presented"]["flags"]
    assert "agent coder reports ERROR: cannot run the migration" in flags, flags


def test_request_changes_on_a_terminal_shows_what_is_sent_back(tmp_path: Path) -> None:
    t = _reviewed(tmp_path)
    rc, out = answer_on_pty(t.repo, ["approve", "t1", "--request-changes", "--why", "needs tests"], b"t1\n")
    assert rc == 0, out
    shown = re.sub(r"\x1b\[[0-9;]*m", "", out[: out.index("Type the task name")])
    assert "What you send back" in shown and "[coder] change app" in shown and "2 files changed" in shown, out


def test_a_later_refused_merge_of_another_agent_puts_no_false_flag_on_the_head(tmp_path: Path) -> None:
    # Issue 24, defect 6: "no passing build gate on <head>" and "the last build gate failed" were shown
    # although the head passed; only a2's merge, which changed nothing, failed afterwards.
    gate = [PY, "-c", "import os, sys; sys.exit(1 if os.path.exists('bad.txt') else 0)"]
    t = Task(tmp_path, ["a1", "a2"], config(build=gate, non_interactive=True))
    t.commit("a1", {"a.txt": "a\n"}, "[a1] a")
    assert t.merge("a1").returncode == 0
    head = t.head()
    t.commit("a2", {"bad.txt": "x\n"}, "[a2] breaks the build")
    assert t.merge("a2").returncode == 1
    r = t.spark("--json", "approve", "t1", "--changes")
    assert r.returncode == 0, r
    p = r.json["data"]["presented"]
    (g,) = p["gates"]
    assert (g["result"], g["commit"], g["on_this_commit"]) == ("passed", head, True), g
    assert not [f for f in p["flags"] if "gate" in f], p["flags"]
    assert p["flags"] == ["agent a2 has commits on task-t1-agent-a2 that are not in what you approve"], p["flags"]
