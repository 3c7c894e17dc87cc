"""Shared set-up for the protocol tests: a repo under protocol "full", a started task, and helpers that
drive it with spark-git commands and commits in the agent worktrees only."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fixtures.repo import Run, commit, git, make_repo, reseal_report, spark

FULL_CONFIG = """\
[gates]
build = ["sh", "-c", 'test ! -e "$SPARK_TASK_WORKTREE/stop.flag"']  # an ignored flag in the task worktree: the gate runs in a clean checkout
[approval]
allow_non_interactive = true
"""


# At least rules.requirements_min_bytes (100) bytes: a requirements report shorter than that does not count.
REQUIREMENTS = "needs: the change keeps the public interface, comes with a test for the new behaviour, and updates the docs.\n"


class P:
    def __init__(self, tmp: Path, task: str = "t1", title: str | None = None, config: str = FULL_CONFIG, agents: str | None = None,
                 files: dict[str, str] | None = None, repo: Path | None = None) -> None:
        files = files or {"README.md": "# demo\n", "src/app.py": "print('hi')\n", ".gitignore": "*.flag\n"}
        self.repo = repo or make_repo(tmp / "repo", files, config=config)
        self.task = task
        # The human of this task is the one of the test that made it: a task a module-scoped world shares
        # keeps its approver's state directory (key, allowed signers) while later tests get HOMEs of their own.
        self.state_home = os.environ["XDG_STATE_HOME"]
        self.root = self.repo.parent / f"{self.repo.name}.tasks" / task
        args = ["start", task] + (["--title", title] if title else []) + (["--agents", agents] if agents is not None else ["--agents", ""])
        r = self.spark(*args)
        assert r.returncode == 0, r

    def spark(self, *args: str, session: str | None = "s1", input: str | None = None) -> Run:
        e = dict(os.environ, XDG_STATE_HOME=self.state_home)
        e.pop("SPARK_SESSION_ID", None)
        if session is not None:
            e["SPARK_SESSION_ID"] = session
        return spark(self.repo, *args, env=e, input=input)

    def ok(self, *args: str, **kw) -> dict:
        r = self.spark("--json", *args, **kw)
        assert r.returncode == 0, r
        return r.json

    def advance(self, to: str | None = None, **kw) -> Run:
        return self.spark("--json", "advance", self.task, *(["--to", to] if to else []), **kw)

    def go(self, to: str | None = None, why: str | None = None) -> dict:
        return self.ok("advance", self.task, *(["--to", to] if to else []), *(["--why", why] if why else []))["data"]

    def report(self, agent: str, status: str = "COMPLETE", *extra: str) -> dict:
        return self.ok("report", self.task, "--agent", agent, "--status", status, *extra)

    def wt(self, agent: str | None = None) -> Path:
        return self.root / "code" if agent is None else self.root / "agents" / agent / "code"

    def commit(self, agent: str, files: dict[str, str], msg: str) -> str:
        return commit(self.wt(agent), files, f"[{agent}] {msg}")

    def head(self) -> str:
        return git(self.repo, "rev-parse", self.task)

    def state(self) -> str:
        return self.task_json()["state"]

    def task_json(self) -> dict:
        return json.loads((self.root / "task.json").read_text())

    def snapshot(self) -> tuple[bytes, bytes]:
        return (self.root / "task.json").read_bytes(), (self.root / "audit-trail.json").read_bytes()

    def requirements(self, agent: str, text: str = REQUIREMENTS) -> None:
        (self.root / f"{self.task}-{agent}-requirements.md").write_text(text)

    def plans(self, agents: list[str]) -> None:
        md = self.root / "task.md"
        md.write_text(md.read_text() + "".join(f"\n## Implementation Plan: {a}\n\n{a} does its part.\n" for a in agents))

    def to_synthesis_planned(self, agents: list[str]) -> None:
        """From CLASSIFIED: every agent's requirements reported, SYNTHESIS reached, each agent's plan in task.md."""
        self.go(), self.go()
        for a in agents:
            self.requirements(a)
            self.report(a)
        self.go()
        self.plans(agents)

    def status_file(self, agent: str) -> Path:
        return self.root / "agents" / agent / "status.json"

    def set_status(self, agent: str, **fields) -> None:
        path = self.status_file(agent)
        data = json.loads(path.read_text())
        data.update(fields)
        path.write_text(json.dumps(data))
        reseal_report(path, self.state_home)  # the test's edit stands for time passing, not a forgery

    def edit_task_json(self, **fields) -> None:
        path = self.root / "task.json"
        data = json.loads(path.read_text())
        data.update(fields)
        path.write_text(json.dumps(data, indent=2))
