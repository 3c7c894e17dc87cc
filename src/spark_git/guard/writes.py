"""Who may write where: the file-write half of the hook policy, used for the client's write tools and
for the files a shell command writes (redirections, cp, tee, sed -i, ...). The caller is the place its
session was launched in (guard/identity.py), not where it stands now. Standard library only."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core import paths
from spark_git.core.paths import Place, Repo, real
from spark_git.guard.calls import Decision

# Documentation the coordinator may edit in the task worktree during IMPLEMENTATION; everything
# else there counts as source (code, tests, config, build files).
DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc")
DOC_DIRS = ("docs", "doc")
# What points git elsewhere or configures spark-git: never written by an agent; nor are the clients'
# own directories, which switch hooks off (Who.protect: the client adapters' facts, handed in by the hook entry).
GUARDED_DIRS = (".git",)
GUARDED_FILES = (".spark-git.toml",)
# git's user configuration (`~/.gitconfig`, `~/.config/git/`): core.hooksPath there would run in
# spark-git's own git. Guarded by the hook only (Claude Code's sandbox writes nothing outside the
# worktree and temp dirs; the per-worktree denyWrite list stays as it was).
GIT_USER_CONFIG = ".gitconfig"
# The user's start-up files under HOME: what a login or interactive shell, git, ssh or the desktop runs
# as the human. No tool call writes them (an agent's line there would run outside every box).
STARTUP = (".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin",
           ".inputrc", ".pam_environment", ".xprofile", ".xsessionrc", ".gitconfig", ".ssh", ".config/git", ".config/fish",
           ".config/environment.d", ".config/autostart", ".config/systemd/user")


class Who:
    """The caller of one tool call: its repo, the place its session was launched in, its sessions
    (to match locks), the environment its shell words are expanded with and the client directories
    no agent writes (each client's config: they switch hooks off)."""

    __slots__ = ("env", "me", "protect", "repo", "sessions")

    def __init__(self, repo: Repo, me: Place, sessions: set[str], env: dict[str, str], protect: tuple[str, ...] = ()) -> None:
        self.repo = repo
        self.me = me
        self.sessions = sessions
        self.env = env
        self.protect = protect

    @property
    def agent(self) -> bool:
        return self.me.kind == "agent" and bool(self.me.task and self.me.agent)


def task_state(repo: Repo, task: str) -> str | None:
    tf = paths.read_json(paths.task_json(repo.tasks_root, task))
    return tf.get("state") if tf else None


def holds_main_lock(repo: Repo, sessions: set[str]) -> bool:
    lock = paths.read_json(paths.main_lock(repo.tasks_root))
    return lock is not None and lock.get("session_id") in sessions


def is_source(rel: tuple[str, ...]) -> bool:
    if not rel:
        return True
    if rel[0] in DOC_DIRS:
        return False
    return not rel[-1].lower().endswith(DOC_SUFFIXES)


def guarded(resolved: Path, protect: tuple[str, ...]) -> str | None:
    """The guarded name in `resolved` (.claude, .git, .spark-git.toml, ...), if any; `protect`: the
    clients' own directories."""
    parts = resolved.parts
    dirs = (*protect, *GUARDED_DIRS)
    hit = next((p for p in parts if p in dirs), None)
    if hit is None and parts and parts[-1] in (*GUARDED_FILES, GIT_USER_CONFIG):
        hit = parts[-1]
    if hit is None and any(parts[i : i + 2] == (".config", "git") for i in range(len(parts) - 1)):
        hit = ".config/git"  # git's XDG configuration, read like ~/.gitconfig
    return hit


def startup(resolved: Path, home: str | None) -> str | None:
    """The start-up file (STARTUP) `resolved` is or is in, under the user's HOME (the environment's and
    the account's)."""
    for h in {real(os.path.expanduser("~")), *([real(home)] if home else [])}:
        if resolved.is_relative_to(h):
            rel = resolved.relative_to(h).parts
            hit = next((s for s in STARTUP if rel[: len(Path(s).parts)] == Path(s).parts), None)
            if hit is not None:
                return hit
    return None


def keys_dir(resolved: Path) -> bool:
    """`resolved` (symlinks resolved) is in the user's spark-git state directory: the approval key, the
    approvers, the verdict keys. Where the agent's environment says it is: an agent started without
    the human's XDG_STATE_HOME (`agent run`) guards the default one."""
    d = paths.state_dir()
    return any(resolved.is_relative_to(p) for p in (d, real(d)))


def keys_refused(agent: str, shown: str) -> Decision:
    return Decision(False, f"spark-git: blocked: agent {agent} may not read or write the user's spark-git state directory {paths.state_dir()} "
                           f"({shown}): it holds the approval key, the approvers and the verdict keys, which only the human's `spark-git approve` uses")


def absolute(target: str, cwd: Path) -> Path:
    path = Path(os.path.expanduser(target))
    return real(path if path.is_absolute() else cwd / path)  # symlinks and `..` resolved


def decide_write(who: Who, cwd: Path, target: str, shell: bool = False) -> Decision:
    resolved = absolute(target, cwd)
    there = who.repo.locate(resolved)
    shown = f"{target} (→ {resolved})" if str(resolved) != target else target
    hit = startup(resolved, who.env.get("HOME"))
    if hit is not None:
        return Decision(False, f"spark-git: blocked: {shown} is the user's start-up file ~/{hit}: a shell, git or ssh runs it as the human, "
                               "outside every box; no tool call writes it — ask the human to change it")
    if who.agent:
        return _agent_write(who, there, resolved, shown)
    if spark_records(who.repo, resolved):
        return Decision(
            False,
            f"spark-git: blocked: {shown} holds spark-git's records (verdicts, archive refs, sessions) or the packed refs; "
            "only spark-git writes them — use `spark-git merge` / `spark-git complete` / `spark-git cleanup`",
        )
    return _coordinator_write(who, there, shown, shell)


def spark_records(repo: Repo, resolved: Path) -> bool:
    """Files under the git common dir that hold spark-git's verdict notes, archive refs and records
    (and packed-refs, where any ref can be rewritten): written by hand, they forge what the gates read."""
    try:
        rel = resolved.relative_to(repo.common).parts
    except ValueError:
        return False
    if rel[:1] == ("logs",):
        rel = rel[1:]
    return rel[:1] in (("spark",), ("packed-refs",)) or rel[:2] == ("refs", "spark") or (
        rel[:2] == ("refs", "notes") and len(rel) > 2 and rel[2].startswith("spark"))


def _agent_write(who: Who, there: Place, resolved: Path, shown: str) -> Decision:
    repo, task, agent = who.repo, who.me.task or "", who.me.agent or ""
    bad = guarded(resolved, who.protect)
    if bad is not None:  # anywhere: ~/.claude/settings.json switches hooks off as well as the worktree's
        return Decision(
            False,
            f"spark-git: blocked: agent {agent} may not write {bad} ({shown}): it holds the hooks, git's or spark-git's "
            "own configuration; ask the coordinator",
        )
    if there.kind == "agent" and (there.task, there.agent) == (task, agent):
        return Decision(True, f"spark-git: allowed: agent {agent} writes in its own worktree")
    if there.kind == "taskdir" and there.task == task and (
        there.rel[:2] == (paths.AGENTS, agent) or there.rel == (paths.requirements_name(task, agent),)
    ):
        return Decision(True, f"spark-git: allowed: agent {agent} writes its own report")
    if keys_dir(resolved):
        return keys_refused(agent, shown)
    if there.kind != "outside" or resolved.is_relative_to(repo.common):
        own = paths.agent_dir(repo.tasks_root, task, agent)
        return Decision(
            False,
            f"spark-git: blocked: agent {agent} of task {task} may write only in its own worktree "
            f"and its reports under {own}; {shown} is {describe(there)}",
        )
    return Decision(True, "spark-git: allowed: outside the repository")


def _coordinator_write(who: Who, there: Place, shown: str, shell: bool) -> Decision:
    # The coordinator: any session not launched in an agent worktree.
    if there.kind == "agent":
        return Decision(
            False,
            f"spark-git: blocked: {shown} is in agent {there.agent}'s worktree of task {there.task}; "
            f"only that agent writes there — delegate the change to it (its work lands with `spark-git merge {there.task} --agent {there.agent}`)",
        )
    if shell:  # the coordinator's shell keeps its freedom outside agent worktrees (build dirs, scratch files)
        return Decision(True, f"spark-git: allowed: {describe(there)}")
    if there.kind == "task" and there.task and task_state(who.repo, there.task) == "IMPLEMENTATION" and is_source(there.rel):
        return Decision(
            False,
            f"spark-git: blocked: task {there.task} is in IMPLEMENTATION: source changes in the task worktree come from agents "
            f"and land with `spark-git merge {there.task} --agent A` (the coordinator may edit docs and *.md; {shown} is source)",
        )
    if there.kind == "main" and not holds_main_lock(who.repo, who.sessions):
        return Decision(
            False,
            f"spark-git: blocked: {shown} is in the main worktree and this session does not hold the main lock; "
            "work in a task (`spark-git start`) or take it with `spark-git lock main`",
        )
    return Decision(True, f"spark-git: allowed: {describe(there)}")


def describe(pl: Place) -> str:
    return {
        "agent": f"in agent {pl.agent}'s worktree of task {pl.task}",
        "task": f"in the task worktree of {pl.task}",
        "taskdir": f"in the task directory of {pl.task}",
        "root": "the tasks root",
        "main": "in the main worktree",
        "outside": "outside the repository",
    }[pl.kind]
