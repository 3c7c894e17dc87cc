"""Who a session is: the place it was launched in, not where it stands now. A coordinator that `cd`s
into an agent worktree stays the coordinator; an agent that `cd`s out stays that agent.

The launch directory comes from, in order: the record `spark-git hook session-start` wrote for the
session under `<git-common-dir>/spark/sessions/` (first start wins; agents cannot write `.git`),
CLAUDE_PROJECT_DIR (set by Claude Code for its hooks: the directory it was started in), the event's
cwd. Standard library only (read before every tool call)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from spark_git.core.caller import env_agent
from spark_git.core.paths import Place, Repo, real

PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def record_path(common: Path, session: str) -> Path:
    return common / "spark" / "sessions" / (_UNSAFE.sub("_", session)[:120] + ".json")


def launch_dir(repo: Repo, session: str | None, cwd: str) -> Path:
    if session:
        try:
            data = json.loads(record_path(repo.common, session).read_text())
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and isinstance(data.get("launch"), str) and data.get("session") == session:
            return Path(data["launch"])
    env = os.environ.get(PROJECT_DIR_ENV)
    if env and os.path.isabs(env):
        return Path(env)
    return Path(cwd)


def caller(repo: Repo, session: str | None, cwd: str) -> Place:
    """An agent place when the session was launched in an agent worktree (or its environment names
    the agent), or stands in one that `hook worktree-create` made for it (EnterWorktree, a
    worktree-isolated subagent: same session, new cwd); any other place means the coordinator."""
    launched = repo.locate(real(launch_dir(repo, session, cwd)))
    named = env_agent(os.environ, repo.tasks_root) if launched.kind != "agent" else None
    if named is not None:  # started with an agent's environment (`spark-git env T --agent A`): that agent, wherever launched
        launched = Place("agent", named[0], named[1])
    if not session:
        return launched
    here = repo.locate(real(Path(cwd)))
    if here.kind != "agent" or not here.task or not here.agent or (here.task, here.agent) == (launched.task, launched.agent):
        return launched
    return here if claimed_by(repo.common, here.task, here.agent) == session else launched


def claim_path(common: Path, task: str, agent: str) -> Path:
    return common / "spark" / "claims" / task / (agent + ".json")


def forget_claims(common: Path, task: str) -> None:
    """Drops the claims of an earlier task of this name (a new task's agents are nobody's yet)."""
    d = common / "spark" / "claims" / task
    for f in d.glob("*.json") if d.is_dir() else []:
        f.unlink(missing_ok=True)


def claimed_by(common: Path, task: str, agent: str) -> str | None:
    """The session `hook worktree-create` made this agent worktree for, if any."""
    try:
        data = json.loads(claim_path(common, task, agent).read_text())
    except (OSError, ValueError):
        return None
    s = data.get("session") if isinstance(data, dict) else None
    return s if isinstance(s, str) else None


def claim(common: Path, task: str, agent: str, session: str) -> None:
    """Records that agent `agent`'s worktree was made for `session` (written complete or not at all;
    under .git, which agents may not write)."""
    path = claim_path(common, task, agent)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"session": session, "task": task, "agent": agent}) + "\n")
    os.replace(tmp, path)


def remember(common: Path, session: str, launch: Path) -> bool:
    """Records where `session` started (SessionStart), once: a later start of the same session
    (resume, compaction, a `cd` since) keeps the first record. Written complete or not at all."""
    path = record_path(common, session)
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"session": session, "launch": str(real(launch))}) + "\n")
    try:
        os.link(tmp, path)  # create-exclusive: two racing starts keep the first
    except FileExistsError:
        return False
    finally:
        tmp.unlink()
    return True
