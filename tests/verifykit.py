"""A repo with a day of landings through the real queue, its approvers and landers committed on main
(the adoption commit), and fresh clones of it to verify or forge in."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

from fixtures.repo import Run, git, spark

from spark_git.core.paths import state_dir
from spark_git.ops.shared import attest
from tests.queuekit import Queue

ATTEST = "refs/notes/spark-attest"


def adopt(q: Queue) -> str:
    """Commits the approvers' file (the human's key) and `.spark-landers` (this machine's landing key)."""
    cfg = (q.repo / ".spark-git.toml").read_text().replace("[approval]\n", '[approval]\nallowed_signers = ".spark/approvers"\n')
    (q.repo / ".spark").mkdir(exist_ok=True)
    (q.repo / ".spark-git.toml").write_text(cfg)
    (q.repo / ".spark" / "approvers").write_text((state_dir() / "allowed_signers").read_text())
    (q.repo / ".spark" / attest.LANDERS_FILE).write_text(attest.landers_line("lander@test", attest.lander().public) + "\n")
    git(q.repo, "add", "-A")
    git(q.repo, "commit", "-q", "-m", "adopt spark-git: approvers and landers")
    return git(q.repo, "rev-parse", "HEAD")


def day(tmp: Path, n: int) -> Queue:
    q = Queue(tmp, n)
    adopt(q)
    for t in q.tasks:
        r = q.spark(t, "complete", t)
        assert r.returncode == 0, r
    return q


def clone(q: Queue, dest: Path) -> Path:
    git(dest.parent, "clone", "-q", str(q.repo), str(dest))
    return dest


def no_state_env(tmp: Path) -> dict[str, str]:
    """A user with no state directory and no key: what a CI job on the forge is."""
    home = tmp / "ci-home"
    home.mkdir(exist_ok=True)
    return {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / ".local" / "state")}


def verify(repo: Path, tmp: Path, *args: str) -> Run:
    return spark(repo, "--json", "verify", *args, env=no_state_env(tmp))


def statement(repo: Path, sha: str) -> dict[str, Any]:
    env = json.loads(git(repo, "notes", f"--ref={ATTEST}", "show", sha))
    return json.loads(base64.b64decode(env["payload"]))


def resign(repo: Path, sha: str, stmt: dict[str, Any], key: attest.Lander | None = None) -> None:
    """Writes `stmt` as `sha`'s note, signed by `key` (default: the real lander's)."""
    git(repo, "notes", f"--ref={ATTEST}", "add", "-f", "-m", attest.envelope(key or attest.lander(), stmt).strip(), sha)
