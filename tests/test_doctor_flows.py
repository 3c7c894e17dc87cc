"""`doctor` is exact (issue 24, defect 3): silent on states the documented flows produce; `--fix` and
`--fix --dry-run` agree on the findings and the exit code."""

from __future__ import annotations

from pathlib import Path

from fixtures.repo import git

from tests.mergekit import PY, Task, config


def _doctor(p: Task, *args: str) -> tuple[int, list[tuple[str, str]]]:
    r = p.spark("--json", "doctor", *args)
    return r.returncode, [(f["kind"], f["where"]) for f in r.json["data"]["findings"]]


def _two_tasks(tmp_path: Path) -> tuple[Task, Task]:
    """Two light-protocol tasks from the same main, each with agent a1 editing src/app.py's line 2."""
    cfg = config(build=[PY, "-c", "pass"], final=[PY, "-c", "pass"], non_interactive=True)
    t1 = Task(tmp_path, ["a1"], cfg)
    t2 = Task.__new__(Task)
    t2.repo, t2.task, t2.root = t1.repo, "t2", t1.root.parent / "t2"
    assert t2.spark("start", "t2", "--agents", "a1").returncode == 0
    for t in (t1, t2):
        t.commit("a1", {"src/app.py": f"line1\n{t.task} was here\nline3\n"}, f"{t.task}: line 2")
        assert t.merge("a1").returncode == 0
        assert t.spark("approve", t.task, "--changes").returncode == 0
    return t1, t2


def test_doctor_is_silent_after_the_conflict_round_trip_and_fix_agrees_with_dry_run(tmp_path: Path) -> None:
    # update → update --leave-conflict → resolve → update → re-approve → complete, as docs/merging.md says
    t1, t2 = _two_tasks(tmp_path)
    assert t1.spark("complete", "t1").returncode == 0
    assert t2.spark("update", "t2").returncode == 3
    assert t2.spark("update", "t2", "--leave-conflict").returncode == 3
    (t2.wt() / "src/app.py").write_text("line1\nt1 was here\nt2 was here\nline3\n")
    git(t2.wt(), "add", "src/app.py")
    git(t2.wt(), "-c", "core.editor=true", "rebase", "--continue")
    r = t2.spark("--json", "update", "t2")
    assert r.returncode == 0 and r.json["next"] == ["spark-git approve t2 --changes"], r
    assert t2.spark("approve", "t2", "--changes").returncode == 0
    assert t2.spark("complete", "t2").returncode == 0
    assert _doctor(t2) == (0, [])
    assert _doctor(t2, "--fix", "--dry-run") == _doctor(t2, "--fix") == (0, [])
    for t in (t1, t2):
        assert t.spark("cleanup", t.task).returncode == 0
    assert _doctor(t2) == (0, [])


def test_fix_and_dry_run_agree_on_a_finding_only_a_human_can_settle(tmp_path: Path) -> None:
    _t1, t2 = _two_tasks(tmp_path)
    git(t2.repo, "update-ref", "refs/heads/t2", "main")  # a hand rewrite: last merges not in the task branch
    dry, fix = _doctor(t2, "--fix", "--dry-run"), _doctor(t2, "--fix")
    assert dry == fix and dry[0] != 0 and dry[1], (dry, fix)


