"""The client-neutral hook policy: may this tool call go ahead? Who the caller is comes from where its
session was launched (guard/identity.py: an agent launched in its own worktree, or the
coordinator); what it may touch comes from the layout and the task state, read as plain JSON. File
writes are judged in guard/writes.py, shell commands in guard/shell.py. Standard library only
(runs before every tool call). Fails closed: inside a repo with live tasks, a config that does not
parse or a crash blocks."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core import paths
from spark_git.core.paths import Place, Repo, default_tasks_root, real, repo_around
from spark_git.guard import identity, shell, shwrites
from spark_git.guard.calls import ALLOW_UNTOUCHED, EDIT, SHELL, WRITE, Decision, ToolCall
from spark_git.guard.writes import Who, decide_write

SESSION_ENV = "SPARK_SESSION_ID"


def decide(call: ToolCall, protect: tuple[str, ...]) -> Decision:
    """`protect`: the client directories no agent writes (clients.registry.protected())."""
    repo = _repo(call)
    if call.kind in (WRITE, EDIT):
        if not call.paths:
            return Decision(True, f"spark-git: allowed: {call.tool} names no path") if repo else ALLOW_UNTOUCHED
        decisions = [_write(repo, call, target, protect) for target in call.paths]
        return next((d for d in decisions if not d.allow), decisions[0])
    if repo is None or not live(repo):
        return ALLOW_UNTOUCHED
    if call.kind == SHELL:
        if repo.config_error:
            return config_block(repo)
        if call.command is None:
            return Decision(True, "spark-git: allowed: no command")
        start = Path(call.cwd) / os.path.expanduser(call.workdir) if call.workdir else Path(call.cwd)
        return shell.decide_shell(who(repo, call, protect), start, call.command, powershell=call.tool == "PowerShell")
    return Decision(True, f"spark-git: allowed: {call.tool} is not checked")


def _repo(call: ToolCall) -> Repo | None:
    """The repo whose rules apply: the one the session was launched in when it has live tasks —
    an agent that `git init scratch && cd scratch` is still judged against its own worktree —
    else the one it stands in."""
    repo = repo_around(Path(call.cwd))
    launch = os.environ.get(identity.PROJECT_DIR_ENV)
    if launch and os.path.isabs(launch) and (repo is None or not live(repo)):
        launched = repo_around(Path(launch))
        if launched is not None and (repo is None or live(launched)):
            repo = launched
    return repo


def _write(repo: Repo | None, call: ToolCall, target: str, protect: tuple[str, ...]) -> Decision:
    if repo is None:  # standing outside, writing in? judge by where the write lands
        t = Path(os.path.expanduser(target))
        repo = repo_around((t if t.is_absolute() else Path(call.cwd) / t).parent)
    if repo is None or not live(repo):
        return ALLOW_UNTOUCHED
    if repo.config_error:
        return config_block(repo)
    return decide_write(who(repo, call, protect), Path(call.cwd), target)


def who(repo: Repo, call: ToolCall, protect: tuple[str, ...]) -> Who:
    w = Who(repo, identity.caller(repo, call.session_id, call.cwd), sessions(call), {}, protect)
    w.env = shwrites.spark_env(w)
    return w


def active(repo: Repo) -> bool:
    """Some task lock (or the main lock) exists. A repo whose tasks all ended is left alone like one
    that never used spark-git (its main worktree needs no main lock then)."""
    return _has_locks(repo.tasks_root)


def live(repo: Repo) -> bool:
    """active(); with a config that does not parse, live tasks at the default root count too (the
    configured root may be the one we could not read)."""
    return active(repo) or (repo.config_error is not None and _has_locks(default_tasks_root(repo.main)))


def _has_locks(root: Path) -> bool:
    try:
        return any(os.path.isfile(os.path.join(e.path, paths.TASK_JSON)) for e in os.scandir(root) if e.is_dir())
    except OSError:
        return False


def config_block(repo: Repo) -> Decision:
    return Decision(
        False,
        f"spark-git: blocked: the spark-git configuration does not parse, so the hook cannot tell where the tasks are "
        f"({repo.config_error}); fix it (`spark-git doctor` names the problem) before going on",
    )


def crashed(cwd: str, error: BaseException) -> Decision | None:
    """A block when the hook failed inside a repo with live tasks (fail closed); None elsewhere."""
    try:
        repo = repo_around(Path(cwd))
        if repo is None and os.environ.get(identity.PROJECT_DIR_ENV):
            repo = repo_around(Path(os.environ[identity.PROJECT_DIR_ENV]))
        if repo is None or not live(repo):
            return None
    except Exception:
        return None
    return Decision(False, f"spark-git: blocked: the spark-git hook failed ({type(error).__name__}: {error}); "
                           "tool calls are blocked while tasks are live — run `spark-git doctor` or report it")


def sessions(call: ToolCall) -> set[str]:
    return {s for s in (call.session_id, os.environ.get(SESSION_ENV)) if isinstance(s, str) and s}


def caller(repo: Repo, cwd: Path) -> Place:
    """Where `cwd` is, as a caller: kind "agent" (with task and agent) in an agent worktree; any other
    place means the coordinator. (Identity itself follows the session: identity.caller.)"""
    return repo.locate(real(cwd))
