"""`start` killed (SIGKILL) part-way: a second `start` by the owner completes it, anyone else is exit 3
naming the owner, state files always parse, and nothing is left half-done silently.

The kill points come from spark_git.faults: SPARK_FAULT_KILL_AFTER_GIT=N (right after the N-th git
command) for every N until `start` runs to the end, which covers: before the lock, right after it,
after each branch creation and between worktree adds; and SPARK_FAULT_KILL_AT=start-after-lock.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
from pathlib import Path

from fixtures.repo import git, snapshot

AGENTS = ("a1", "a2")


def task_branches(repo: Path, task: str) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/")
    names = {task, *(f"task-{task}-agent-{a}" for a in AGENTS)}
    return {b: sha for b, sha in (ln.split(" ") for ln in out.splitlines()) if b in names}


def registered(repo: Path, task_dir: Path) -> dict[str, dict[str, str]]:
    res = {}
    for block in git(repo, "worktree", "list", "--porcelain").split("\n\n"):
        wt = dict(line.partition(" ")[::2] for line in block.splitlines())
        if wt["worktree"].startswith(str(task_dir) + os.sep):
            res[wt["worktree"]] = wt
    return res


def assert_files_parse(task_dir: Path) -> None:
    if not task_dir.exists():
        return
    for p in task_dir.rglob("*"):
        if "code" in p.relative_to(task_dir).parts:
            continue
        assert ".tmp-" not in p.name, f"temp file left behind: {p}"
        if p.suffix == ".json":
            json.loads(p.read_text())


def assert_complete(repo: Path, task: str, base: str) -> None:
    task_dir = repo.parent / "repo.tasks" / task
    lock = json.loads((task_dir / "task.json").read_text())
    assert lock["session_id"] == "s1" and lock["provisioning"] == "done" and lock["base_commit"] == base
    assert [t["to"] for t in lock["transition_log"]] == ["INIT"]
    assert task_branches(repo, task) == {task: base, **{f"task-{task}-agent-{a}": base for a in AGENTS}}
    wts = registered(repo, task_dir)
    want = {str(task_dir / "code"): task, **{str(task_dir / "agents" / a / "code"): f"task-{task}-agent-{a}" for a in AGENTS}}
    assert {p: w.get("branch") for p, w in wts.items()} == {p: f"refs/heads/{b}" for p, b in want.items()}
    for p, w in wts.items():
        assert "locked" not in w and "prunable" not in w and w["HEAD"] == base, w
        assert git(Path(p), "status", "--porcelain") == ""
        assert (Path(p) / "README.md").read_text() == "# demo\n"
    for a in AGENTS:
        assert json.loads((task_dir / "agents" / a / "status.json").read_text())["status"] == "NEW"
    assert_files_parse(task_dir)


def check_after_kill(repo: Path, cli, task: str, base: str) -> str:
    """The state a killed start left behind; returns which kind it was."""
    task_dir = repo.parent / "repo.tasks" / task
    assert_files_parse(task_dir)
    if not (task_dir / "task.json").exists():
        # Killed before the lock: the lock is created first, so nothing at all exists.
        assert not task_dir.exists()
        assert task_branches(repo, task) == {} and registered(repo, task_dir) == {}
        kind = "before-lock"
    elif json.loads((task_dir / "task.json").read_text())["provisioning"] == "done":
        # Killed after the lock said "done" (while copying ignored files into the new worktrees):
        # every worktree is there; a second start is a plain resume.
        assert_complete(repo, task, base)
        kind = "after-done"
    else:
        lock = json.loads((task_dir / "task.json").read_text())
        assert lock["provisioning"] == "in_progress" and lock["session_id"] == "s1"
        kind = f"after-lock ({len(task_branches(repo, task))} branches, {len(registered(repo, task_dir))} worktrees)"
        # The half state is visible, not silent.
        st = cli("status", task, "--json")
        assert st.returncode == 0, st
        (row,) = st.json["data"]["tasks"]
        assert row["provisioning"] == "in_progress" and row["session_id"] == "s1"
        if len(task_branches(repo, task)) == 1:  # the human view once (each CLI call costs ~0.4 s)
            human = cli("status", task)
            assert "interrupted" in human.stdout and f"spark-git start {task}" in human.stdout, human
        # Anyone else is blocked, naming the owner, and changes nothing.
        before = snapshot(repo)
        other = cli("start", task, "--agents", ",".join(AGENTS), "--json", session="s2")
        assert other.returncode == 3, other
        assert "owned by session s1" in other.json["summary"]
        assert snapshot(repo) == before
    again = cli("start", task, "--agents", ",".join(AGENTS), "--json")
    assert again.returncode == 0, (kind, again)
    assert again.json["data"]["session_id"] == "s1"
    assert_complete(repo, task, base)
    return kind


def test_killed_after_each_git_command_then_resumed(repo: Path, cli) -> None:
    base = git(repo, "rev-parse", "main")
    kinds = []
    n = 0
    while True:
        n += 1
        assert n < 60, "start never ran to the end"
        task = f"k{n}"
        r = cli("start", task, "--agents", ",".join(AGENTS), env={"SPARK_FAULT_KILL_AFTER_GIT": str(n)})
        if r.returncode == 0:
            assert_complete(repo, task, base)  # the fault point was past the last git command
            break
        assert r.returncode == -signal.SIGKILL, r
        kinds.append(check_after_kill(repo, cli, task, base))
    # The loop covered kills before the lock, right after it, after a branch was created but before
    # its worktree, and between worktree adds.
    assert "before-lock" in kinds
    assert "after-lock (0 branches, 0 worktrees)" in kinds
    assert "after-lock (1 branches, 0 worktrees)" in kinds
    assert "after-lock (2 branches, 1 worktrees)" in kinds
    assert "after-lock (3 branches, 3 worktrees)" in kinds


def test_killed_at_named_point_after_lock(repo: Path, cli) -> None:
    base = git(repo, "rev-parse", "main")
    r = cli("start", "named", "--agents", ",".join(AGENTS), env={"SPARK_FAULT_KILL_AT": "start-after-lock"})
    assert r.returncode == -signal.SIGKILL, r
    assert check_after_kill(repo, cli, "named", base) == "after-lock (0 branches, 0 worktrees)"


KILLER = """#!/bin/sh
# Stands in for git's own sub-commands during `git worktree add`; SIGKILLs the `worktree add`
# process just before it checks out files, leaving the worktree locked "initializing".
if [ "$1" = "reset" ]; then kill -9 "$PPID"; exit 1; fi
exec "$REAL_GIT" "$@"
"""


def test_worktree_add_killed_mid_checkout_is_redone(repo: Path, cli, tmp_path: Path) -> None:
    base = git(repo, "rev-parse", "main")
    r = cli("start", "mid", "--agents", ",".join(AGENTS), env={"SPARK_FAULT_KILL_AT": "start-after-lock"})
    assert r.returncode == -signal.SIGKILL, r
    # Now the `git worktree add` of the task worktree dies half-way, exactly as it would under start.
    fake = tmp_path / "exec"
    fake.mkdir()
    (fake / "git").write_text(KILLER)
    (fake / "git").chmod(stat.S_IRWXU)
    real = subprocess.run(["git", "--exec-path"], capture_output=True, text=True).stdout.strip() + "/git"
    wt = repo.parent / "repo.tasks" / "mid" / "code"
    p = subprocess.run(
        ["git", "worktree", "add", "-b", "mid", str(wt), base], cwd=repo, capture_output=True, text=True,
        env={**os.environ, "GIT_EXEC_PATH": str(fake), "REAL_GIT": real},
    )
    assert p.returncode == -signal.SIGKILL, p
    (w,) = registered(repo, wt.parent).values()
    assert w["locked"] == "initializing" and not (wt / "README.md").exists(), w
    assert check_after_kill(repo, cli, "mid", base) == "after-lock (1 branches, 1 worktrees)"


def test_unregistered_directory_in_the_way_is_reported_precisely(repo: Path, cli) -> None:
    # A killed start whose worktree directory was replaced by something else (a human's files):
    # the owner's resume refuses (exit 3) naming the path, and changes nothing.
    r = cli("start", "odd", "--agents", ",".join(AGENTS), env={"SPARK_FAULT_KILL_AT": "start-after-lock"})
    assert r.returncode == -signal.SIGKILL, r
    intruder = repo.parent / "repo.tasks" / "odd" / "agents" / "a1" / "code"
    intruder.mkdir(parents=True)
    (intruder / "notes.txt").write_text("mine\n")
    lock = (repo.parent / "repo.tasks" / "odd" / "task.json").read_bytes()
    refs = git(repo, "for-each-ref")
    again = cli("start", "odd", "--agents", ",".join(AGENTS), "--json")
    assert again.returncode == 3, again
    assert str(intruder) in again.json["summary"] and "not a registered worktree" in again.json["summary"]
    # What this call created was undone: the same refs and worktrees as before, the lock untouched.
    assert git(repo, "for-each-ref") == refs
    assert registered(repo, repo.parent / "repo.tasks" / "odd") == {}
    assert (repo.parent / "repo.tasks" / "odd" / "task.json").read_bytes() == lock
    assert (intruder / "notes.txt").read_text() == "mine\n"


def test_ctrl_c_after_each_git_command_undoes_everything_or_resumes(repo: Path, cli) -> None:
    """A Ctrl-C (SIGINT: the undo runs, unlike SIGKILL) after each git command of `start`: exit 130,
    and either nothing is left (the undo removed the lock, branches and worktrees this call made) or
    the lock says "done"; either way the same start then succeeds. Found by scripts/chaos: a Ctrl-C
    right after a branch was created left it behind, and the next start refused the name (exit 2)."""
    base = git(repo, "rev-parse", "main")
    n = 0
    while True:
        n += 1
        assert n < 60, "start never ran to the end"
        task = f"i{n}"
        r = cli("start", task, "--agents", ",".join(AGENTS), env={"SPARK_FAULT_KILL_AFTER_GIT": str(n), "SPARK_FAULT_SIGNAL": "INT"})
        if r.returncode == 0:
            assert_complete(repo, task, base)
            break
        assert r.returncode == 130, r
        task_dir = repo.parent / "repo.tasks" / task
        assert_files_parse(task_dir)
        lock = task_dir / "task.json"
        if not lock.exists() or json.loads(lock.read_text())["provisioning"] != "done":
            assert not lock.exists() and task_branches(repo, task) == {} and registered(repo, task_dir) == {}, n
        again = cli("start", task, "--agents", ",".join(AGENTS), "--json")
        assert again.returncode == 0, (n, again)
        assert_complete(repo, task, base)


def test_a_worktree_add_killed_before_head_is_repaired_by_one_doctor_fix(repo: Path, cli) -> None:
    """Found by scripts/chaos (start SIGKILLed at 0.345 s): `git worktree add` killed after it
    registered the worktree but before it wrote HEAD leaves HEAD = the null id, locked "initializing";
    git then fails every walk of all refs (`rev-list --all`, `gc`, `fsck`). One `doctor --fix`
    removes that registration (it holds no commit, no file); the owner's start then resumes."""
    base = git(repo, "rev-parse", "main")
    r = cli("start", "half", "--agents", ",".join(AGENTS), env={"SPARK_FAULT_KILL_AT": "start-after-lock"})
    assert r.returncode == -signal.SIGKILL, r
    wt = repo.parent / "repo.tasks" / "half" / "code"
    git(repo, "worktree", "add", "--no-checkout", "--lock", "--reason", "initializing", "-b", "half", str(wt), base)
    admin = Path(git(wt, "rev-parse", "--absolute-git-dir"))
    (admin / "HEAD").write_text("0" * 40 + "\n")  # the kill's state: registered, HEAD not yet written
    assert subprocess.run(["git", "rev-list", "--all"], cwd=repo, capture_output=True).returncode != 0
    fixed = cli("--json", "doctor", "--fix")
    assert any(f["kind"] == "worktree-add-interrupted" and f["fixed"] for f in fixed.json["data"]["findings"]), fixed
    assert subprocess.run(["git", "fsck", "--no-progress"], cwd=repo, capture_output=True).returncode == 0
    assert git(repo, "rev-list", "--all", "--count") == "1"
    again = cli("start", "half", "--agents", ",".join(AGENTS), "--json")
    assert again.returncode == 0, again
    assert_complete(repo, "half", base)
