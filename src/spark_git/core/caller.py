"""Who is calling a spark-git command: the coordinator (the task owner's session) or an agent.

An agent has its own session id, `agent:<task>:<agent>` (`spark-git env T --agent A` gives it; it holds
nothing of the owner's session). A caller is an agent when any of these says so:
- its environment: SPARK_AGENT, or a session id of the agent form;
- its working directory (or -C) inside an agent worktree;
- the same facts of a process it runs under (Linux /proc): the client an agent runs in was started
  with the agent's environment, or in its worktree, and an agent can change its own environment and
  directory, never its parents'.
Gates and set-up commands in the task worktree run as `gate:<task>`, which acts for nobody.
Coordinator commands refuse an agent (exit 3); `report`, `sync` and `env` take an agent only for
itself. The one guard is `check`, called for every command by cli/common.execute. Standard library
only (the hooks read it too: identity.caller, session-start)."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core.errors import Blocked
from spark_git.core.paths import locate, real

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

AGENT_ENV = "SPARK_AGENT"
TASK_ENV = "SPARK_TASK"
SESSION_ENV = "SPARK_SESSION_ID"
WORKTREE_ENV = "SPARK_WORKTREE"
PREFIX = "agent:"
GATE_PREFIX = "gate:"

# Commands only the coordinator runs (as `spark-git <words>`), and those an agent runs for itself
# (the --agent they name must be the caller). Every other command is open to agents (views, hooks).
COORDINATOR = frozenset({
    "start", "merge", "update", "approve", "complete", "advance", "classify", "cleanup", "abandon",
    "agent add", "lock main", "lock break", "unlock main", "queue run", "hooks install", "hooks uninstall",
    "archive restore", "remote enable", "remote disable", "agent run", "init", "accept",
})
SELF_ONLY = frozenset({"report", "sync", "env"})


def agent_session(task: str, agent: str) -> str:
    """The session id of agent `agent` of `task`: a function of the two names, never the owner's."""
    return f"{PREFIX}{task}:{agent}"


def gate_session(task: str) -> str:
    """The session id of what spark-git runs in the task worktree (gates, set-up): not the owner's."""
    return f"{GATE_PREFIX}{task}"


def agent_of(session: str | None) -> tuple[str, str] | None:
    """(task, agent) when `session` is an agent's session id."""
    if not session or not session.startswith(PREFIX):
        return None
    task, sep, agent = session[len(PREFIX):].partition(":")
    return (task, agent) if sep and task and agent else None


class Sign:
    """One thing that marks the caller as agent `agent` (of `task`, when known); agent None: a gate
    or set-up command spark-git runs in the task worktree. `here`: only the command's own directory."""

    __slots__ = ("agent", "here", "kind", "task", "why")

    def __init__(self, task: str | None, agent: str | None, why: str, kind: str, here: bool = False) -> None:
        self.task, self.agent, self.why, self.kind, self.here = task, agent, why, kind, here


def _env_signs(env: Mapping[str, str], where: str, root: Path | None = None) -> list[Sign]:
    """Signs in `env`; with `root`, only when its SPARK_WORKTREE (if any) is under that tasks root: an
    agent of another repository (running this repo's tests, say) is not an agent here."""
    wt = env.get(WORKTREE_ENV)
    if root is not None and wt and locate(root, real(wt)).kind == "outside":
        return []
    out = []
    if env.get(AGENT_ENV):
        out.append(Sign(env.get(TASK_ENV) or None, env[AGENT_ENV], f"{where} {AGENT_ENV}={env[AGENT_ENV]}", AGENT_ENV))
    session = env.get(SESSION_ENV) or ""
    pair = agent_of(session)
    if pair:
        out.append(Sign(pair[0], pair[1], f"{where} the agent session {SESSION_ENV}={session}", SESSION_ENV))
    elif session.startswith(GATE_PREFIX):
        out.append(Sign(session[len(GATE_PREFIX):] or None, None, f"{where} the gate session {SESSION_ENV}={session}", SESSION_ENV))
    return out


def env_agent(env: Mapping[str, str], tasks_root: Path) -> tuple[str, str] | None:
    """(task, agent) that `env` names as its agent (SPARK_AGENT with SPARK_TASK, or an agent session)."""
    found = [(s.task, s.agent) for s in _env_signs(env, "", real(tasks_root)) if s.task and s.agent]
    return found[0] if found else None


def _dir_sign(tasks_root: Path, d: Path, where: str, here: bool = False) -> Sign | None:
    place = locate(tasks_root, real(d))
    if place.kind != "agent" or not place.agent:
        return None
    return Sign(place.task, place.agent, f"{where} in agent {place.agent}'s worktree ({d})", "dir", here)


def _ancestors(limit: int = 64) -> Iterable[tuple[int, str]]:
    """(pid, command name) of every process this one runs under, nearest first; nothing without /proc."""
    pid = os.getppid()
    for _ in range(limit):
        if pid <= 1:
            return
        stat = _read(f"/proc/{pid}/stat").decode(errors="replace")
        if not stat:
            return
        name = stat[stat.find("(") + 1: stat.rfind(")")]
        yield pid, name
        pid = int(stat[stat.rfind(")") + 2:].split()[1])


