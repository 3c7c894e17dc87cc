"""Set-up for the merge-queue tests: a repo (light protocol) with n approved tasks, each owned by its
own session and holding one commit that adds its own file, ready to `complete`."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

from fixtures.race import WRAPPER
from fixtures.repo import Run, commit, git, make_repo, spark

from tests.mergekit import config

PY = sys.executable


def gate_cmd(script: str) -> list[str]:
    """A final gate in Python run in the candidate's worktree."""
    return [PY, "-c", script]


# Fails when the candidate holds a file named bad.txt; counts its runs in $COUNT_FILE if set.
CULPRIT_GATE = gate_cmd("import os, sys; sys.exit(1 if os.path.exists('bad.txt') else 0)")
# The same verdict from a real pytest run, whose failing test names the culprit's evidence must carry.
PYTEST_CULPRIT = {"test_gate.py": "import os\n\n\ndef test_no_bad_file():\n    assert not os.path.exists('bad.txt')\n"}
PYTEST_GATE = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "test_gate.py"]


class Queue:
    def __init__(self, tmp: Path, n: int, final: list[str] | None = None, extra: str = "", culprit: int | None = None,
                 files: dict[str, str] | None = None, parallel: int = 1) -> None:
        # [queue] parallel defaults to the CPU count: pinned, so a test takes the same decisions on every machine
        extra = extra.replace("[queue]", f"[queue]\nparallel = {parallel}", 1) if "[queue]" in extra else f"[queue]\nparallel = {parallel}\n{extra}"
        cfg = config(final=final or CULPRIT_GATE, non_interactive=True, extra=extra)
        self.repo = make_repo(tmp / "repo", {"README.md": "# demo\n", **(files or {})}, config=cfg)
        self.root = tmp / "repo.tasks"
        self.tasks = [f"t{i}" for i in range(n)]
        for i, t in enumerate(self.tasks):
            assert self.spark(t, "start", t, "--agents", "").returncode == 0
            files = {f"{t}.txt": f"{t}\n", **({"bad.txt": "x\n"} if i == culprit else {})}
            commit(self.root / t / "code", files, f"{t}: work")
            r = self.spark(t, "approve", t, "--changes")
            assert r.returncode == 0, r

    def env(self, task: str) -> dict[str, str]:
        return {**os.environ, "SPARK_SESSION_ID": f"s-{task}"}

    def spark(self, task: str, *args: str, env: dict[str, str] | None = None, **kw) -> Run:
        return spark(self.repo, *args, env={**self.env(task), **(env or {})}, **kw)

    def task_json(self, task: str) -> dict:
        return json.loads((self.root / task / "task.json").read_text())

    def queue_refs(self) -> list[str]:
        return git(self.repo, "for-each-ref", "--format=%(refname)", "refs/spark/queue/").split()

    def queue_log(self) -> dict:
        p = self.root / ".queue" / "queue.json"
        return json.loads(p.read_text()) if p.exists() else {}

    def landed_files(self) -> set[str]:
        return set(git(self.repo, "ls-tree", "--name-only", "main").split())

    def assert_landed_as_merges(self) -> None:
        """main's first-parent line holds each landed task as one merge commit, never a task's own commit."""
        line = git(self.repo, "log", "--first-parent", "--format=%P %s", "main").splitlines()
        assert not [ln for ln in line if ln.split(" ")[-2].rstrip(":") in self.tasks], line
        assert all(len(ln.split(" ")) > 3 for ln in line if "spark-git: land task" in ln), line  # two parents

    def scratch(self) -> list[Path]:
        d = self.root / ".queue"
        return sorted(d.glob("scratch-*")) if d.is_dir() else []


def start_racers(q: Queue, jobs: list[tuple[str, list[str]]]) -> list[subprocess.Popen[str]]:
    """One real process per (task, args) (fixtures/race.py's wrapper), released at the same instant."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    procs = [subprocess.Popen([PY, "-c", WRAPPER, str(ready_w), str(go_r), *args], cwd=q.repo, env=q.env(task), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=(ready_w, go_r)) for task, args in jobs]
    os.close(ready_w)
    got = b""
    while len(got) < len(jobs):
        chunk = os.read(ready_r, len(jobs))
        assert chunk, "a racer died at start-up"
        got += chunk
    os.write(go_w, b"g" * len(jobs))
    for fd in (ready_r, go_r, go_w):
        os.close(fd)
    return procs


def read_line(p: subprocess.Popen[str], deadline_s: float = 120) -> str:
    """The first line a racer writes to stderr (blocks on the pipe; fails after deadline_s)."""
    assert p.stderr is not None
    ready, _, _ = select.select([p.stderr], [], [], deadline_s)
    assert ready, "the racer printed nothing"
    return p.stderr.readline()
