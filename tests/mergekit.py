"""Shared set-up for the gated-merge tests: a repo with the light protocol, a started task, agents
that commit, and snapshots of refs + worktree status for "a refusal changes nothing"."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from fixtures.repo import Run, commit, git, make_repo, spark

PY = sys.executable


def toml_cmd(argv: list[str]) -> str:
    return json.dumps(argv)  # a TOML array of strings is valid JSON


def config(build: list[str] | str | None = None, final: list[str] | str | None = None, *, timeout: float | None = None,
           attribution: str | None = None, non_interactive: bool = False, extra: str = "") -> str:
    lines = ['protocol = "light"', extra, "[gates]"]
    if build is not None:
        lines.append(f"build = {toml_cmd(build) if isinstance(build, list) else json.dumps(build)}")
    if final is not None:
        lines.append(f"final = {toml_cmd(final) if isinstance(final, list) else json.dumps(final)}")
    if timeout is not None:
        lines.append(f"timeout_s = {timeout}")
    if attribution:
        lines += ["[attribution]", f'mode = "{attribution}"']
    if non_interactive:
        lines += ["[approval]", "allow_non_interactive = true"]
    return "\n".join(lines) + "\n"


class Task:
    def __init__(self, tmp: Path, agents: list[str], cfg: str, task: str = "t1", files: dict[str, str] | None = None) -> None:
        self.repo = make_repo(tmp / "repo", files or {"README.md": "# demo\n", "src/app.py": "line1\nline2\nline3\n"}, config=cfg)
        self.task = task
        self.root = tmp / "repo.tasks" / task
        r = self.spark("start", task, "--agents", ",".join(agents))
        assert r.returncode == 0, r

    def spark(self, *args: str, session: str | None = "s1", env: dict[str, str] | None = None, **kw) -> Run:
        e = dict(os.environ)
        e.pop("SPARK_SESSION_ID", None)
        if session is not None:
            e["SPARK_SESSION_ID"] = session
        e.update(env or {})
        return spark(self.repo, *args, env=e, **kw)

    def merge(self, agent: str, **kw) -> Run:
        return self.spark("--json", "merge", self.task, "--agent", agent, **kw)

    def wt(self, agent: str | None = None) -> Path:
        return self.root / "code" if agent is None else self.root / "agents" / agent / "code"

    def branch(self, agent: str | None = None) -> str:
        return self.task if agent is None else f"task-{self.task}-agent-{agent}"

    def head(self, agent: str | None = None) -> str:
        return git(self.repo, "rev-parse", self.branch(agent))

    def commit(self, agent: str, files: dict[str, str], message: str) -> str:
        return commit(self.wt(agent), files, message)

    def task_json(self) -> dict:
        return json.loads((self.root / "task.json").read_text())

    def audit(self) -> dict:
        return json.loads((self.root / "audit-trail.json").read_text())

    def notes(self, sha: str) -> list[dict]:
        out = git(self.repo, "notes", "--ref=refs/notes/spark", "show", sha, check=False)
        return [json.loads(ln) for ln in out.splitlines() if ln.strip()]

    def snapshot(self, agents: list[str]) -> dict:
        """Every ref, every worktree's HEAD and porcelain status, and task.json's bytes."""
        snap: dict = {"refs": git(self.repo, "for-each-ref", "--format=%(objectname) %(refname)"), "task.json": (self.root / "task.json").read_bytes()}
        for a in [None, *agents]:
            w = self.wt(a)
            snap[str(w)] = (git(w, "rev-parse", "HEAD"), git(w, "status", "--porcelain=v1", "--untracked-files=all"))
        return snap


def reachable_from_refs(repo: Path, sha: str) -> bool:
    return bool(git(repo, "for-each-ref", "--contains", sha, "--format=%(refname)", "refs/heads/", "refs/spark/"))
