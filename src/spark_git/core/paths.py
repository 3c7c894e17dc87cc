"""The on-disk layout of a spark-git repo: the tasks root, where task and agent worktrees live, and
which directories are tasks. Standard library only: the pre-tool-use hook uses this before every tool
call of an agent (no git process, no pydantic), and core/layout.py's Layout builds on it."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from spark_git.core import hookconfig

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs the hook milliseconds)
if TYPE_CHECKING:
    from typing import Any

TASKS_SUFFIX = ".tasks"  # default tasks root: "<main worktree>.tasks" beside it
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
MAIN_LOCK_DIR = "main"
PORTS_FILE = "ports.json"
# names of the tasks root's own entries, never a task's: what each holds
RESERVED_TASK_NAMES = {MAIN_LOCK_DIR: "the main-worktree lock", PORTS_FILE: "the worktrees' ports"}
TASK_JSON = "task.json"
CODE = "code"  # the worktree inside a task or agent directory
AGENTS = "agents"


def real(p: str | Path) -> Path:
    """Symlinks and `..` resolved, whether or not `p` exists (same as Path.resolve(strict=False))."""
    return Path(os.path.realpath(p))


def linked_admin(worktree: Path) -> Path | None:
    """A linked worktree's own directory under `<common>/worktrees/`, read from its `.git` file (no git
    process); None for a main worktree or an unreadable file."""
    try:
        text = (worktree / ".git").read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    return real(worktree / text[len("gitdir:"):].strip())  # an absolute gitdir replaces the worktree


def git_dir_of(worktree: Path) -> Path | None:
    """The worktree's own git dir, read from its `.git` (a directory, or a file naming one), as git reads
    it but without a git process; None when there is neither."""
    dotgit = worktree / ".git"
    return dotgit if dotgit.is_dir() else linked_admin(worktree)


def state_dir() -> Path:
    """The user's spark-git state directory ($XDG_STATE_HOME/spark-git, default ~/.local/state/spark-git):
    the approval key and approvers (core/sshsig.py) and the verdict keys (gates/verdictkey.py), which no
    agent may read or write (issue 23: the clients' sandboxes and deny rules, and the hook)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "spark-git"


# -- the tasks root -----------------------------------------------------------------------------


def default_tasks_root(main: Path) -> Path:
    return Path(f"{main}{TASKS_SUFFIX}")


def resolve_tasks_root(main: Path, configured: str | None) -> Path:
    """`configured` (the config's tasks_root; relative to the main worktree, `~` expanded) or the
    default, resolved."""
    if not configured:
        return real(default_tasks_root(main))
    p = Path(os.path.expanduser(configured))
    return real(p if p.is_absolute() else main / p)


# -- paths under the tasks root -----------------------------------------------------------------


def task_dir(root: Path, task: str) -> Path:
    return root / task


def task_json(root: Path, task: str) -> Path:
    return root / task / TASK_JSON


def task_worktree(root: Path, task: str) -> Path:
    return root / task / CODE


def agent_dir(root: Path, task: str, agent: str) -> Path:
    return root / task / AGENTS / agent


def agent_worktree(root: Path, task: str, agent: str) -> Path:
    return agent_dir(root, task, agent) / CODE


def requirements_name(task: str, agent: str) -> str:
    """File name of an agent's requirements report, in the task directory."""
    return f"{task}-{agent}-requirements.md"


def main_lock(root: Path) -> Path:
    return root / MAIN_LOCK_DIR / TASK_JSON


def is_task_dir(p: Path) -> bool:
    """A task directory: the right name and a task.json or an audit trail in it."""
    return is_task_dir_name(p.name) and ((p / TASK_JSON).is_file() or (p / "audit-trail.json").is_file())


def is_task_dir_name(name: str) -> bool:
    """A directory under the tasks root with this name holds (or held) a task."""
    return name not in RESERVED_TASK_NAMES and NAME_RE.match(name) is not None


def read_json(path: Path) -> dict[str, Any] | None:
    """A task.json (or main lock) as plain JSON, for the hook: None when missing or unreadable
    (the full CLI reports corruption)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# -- where a path is ----------------------------------------------------------------------------


class Place:
    # A plain class, not a dataclass: building dataclasses costs the hook ~20 ms per call.
    __slots__ = ("agent", "kind", "rel", "task")

    def __init__(self, kind: str, task: str | None = None, agent: str | None = None, rel: tuple[str, ...] = ()) -> None:
        self.kind = kind  # "agent" (an agent worktree), "task" (a task worktree), "taskdir" (task files), "root", "main", "outside"
        self.task = task
        self.agent = agent
        self.rel = rel  # path parts inside the worktree / task dir


def locate(tasks_root: Path, p: Path, main: Path | None = None) -> Place:
    """Where the resolved path `p` is; both roots resolved. Without `main`, anything outside the
    tasks root is "outside"."""
    try:
        parts = p.relative_to(tasks_root).parts
    except ValueError:
        parts = None
    if parts is not None:
        if not parts:
            return Place("root")
        task = parts[0]
        if len(parts) >= 2 and parts[1] == CODE:
            return Place("task", task, None, parts[2:])
        if len(parts) >= 4 and parts[1] == AGENTS and parts[3] == CODE:
            return Place("agent", task, parts[2], parts[4:])
        return Place("taskdir", task, None, parts[1:])
    if main is not None:
        try:
            return Place("main", rel=p.relative_to(main).parts)
        except ValueError:
            pass
    return Place("outside")


# -- finding the repo without git ---------------------------------------------------------------


class Repo:
    __slots__ = ("common", "config_error", "main", "tasks_root")

    def __init__(self, main: Path, common: Path, tasks_root: Path, config_error: str | None = None) -> None:
        self.main = main  # main worktree (resolved)
        self.common = common  # git common dir (resolved)
        self.tasks_root = tasks_root  # resolved
        self.config_error = config_error  # the config did not parse: the hook blocks rather than guess

    def locate(self, p: Path) -> Place:
        return locate(self.tasks_root, p, self.main)


def _common_dir(cand: Path) -> Path | None:
    """The git common dir of the worktree at `cand` (which has `.git`): follows `gitdir:` and
    `commondir` in linked worktrees."""
    dotgit = cand / ".git"
    if dotgit.is_dir():
        return dotgit
    try:
        text = dotgit.read_text().strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    gitdir = Path(text[len("gitdir:"):].strip())
    if not gitdir.is_absolute():
        gitdir = cand / gitdir
    try:
        rel = (gitdir / "commondir").read_text().strip()
    except OSError:
        return gitdir  # a submodule-style gitdir with no commondir: it is its own repo
    return Path(rel) if Path(rel).is_absolute() else gitdir / rel


def find_repo(start: Path) -> Repo | None:
    """Walks up from `start` to the first `.git`. None when not in a repo (or a bare one)."""
    d = real(start)
    for cand in (d, *d.parents):
        if (cand / ".git").is_dir() or (cand / ".git").is_file():
            common = _common_dir(cand)
            break
    else:
        return None
    if common is None:
        return None
    common = real(common)
    if common.name != ".git":
        return None  # separate git dir or bare: only the full CLI knows its main worktree
    main = common.parent
    root, error = hookconfig.tasks_root(main, common)
    return Repo(main, common, resolve_tasks_root(main, root), error)


def repo_around(p: Path) -> Repo | None:
    """The repo `p` is in, or whose default tasks root (`<main>.tasks`) `p` is in: a coordinator
    standing in `<repo>.tasks/<task>/` is not inside any git worktree."""
    repo = find_repo(p)
    if repo is not None:
        return repo
    for d in (real(p), *real(p).parents):
        if d.name.endswith(TASKS_SUFFIX) and len(d.name) > len(TASKS_SUFFIX):
            main = d.with_name(d.name[: -len(TASKS_SUFFIX)])
            if (main / ".git").is_dir():
                found = find_repo(main)
                return found if found is not None and found.tasks_root == d else None
    return None