def _read(path: str) -> bytes:
    """The bytes of a /proc file; b"" when it cannot be read (raw os calls: this runs for every
    ancestor of every guarded command)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return b""
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _environ(pid: int) -> dict[str, str]:
    # only SPARK_* entries are decoded: a client's environment holds hundreds of others
    pairs = (item.decode(errors="replace").partition("=") for item in _read(f"/proc/{pid}/environ").split(b"\0") if item.startswith(b"SPARK_"))
    return {k: v for k, _, v in pairs if k in (AGENT_ENV, TASK_ENV, SESSION_ENV, WORKTREE_ENV)}


def signs(tasks_root: Path, env: Mapping[str, str], dirs: Iterable[Path], ancestors: bool = True) -> list[Sign]:
    """Everything that marks the caller as an agent (empty: the coordinator)."""
    root = real(tasks_root)
    out = _env_signs(env, "the environment sets", root)
    out += [s for d in dict.fromkeys(dirs) if (s := _dir_sign(root, d, "the working directory is", here=True)) is not None]
    for pid, name in _ancestors() if ancestors else ():
        where = f"process {pid} ({name}), which this command runs under,"
        out += _env_signs(_environ(pid), f"{where} was started with", root)
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        # the kernel's link is already resolved: a directory outside the tasks root needs no Path work
        if not cwd.startswith(str(root) + os.sep):
            continue
        s = _dir_sign(root, Path(cwd), f"{where} runs")
        if s is not None:
            out.append(s)
    return _first_of_each(out)


def _first_of_each(found: list[Sign]) -> list[Sign]:
    """One sign per agent and kind, the command's own directory apart (a shell and the client it runs in
    often share a directory and an environment: the refusal names it once)."""
    seen: set[tuple[str | None, str | None, str, bool]] = set()
    out = []
    for s in found:
        key = (s.task, s.agent, s.kind, s.here)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def check(command: str, tasks_root: Path, main: Path, cwd: Path, task: str | None, agent: str | None, session: str | None = None) -> None:
    """The guard: Blocked (exit 3) when an agent runs a coordinator command, or a command of another
    agent. `main`: the main worktree; `cwd`: where the command runs (-C); `task`/`agent`/`session`:
    its arguments (a --session of the agent form is an agent too)."""
    if command not in COORDINATOR and command not in SELF_ONLY:
        return
    try:
        here = Path.cwd()
    except OSError:  # the directory was removed under us
        here = cwd
    found = _env_signs({SESSION_ENV: session} if session else {}, "--session gives")
    found += signs(tasks_root, os.environ, (cwd, here))
    if not found:
        return
    if command in SELF_ONLY and agent and all(s.agent == agent and s.task in (None, task) for s in found):
        return
    # Only this command's own directory says "agent": it may be a coordinator who `cd`-ed in.
    moved = all(s.here for s in found)
    raise refusal(command, found[0], found, task, main=main if moved else None)


def refusal(command: str, me: Sign, found: list[Sign], task: str | None, main: Path | None = None) -> Blocked:
    t = me.task or task
    who = f"agent {me.agent}" + (f" of task {t}" if t else "")
    if me.agent is None:  # a gate or set-up command: it acts for nobody
        return Blocked(f"`spark-git {command}` is not for a command spark-git runs in task {t}'s worktree (a gate or set-up): "
                       + "; ".join(s.why for s in found), hint="gates and set-up commands only check and prepare; the coordinator acts",
                       next=[f"spark-git status {t}" if t else "spark-git status"], details={"agents": []}, task=task)
    if command in SELF_ONLY:
        msg = f"{who} runs `spark-git {command}` only for itself" + ("" if command != "env" else " (`--agent` names it)")
        nxt = [f"spark-git {command} {t} --agent {me.agent}" + (" --status WORKING" if command == "report" else "")] if t else ["spark-git status"]
    else:
        msg = f"`spark-git {command}` is the coordinator's, and this is {who}"
        nxt = [f"spark-git report {t} --agent {me.agent} --status COMPLETE", f"spark-git status {t}"] if t else ["spark-git status"]
    hint = ("an agent works and commits in its own worktree and reports with `spark-git report`; the coordinator "
            "(the task owner's session, outside every agent worktree) merges, approves and completes")
    return Blocked(
        msg + ": " + "; ".join(s.why for s in found),
        hint=hint + (f"; a coordinator standing in an agent worktree runs it from elsewhere: cd {main}" if main else ""),
        next=nxt, details={"agents": sorted({f"{s.task or '?'}/{s.agent}" for s in found if s.agent})}, task=task,
    )


def is_self(session: str | None, task: str, agent: str) -> bool:
    """`session` is agent `agent`'s own: it may report and sync for itself (anyone else must own the task)."""
    return agent_of(session) == (task, agent)
