"""What doctor reads once per run and indexes, so every task's checks are lookups: the registered
worktrees (by task directory), the branch heads (sorted, for prefix ranges), and which recorded merge
commits the task branches contain (one `rev-list` for all tasks). Also the findings it collects."""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from spark_git.core.errors import CorruptState
from spark_git.core.git import Git, Worktree
from spark_git.core.gitattest import ATTEST_REF
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.state.files import read_optional
from spark_git.state.models import TaskFile, parse_time
from spark_git.state.store import Store


class Finding(Model):
    where: str  # task name, "main lock", "git"
    kind: str  # stable identifier, e.g. "worktree-missing"
    problem: str
    repair: str  # the exact command, or what --fix does
    broken: bool = True  # False: a note (idle lock, interrupted command its owner resumes)
    fixable: bool = False  # --fix repairs it
    fixed: bool = False
    error: str | None = None  # why a fix failed
    details: dict[str, Any] = {}


class DoctorData(Model):
    tasks_checked: int
    findings: list[Finding]
    broken: int  # problems that remain
    fixed: int
    dry_run: bool = False  # --fix --dry-run: `fixable` findings are what --fix would repair; nothing was changed


Fix = Callable[[], None]


@dataclass
class Ctx:
    layout: Layout
    store: Store  # the command's one Store
    git: Git
    session: str | None
    registered: dict[Path, Worktree]  # resolved path -> worktree, in `git worktree list` order
    heads: dict[str, str]  # refs/heads/... -> sha, in refname order
    findings: list[tuple[Finding, Fix | None, str | None]] = field(default_factory=list)
    handled: set[Path] = field(default_factory=set)  # worktree paths a task check already reported
    by_task_dir: dict[str, list[Path]] = field(default_factory=dict)  # registered worktrees under <tasks_root>/<name>/
    branch_names: list[str] = field(default_factory=list)  # short names of `heads`, sorted
    merged: set[tuple[str, str]] = field(default_factory=set)  # (commit, task head) pairs known to be ancestry
    attested: bool = False  # refs/notes/spark-attest exists: spark-git attests this repo's landings

    @classmethod
    def scan(cls, layout: Layout, store: Store, session: str | None) -> Ctx:
        git = layout.git()
        refs = git.refs("refs/heads/", ATTEST_REF)  # one for-each-ref: the branch heads, and whether landings are attested
        heads: dict[str, str] = {ref: sha for ref, sha in refs.items() if ref.startswith("refs/heads/")}
        ctx = cls(layout, store, git, session, {wt.path.resolve(): wt for wt in git.worktrees()}, heads, attested=ATTEST_REF in refs)
        root = layout.tasks_root
        for p in ctx.registered:
            if p.is_relative_to(root) and p != root:
                ctx.by_task_dir.setdefault(p.relative_to(root).parts[0], []).append(p)
        ctx.branch_names = sorted(ref.removeprefix("refs/heads/") for ref in ctx.heads)
        return ctx

    def add(self, f: Finding, fix: Fix | None = None, task: str | None = None) -> None:
        f.fixable = fix is not None
        self.findings.append((f, fix, task))

    def worktrees_under(self, task: str) -> list[tuple[Path, Worktree]]:
        """Registered worktrees inside the task's directory, in `git worktree list` order."""
        root = self.layout.task_dir(task).resolve()
        if root == self.layout.tasks_root / task:
            return [(p, self.registered[p]) for p in self.by_task_dir.get(task, [])]
        return [(p, wt) for p, wt in self.registered.items() if p.is_relative_to(root)]  # a symlinked task dir

    def branches_with_prefix(self, prefix: str) -> list[str]:
        names = self.branch_names
        i = bisect_left(names, prefix)
        out = []
        while i < len(names) and names[i].startswith(prefix):
            out.append(names[i])
            i += 1
        return out

    def contained(self, sha: str, *refs: str) -> bool:
        return any(r and self.git.rev_parse(r) is not None and self.git.is_ancestor(sha, r) for r in refs)

    def index_merges(self, pairs: list[tuple[str, str, str]]) -> None:
        """Confirms which recorded merges (commit, task head, base commit) the task heads contain, with
        one `cat-file` and one `rev-list` walk for all tasks (down to the bases and the merges' parents).
        What the walk does not confirm, `merged_into` asks git about, pair by pair."""
        todo = {(s, h) for s, h, _ in pairs if s != h}
        self.merged |= {(s, h) for s, h, _ in pairs if s == h}
        if not todo:
            return
        with self.git.objects() as objs:
            stops = sorted({s for s, _ in todo if objs.commit_exists(s)})
        revs = sorted({h for _, h in todo}) + [f"^{b}" for b in sorted({b for *_, b in pairs})] + [f"^{s}^@" for s in stops]
        walk = self.git.run("rev-list", "--parents", "--stdin", input="".join(f"{r}\n" for r in revs), check=False)
        if walk.returncode != 0:
            return  # e.g. a base commit is gone: every pair goes to git on its own
        parents = {c: ps for c, *ps in (ln.split() for ln in walk.lines)}
        reach: dict[str, set[str]] = {}
        for s, h in todo:
            if h not in reach:
                reach[h] = _reachable(h, parents)
            if s in reach[h]:
                self.merged.add((s, h))

    def merged_into(self, sha: str, head: str) -> bool:
        if (sha, head) in self.merged:
            return True
        return self.git.rev_parse(sha) is not None and self.git.is_ancestor(sha, head)


def _reachable(head: str, parents: dict[str, list[str]]) -> set[str]:
    seen, todo = set(), [head]
    while todo:
        c = todo.pop()
        if c in seen or c not in parents:
            continue
        seen.add(c)
        todo += parents[c]
    return seen


def idle_minutes(at: str | None) -> float | None:
    try:
        return (time.time() - parse_time(at).timestamp()) / 60 if at else None
    except ValueError:
        return None


def parses(path: Path, model: type[BaseModel]) -> bool:
    try:
        read_optional(path, model)
        return True
    except CorruptState:
        return False


def load_task(store: Store, task: str) -> TaskFile | CorruptState | None:
    """task.json as doctor reports on it: the model, the reason it cannot be read, or None (absent)."""
    try:
        return store.read_task_here(task)
    except CorruptState as e:
        return e
