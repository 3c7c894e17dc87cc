"""Where things are: the repo, the tasks root, task and agent paths, branch names, name rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NewType

from spark_git.core import paths
from spark_git.core.config import Config, check_tasks_root, load_config, with_local_sync
from spark_git.core.errors import BadInput
from spark_git.core.git import Git, LocalBranch, RepoInfo
from spark_git.core.paths import NAME_RE, RESERVED_TASK_NAMES

TaskName = NewType("TaskName", str)
AgentName = NewType("AgentName", str)

LOCAL_SYNC = "remote.toml"  # this clone's [sync] keys, under <git-common-dir>/spark/
NAME_RULE = "lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, at most 63 characters, no '..', not ending in '.lock'"


def check_name(kind: str, name: str) -> str:
    """Raises BadInput naming the rule `name` breaks."""
    shown = repr(name)
    if not name:
        problem = "is empty"
    elif any(ord(c) < 32 or ord(c) == 127 for c in name):
        problem = "contains a control character"
    elif len(name) > 63:
        problem = f"is {len(name)} characters long (at most 63)"
    elif ".." in name:
        problem = "contains '..'"
    elif name.endswith(".lock"):
        problem = "ends in '.lock'"
    elif not NAME_RE.match(name):
        problem = "may only use " + NAME_RULE
    else:
        return name
    raise BadInput(f"bad {kind} name {shown}: it {problem}", hint=f"{kind} names use {NAME_RULE}", details={"name": name, "kind": kind},
                   next=["spark-git status"])


def task_name(name: str) -> TaskName:
    check_name("task", name)
    if name in RESERVED_TASK_NAMES:
        raise BadInput(f"bad task name {name!r}: it is reserved (<tasks_root>/{name} holds {RESERVED_TASK_NAMES[name]})",
                       hint="name the task otherwise; `spark-git status` lists the tasks", next=["spark-git status"])
    return TaskName(name)


def agent_name(name: str) -> AgentName:
    return AgentName(check_name("agent", name))


@dataclass(frozen=True)
class Layout:
    repo: RepoInfo
    config: Config
    config_source: str | None
    tasks_root: Path
    wait: bool = True  # False (`--no-wait`): a held task/main/worktrees mutex refuses at once (exit 3)
    # What one command opens once (the remote store, which fetches the remote's locks once): per
    # Layout, so per command, never per process.
    cache: dict[str, object] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def discover(cls, start: Path) -> Layout:
        info = Git(start).discover()
        config, source = load_config(info.main_worktree, info.common_dir)
        config = with_local_sync(config, info.common_dir / "spark" / LOCAL_SYNC)
        root = paths.resolve_tasks_root(info.main_worktree, config.tasks_root)
        check_tasks_root(root, info.main_worktree, info.common_dir, configured=bool(config.tasks_root))
        return cls(info, config, source, root)

    # -- git -------------------------------------------------------------------------------

    @property
    def main_worktree(self) -> Path:
        return self.repo.main_worktree

    def git(self, where: Path | None = None) -> Git:
        return Git(where or self.main_worktree)

    @property
    def spark_dir(self) -> Path:
        """Process mutexes; inside the common dir so every worktree shares them, never committed."""
        return self.repo.common_dir / "spark"

    # -- paths -----------------------------------------------------------------------------

    def task_dir(self, task: str) -> Path:
        return paths.task_dir(self.tasks_root, task)

    def task_json(self, task: str) -> Path:
        return paths.task_json(self.tasks_root, task)

    def task_md(self, task: str) -> Path:
        return self.task_dir(task) / "task.md"

    def audit_trail(self, task: str) -> Path:
        return self.task_dir(task) / "audit-trail.json"

    def audit_snapshot(self, task: str) -> Path:
        return self.task_dir(task) / "audit-snapshot.json"

    def logs_dir(self, task: str) -> Path:
        return self.task_dir(task) / "logs"

    def task_worktree(self, task: str) -> Path:
        return paths.task_worktree(self.tasks_root, task)

    def agent_dir(self, task: str, agent: str) -> Path:
        return paths.agent_dir(self.tasks_root, task, agent)

    def agent_worktree(self, task: str, agent: str) -> Path:
        return paths.agent_worktree(self.tasks_root, task, agent)

    def agent_status(self, task: str, agent: str) -> Path:
        return self.agent_dir(task, agent) / "status.json"

    def main_lock(self) -> Path:
        return paths.main_lock(self.tasks_root)

    def task_names(self) -> list[str]:
        """Directories under the tasks root that hold (or held) a task."""
        if not self.tasks_root.is_dir():
            return []
        return sorted(p.name for p in self.tasks_root.iterdir() if p.is_dir() and paths.is_task_dir_name(p.name))

    def tasks_elsewhere(self) -> tuple[Path, list[str]] | None:
        """Tasks under the default tasks root while the config names another one (tasks_root set or
        changed after they started): status and doctor name them instead of hiding them."""
        default = paths.resolve_tasks_root(self.main_worktree, None)
        if default == self.tasks_root or not default.is_dir():
            return None
        names = sorted(p.name for p in default.iterdir() if paths.is_task_dir(p))
        return (default, names) if names else None

    # -- branches --------------------------------------------------------------------------

    def task_branch(self, task: str) -> LocalBranch:
        return LocalBranch(self.config.task_branch_template.format(task=task))

    def agent_branch(self, task: str, agent: str) -> LocalBranch:
        return LocalBranch(self.config.agent_branch_template.format(task=task, agent=agent))

    def task_branch_owners(self, branch: str) -> list[str]:
        """Every valid task name whose task branch would be `branch` under the configured template."""
        return [t for t in _fills(self.config.task_branch_template, branch, "task") if NAME_RE.match(t)]

    def agent_branch_owners(self, branch: str) -> list[tuple[str, str]]:
        """Every (task, agent) of valid names whose agent branch would be `branch`: more than one, or
        one that is not the intended pair, means the templates let two things share a branch."""
        res = []
        for t in {branch[i:j] for i in range(len(branch)) for j in range(i + 1, len(branch) + 1)}:
            if NAME_RE.match(t):
                tmpl = self.config.agent_branch_template.replace("{task}", t.replace("{", "{{").replace("}", "}}"))
                res += [(t, a) for a in _fills(tmpl, branch, "agent") if NAME_RE.match(a)]
        return sorted(set(res))

    def base_branch(self) -> LocalBranch:
        if self.config.base_branch:
            return LocalBranch(self.config.base_branch)
        return self.git().current_branch() or LocalBranch("main")

    def locate(self, path: Path) -> tuple[str | None, str | None]:
        """(task, agent) whose worktree contains `path`, from the layout alone."""
        place = paths.locate(self.tasks_root, paths.real(path))
        return place.task, place.agent


def _fills(template: str, value: str, key: str) -> list[str]:
    """The values of `{key}` (the template's only placeholder left) that make `template` format to `value`."""
    sentinel = "\0"
    parts = template.format(**{key: sentinel}).split(sentinel)
    if len(parts) == 1:
        return []
    head, tail = parts[0], parts[-1]
    if not (value.startswith(head) and value.endswith(tail)) or len(value) <= len(head) + len(tail):
        return []
    cand = value[len(head): len(value) - len(tail)]
    if len(parts) == 2:
        return [cand]
    # The placeholder appears more than once: the repeated value must fill every hole.
    n = len(parts) - 1
    inner = len(value) - sum(map(len, parts))
    if inner <= 0 or inner % n:
        return []
    v = value[len(head): len(head) + inner // n]
    return [v] if template.format(**{key: v}) == value else []


def within(p: Path, root: Path) -> bool:
    """`p` is `root` or below it, symlinks resolved on both sides (False when either cannot be)."""
    try:
        return p.resolve().is_relative_to(root.resolve())
    except OSError:
        return False