def test_doctor_is_silent_after_each_everyday_flow(tmp_path: Path) -> None:
    """sync after an agents' conflict, merge --all, a batch through the queue, a refused merge,
    abandon and archive restore, cleanup: at rest after each, doctor finds nothing."""
    cfg = config(build=[PY, "-c", "import os, sys; sys.exit(1 if os.path.exists('broken.txt') else 0)"], final=[PY, "-c", "pass"], non_interactive=True)
    t = Task(tmp_path, ["a1", "a2"], cfg)
    t.commit("a1", {"src/app.py": "line1\nA1\nline3\n"}, "a1: line 2")
    t.commit("a2", {"src/app.py": "line1\nA2\nline3\n"}, "a2: line 2")
    assert t.merge("a1").returncode == 0 and t.merge("a2").returncode == 3
    assert _doctor(t) == (0, [])
    assert t.spark("sync", "t1", "--agent", "a2").returncode == 3
    (t.wt("a2") / "src/app.py").write_text("line1\nA1\nA2\nline3\n")
    git(t.wt("a2"), "add", "src/app.py")
    git(t.wt("a2"), "-c", "core.editor=true", "rebase", "--continue")
    assert t.spark("merge", "t1", "--all").returncode == 0
    assert _doctor(t) == (0, [])
    t.commit("a1", {"broken.txt": "x\n"}, "a1: breaks the build")
    assert t.merge("a1").returncode == 1  # refused: changes nothing
    assert _doctor(t) == (0, [])
    git(t.wt("a1"), "reset", "-q", "--hard", "HEAD~1")
    t2 = Task.__new__(Task)
    t2.repo, t2.task, t2.root = t.repo, "t2", t.root.parent / "t2"
    assert t2.spark("start", "t2", "--agents", "b1").returncode == 0
    t2.commit("b1", {"b.txt": "b\n"}, "b1: b")
    assert t2.merge("b1").returncode == 0
    for x in (t, t2):
        assert x.spark("approve", x.task, "--changes").returncode == 0
        assert x.spark("complete", x.task, "--no-wait").returncode == 0
    assert t.spark("queue", "run").returncode == 0
    assert _doctor(t) == (0, [])
    t3 = Task.__new__(Task)
    t3.repo, t3.task, t3.root = t.repo, "t3", t.root.parent / "t3"
    assert t3.spark("start", "t3", "--agents", "c1").returncode == 0
    t3.commit("c1", {"c.txt": "c\n"}, "c1: c")
    assert t3.spark("abandon", "t3", "--why", "not needed").returncode == 0
    (ref,) = [ln.split()[0] for ln in t3.spark("archive", "list", "t3").stdout.splitlines() if "refs/spark/archive/t3/" in ln][:1]
    assert t3.spark("archive", "restore", ref, "--branch", "rescued").returncode == 0
    for x in (t, t2):
        assert x.spark("cleanup", x.task).returncode == 0
    assert _doctor(t) == (0, [])


def test_doctor_is_silent_after_each_documented_crash_recovery(tmp_path: Path) -> None:
    """docs/recovery.md and merging.md's *Crash safety*: a merge, a landing and an update killed at
    their fault points, then the same command run again: doctor finds nothing to report."""
    t1, t2 = _two_tasks(tmp_path)
    t3 = Task.__new__(Task)
    t3.repo, t3.task, t3.root = t1.repo, "t3", t1.root.parent / "t3"
    assert t3.spark("start", "t3", "--agents", "c1").returncode == 0
    t3.commit("c1", {"c.txt": "c\n"}, "c")
    assert t3.merge("c1").returncode == 0
    t1.commit("a1", {"more.txt": "m\n"}, "more")
    assert t1.spark("merge", "t1", "--agent", "a1", env={"SPARK_FAULT_KILL_AT": "merge-after-stamp"}).returncode == -9
    assert t1.merge("a1").returncode == 0
    assert _doctor(t1) == (0, [])
    assert t1.spark("approve", "t1", "--changes").returncode == 0
    assert t1.spark("complete", "t1", env={"SPARK_FAULT_KILL_AT": "complete-after-ff"}).returncode == -9
    assert t1.spark("complete", "t1").returncode == 0
    assert _doctor(t1) == (0, [])
    assert t3.spark("update", "t3", env={"SPARK_FAULT_KILL_AT": "update-after-rebase"}).returncode == -9
    assert t3.spark("update", "t3").returncode == 0
    assert _doctor(t1) == (0, [])
    assert t3.spark("approve", "t3", "--changes").returncode == 0
    assert t3.spark("complete", "t3").returncode == 0
    assert t2.spark("abandon", "t2", "--why", "superseded").returncode == 0
    for t in (t1, t3):
        assert t.spark("cleanup", t.task).returncode == 0
    assert _doctor(t1) == (0, [])
