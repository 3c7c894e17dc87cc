"""`spark-git approve --changes`: refused without a terminal, recorded when the config allows it, and
the terminal path driven through a real pseudo-terminal."""

from __future__ import annotations

from pathlib import Path

from fixtures.repo import git

from tests.mergekit import PY, Task, config
from tests.ptyutil import answer_on_pty

OK_GATE = [PY, "-c", "pass"]


def _landed(tmp_path: Path, **cfg) -> Task:
    t = Task(tmp_path, ["a1"], config(build=OK_GATE, **cfg))
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    assert t.merge("a1").returncode == 0
    return t


def test_non_terminal_caller_is_refused_and_nothing_recorded(tmp_path: Path) -> None:
    t = _landed(tmp_path)
    before = (t.root / "task.json").read_bytes()
    r = t.spark("--json", "approve", "t1", "--changes", input="t1\n")  # piped stdin: not a terminal
    assert r.returncode == 3, r
    assert "terminal" in r.json["summary"] and "allow_non_interactive" in r.json["data"]["hint"]
    assert (t.root / "task.json").read_bytes() == before
    assert not any(n["kind"] == "approval" for n in t.notes(t.head()))


def test_allow_non_interactive_records_approval(tmp_path: Path) -> None:
    t = _landed(tmp_path, non_interactive=True)
    head = t.head()
    r = t.spark("--json", "approve", "t1", "--changes", session="human-1")  # not the owner: fine
    assert r.returncode == 0, r
    cp = t.task_json()["checkpoint"]
    assert cp["type"] == "changes" and cp["commit_sha"] == head and cp["approved"] is True
    assert cp["presented_at"] and cp["approved_at"] and cp["via"] == "non-interactive" and "session human-1" in cp["approved_by"]
    note = [n for n in t.notes(head) if n["kind"] == "approval"]
    assert len(note) == 1 and note[0]["via"] == "non-interactive" and note[0]["what"] == "changes"
    assert t.audit()["events"][-1]["kind"] == "approved"


def test_approve_given_sha_and_bad_sha(tmp_path: Path) -> None:
    t = _landed(tmp_path, non_interactive=True)
    first = t.head()
    t.commit("a1", {"y.txt": "y\n"}, "[a1] y")
    assert t.merge("a1").returncode == 0
    r = t.spark("--json", "approve", "t1", "--changes", "--sha", first)
    assert r.returncode == 0 and t.task_json()["checkpoint"]["commit_sha"] == first, r
    assert r.json["next"] == ["spark-git status t1"]  # complete lands the head, which this approval does not cover
    before = (t.root / "task.json").read_bytes()
    r = t.spark("--json", "approve", "t1", "--changes", "--sha", "nonsense")
    assert r.returncode == 2, r
    r = t.spark("--json", "approve", "t1", "--changes", "--sha", git(t.repo, "rev-parse", "main"))
    assert r.returncode == 0  # the base commit is on the task branch (an ancestor): allowed
    r = t.spark("--json", "approve", "t1")
    assert r.returncode == 2 and "--changes" in r.json["summary"]
    assert (t.root / "task.json").read_bytes() != before


def test_terminal_path_through_a_pseudo_terminal(tmp_path: Path) -> None:
    t = _landed(tmp_path)  # allow_non_interactive is false: only the terminal path can approve
    head = t.head()
    before = (t.root / "task.json").read_bytes()
    rc, out = answer_on_pty(t.repo, ["approve", "t1", "--changes"], b"wrong-name\n")
    assert rc == 3, out
    assert "did not match" in out and (t.root / "task.json").read_bytes() == before
    rc, out = answer_on_pty(t.repo, ["approve", "t1", "--changes"], b"t1\n")
    assert rc == 0, out
    cp = t.task_json()["checkpoint"]
    assert cp["commit_sha"] == head and cp["approved"] is True and cp["via"] == "terminal"
    assert head[:12] in out
