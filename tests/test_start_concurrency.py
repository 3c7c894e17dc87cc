"""Many real `spark-git start` processes released at the same instant through a pipe barrier.

Each child is a tiny Python wrapper: it imports spark-git (so the race is on the work, not on
interpreter start-up), writes one byte to a "ready" pipe, blocks reading one byte from a "go" pipe,
then runs `python -m spark_git ARGS` in-process (runpy, exactly what `-m` does). The test waits for
every "ready" byte, then writes all "go" bytes in one write: no sleeps anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from fixtures.repo import git

WRAPPER = r"""
import os, runpy, sys
ready, go = int(sys.argv[1]), int(sys.argv[2])
import spark_git.cli, spark_git.ops.start, spark_git.ops.status, git.cmd, filelock  # warm start-up
os.write(ready, b".")
os.close(ready)
if os.read(go, 1) != b"g":
    sys.exit(99)
sys.argv = ["spark_git", *sys.argv[3:]]
runpy.run_module("spark_git", run_name="__main__", alter_sys=True)
"""


@dataclass
class Done:
    args: list[str]
    env_session: str | None
    returncode: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict:
        return json.loads(self.stdout)

    def __str__(self) -> str:
        return f"{self.args} session={self.env_session} -> {self.returncode}\n{self.stdout}\n{self.stderr}"


def run_together(cwd: Path, jobs: list[tuple[list[str], dict[str, str]]], timeout: float = 300) -> list[Done]:
    """Starts one process per (args, extra_env), releases them all at once, returns their results in order."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    procs = []
    try:
        for args, extra in jobs:
            env = {**os.environ, **extra}
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", WRAPPER, str(ready_w), str(go_r), *args],
                    cwd=cwd, env=env, pass_fds=(ready_w, go_r),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                )
            )
        os.close(ready_w)
        ready_w = -1
        got = b""
        while len(got) < len(jobs):
            chunk = os.read(ready_r, len(jobs))
            if not chunk:  # every writer gone before all were ready: a child died at start-up
                break
            got += chunk
        assert len(got) == len(jobs), [p.communicate() for p in procs]
        os.write(go_w, b"g" * len(jobs))  # one write: every waiting child wakes now
        results = []
        for p, (args, extra) in zip(procs, jobs):
            out, err = p.communicate(timeout=timeout)
            results.append(Done(args, extra.get("SPARK_SESSION_ID"), p.returncode, out, err))
        return results
    finally:
        for fd in (ready_r, ready_w, go_r, go_w):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def branches(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/")
    return dict(line.split(" ") for line in out.splitlines())


def worktrees(repo: Path) -> list[dict[str, str]]:
    res = []
    for block in git(repo, "worktree", "list", "--porcelain").split("\n\n"):
        wt = {}
        for line in block.splitlines():
            k, _, v = line.partition(" ")
            wt[k] = v
        res.append(wt)
    return res


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts and not _inside_worktree(p, root))


def _inside_worktree(p: Path, root: Path) -> bool:
    parts = p.relative_to(root).parts
    return "code" in parts[:-1]


@pytest.mark.slow
def test_twenty_racing_starts_of_one_task_exactly_one_wins(repo: Path) -> None:
    base = git(repo, "rev-parse", "main")
    jobs = [(["start", "same-task", "--agents", "a1,a2", "--json"], {"SPARK_SESSION_ID": f"racer-{i:02d}"}) for i in range(20)]
    results = run_together(repo, jobs)

    winners = [r for r in results if r.returncode == 0]
    losers = [r for r in results if r.returncode != 0]
    assert len(winners) == 1, "\n".join(map(str, results))
    assert sorted({r.returncode for r in losers}) == [3], "\n".join(map(str, losers))
    assert len(losers) == 19
    (win,) = winners
    owner = win.env_session
    assert win.json["data"]["session_id"] == owner and win.json["data"]["resumed"] is False
    for r in losers:
        assert "Traceback" not in r.stderr, r
        env = r.json
        assert env["status"] == "BLOCKED" and owner in env["summary"], r

    root = repo.parent / "repo.tasks"
    assert sorted(p.name for p in root.iterdir()) == ["same-task"]
    lock = json.loads((root / "same-task" / "task.json").read_text())
    assert lock["session_id"] == owner and lock["provisioning"] == "done" and lock["base_commit"] == base
    assert [t["to"] for t in lock["transition_log"]] == ["INIT"]
    trail = json.loads((root / "same-task" / "audit-trail.json").read_text())
    assert [t["to"] for t in trail["state_transitions"]] == ["INIT"]
    assert [e["kind"] for e in trail["events"]] == ["started"]

    assert branches(repo) == {
        "main": base, "same-task": base, "task-same-task-agent-a1": base, "task-same-task-agent-a2": base,
    }
    wts = worktrees(repo)
    assert sorted(w["worktree"] for w in wts) == sorted([
        str(repo),
        str(root / "same-task" / "code"),
        str(root / "same-task" / "agents" / "a1" / "code"),
        str(root / "same-task" / "agents" / "a2" / "code"),
    ])
    assert all("locked" not in w and "prunable" not in w for w in wts), wts
    # No temp files or other leftovers of the losers.
    assert files_under(root) == [
        "same-task", "same-task/agents", "same-task/agents/a1", "same-task/agents/a1/code", "same-task/agents/a1/status.json",
        "same-task/agents/a2", "same-task/agents/a2/code", "same-task/agents/a2/status.json",
        "same-task/audit-trail.json", "same-task/code", "same-task/task.json",
    ]
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.slow
def test_eight_tasks_with_three_agents_start_at_once(repo: Path) -> None:
    base = git(repo, "rev-parse", "main")
    tasks = [f"task-{i}" for i in range(8)]
    jobs = [(["start", t, "--agents", "x,y,z", "--json"], {"SPARK_SESSION_ID": f"s-{t}"}) for t in tasks]
    results = run_together(repo, jobs)
    for r in results:
        assert r.returncode == 0, r
        assert "lock" not in r.stderr.lower(), r  # nothing from git's own lock files (index.lock, config.lock...)

    root = repo.parent / "repo.tasks"
    expected = [str(repo)]
    for t in tasks:
        expected.append(str(root / t / "code"))
        expected += [str(root / t / "agents" / a / "code") for a in ("x", "y", "z")]
    wts = worktrees(repo)
    assert sorted(w["worktree"] for w in wts) == sorted(expected)
    assert len(wts) == 33  # 8 x (task + 3 agents) + main
    assert all("locked" not in w and "prunable" not in w and w["HEAD"] == base for w in wts), wts
    want = {"main": base}
    for t in tasks:
        want[t] = base
        want.update({f"task-{t}-agent-{a}": base for a in ("x", "y", "z")})
    assert branches(repo) == want
    for t in tasks:
        lock = json.loads((root / t / "task.json").read_text())
        assert lock["session_id"] == f"s-{t}" and lock["provisioning"] == "done" and sorted(lock["agents"]) == ["x", "y", "z"]
        assert git(root / t / "agents" / "y" / "code", "symbolic-ref", "--short", "HEAD") == f"task-{t}-agent-y"
        assert git(root / t / "code", "status", "--porcelain") == ""
