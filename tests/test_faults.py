"""SIGKILL anywhere in a full task (start, agent commits, merges, approve, complete, cleanup) loses
nothing: after each kill git has no corruption, every agent commit made so far is reachable from a
branch or an archive ref, every JSON state file parses, `doctor --fix` exits 0 and leaves nothing it
reports as broken, and the interrupted command then runs to the end.

Each command of a task is killed once (after its N-th git subprocess, or at a named point), so the
points are spread over a few tasks (one test each, in a repository of its own) instead of re-running
the whole task per point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from fixtures.repo import commit, git, make_repo, spark

CONFIG = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'

# One row per task: how each of its six commands is killed (an int: after that many git commands;
# a str: at that named fault point).
SCHEDULE: list[tuple[object, object, object, object, object, object]] = [
    # start      merge a1   merge a2 (rebases)       approve  complete          cleanup
    (1,          2,         3,                       1,       2,                3),
    (4,          6,         8,                       2,       5,                7),
    ("start-after-lock", "merge-after-stamp", "merge-rebase-returned", 5, "complete-before-ff", "end-after-archive"),
    (14,         "merge-before-ff", "merge-after-ff", 6,      "complete-after-ff", "end-after-snapshot"),
    (11,         15,        "merge-after-rebase",    3,       13,               "end-after-worktrees"),
]


def _kill_env(base: dict[str, str], how: object) -> dict[str, str]:
    e = {k: v for k, v in base.items() if not k.startswith("SPARK_FAULT_")}
    if isinstance(how, int):
        e["SPARK_FAULT_KILL_AFTER_GIT"] = str(how)
    else:
        e["SPARK_FAULT_KILL_AT"] = str(how)
    return e


def _reachable(repo: Path) -> set[str]:
    out = git(repo, "rev-list", "--branches", "--glob=refs/spark/archive/*")
    return set(out.split())


def _check_invariants(repo: Path, tasks_root: Path, agent_commits: list[str], where: str) -> None:
    r = subprocess.run(["git", "fsck", "--no-progress", "--no-dangling"], cwd=repo, capture_output=True, text=True)
    assert r.returncode == 0 and not r.stdout.strip() and "error" not in r.stderr, (where, r.stdout, r.stderr)
    lost = set(agent_commits) - _reachable(repo)
    assert not lost, (where, "agent commits lost", lost)
    for p in tasks_root.rglob("*.json"):
        if "/code/" in str(p):
            continue  # files inside worktrees belong to the user's project
        try:
            json.loads(p.read_bytes())
        except ValueError as e:
            raise AssertionError(f"{where}: {p} does not parse: {e}") from e


def _doctor_fixes_everything(repo: Path, env: dict[str, str], where: str) -> None:
    r = spark(repo, "doctor", "--fix", "--json", env=env)
    assert r.returncode == 0, (where, str(r))
    d = r.json["data"]
    assert d["broken"] == 0 and all(f["fixed"] or not f["broken"] for f in d["findings"]), (where, d)
    if d["fixed"]:  # it changed something: a fresh look must find nothing broken
        again = spark(repo, "doctor", "--json", env=env)
        assert again.returncode == 0 and again.json["data"]["broken"] == 0, (where, str(again))


@pytest.mark.parametrize("row", range(len(SCHEDULE)))
def test_sigkill_at_many_points_of_a_full_task_loses_nothing(tmp_path: Path, row: int, record_property) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config=CONFIG)
    tasks_root = tmp_path / "repo.tasks"
    env = {**os.environ, "SPARK_SESSION_ID": "s1"}
    agent_commits: list[str] = []
    exercised: list[str] = []

    def step(label: str, args: list[str], how: object) -> None:
        r = spark(repo, *args, "--json", env=_kill_env(env, how))
        where = f"{label} killed at {how!r}"
        if r.returncode == -signal.SIGKILL:
            exercised.append(where)
            _check_invariants(repo, tasks_root, agent_commits, where)
            _doctor_fixes_everything(repo, env, where)
            _check_invariants(repo, tasks_root, agent_commits, where + " + doctor --fix")
            r = spark(repo, *args, "--json", env=env)  # the interrupted command runs to the end
        else:
            assert isinstance(how, int), (where, "a named fault point was never reached", str(r))
        assert r.returncode == 0, (where, str(r))
        _check_invariants(repo, tasks_root, agent_commits, f"after {label}")

    k_start, k_m1, k_m2, k_approve, k_complete, k_cleanup = SCHEDULE[row]
    t = f"t{row}"
    step(f"start {t}", ["start", t, "--agents", "a1,a2"], k_start)
    a1 = tasks_root / t / "agents" / "a1" / "code"
    a2 = tasks_root / t / "agents" / "a2" / "code"
    agent_commits.append(commit(a1, {f"{t}-a1.txt": f"{t} by a1\n"}, f"[a1] {t} part one"))
    agent_commits.append(commit(a2, {f"{t}-a2.txt": f"{t} by a2\n"}, f"[a2] {t} part two"))
    step(f"merge {t} a1", ["merge", t, "--agent", "a1"], k_m1)
    step(f"merge {t} a2", ["merge", t, "--agent", "a2"], k_m2)
    step(f"approve {t}", ["approve", t, "--changes"], k_approve)
    step(f"complete {t}", ["complete", t], k_complete)
    step(f"cleanup {t}", ["cleanup", t], k_cleanup)
    assert not (tasks_root / t / "task.json").exists()
    snap = json.loads((tasks_root / t / "audit-snapshot.json").read_text())
    assert snap["final_state"] == "CLEANUP" and snap["landed"] is True, snap
    assert (repo / f"{t}-a1.txt").read_text() == f"{t} by a1\n" and (repo / f"{t}-a2.txt").read_text() == f"{t} by a2\n"

    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert git(repo, "branch", "--format=%(refname:short)") == "main"
    # printed in pytest's terminal summary (conftest), also when the suite runs on xdist workers
    record_property("summary", f"fault injection, task {t}: {len(exercised)} kill points exercised:\n  " + "\n  ".join(exercised))
    assert len(exercised) >= 5, exercised  # a git-count point past a command's last git command kills nothing


def test_sigkill_during_abandon_keeps_commits_and_uncommitted_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config=CONFIG)
    tasks_root = tmp_path / "repo.tasks"
    env = {**os.environ, "SPARK_SESSION_ID": "s1"}
    agent_commits: list[str] = []
    killed = 0
    for i, how in enumerate([3, 8, "end-after-archive", "end-after-transition", "end-after-worktrees"]):
        t = f"a{i}"
        assert spark(repo, "start", t, "--agents", "a1", env=env).returncode == 0
        wt = tasks_root / t / "agents/a1/code"
        agent_commits.append(commit(wt, {f"{t}.txt": "committed\n"}, "[a1] committed work"))
        (wt / "draft.txt").write_text(f"uncommitted draft of {t}\n")
        r = spark(repo, "abandon", t, "--why", "stop", "--json", env=_kill_env(env, how))
        assert r.returncode == -signal.SIGKILL, (how, str(r))
        killed += 1
        _check_invariants(repo, tasks_root, agent_commits, f"abandon killed at {how!r}")
        _doctor_fixes_everything(repo, env, f"abandon killed at {how!r}")
        r = spark(repo, "abandon", t, "--why", "stop", "--json", env=env)
        assert r.returncode == 0, (how, str(r))
        _check_invariants(repo, tasks_root, agent_commits, f"after abandon {t}")
        # The draft is on an archive ref, byte for byte.
        drafts = [ref for ref in git(repo, "for-each-ref", "--format=%(refname)", f"refs/spark/archive/{t}/").split() if "/uncommitted-a1/" in ref]
        assert drafts and all(git(repo, "show", f"{ref}:draft.txt") == f"uncommitted draft of {t}" for ref in drafts), drafts
        assert not wt.exists() and not (tasks_root / t / "task.json").exists()
    assert killed == 5
