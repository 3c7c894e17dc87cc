"""The candidate of a batch: each task's commits applied in queue order onto the current base, without
a worktree. A task whose head already descends from the candidate is taken as is (fast-forward: the
commit that lands is the approved commit); otherwise each commit is replayed like `cherry-pick`
(`git merge-tree --write-tree` + `commit-tree`, same authors, dates and messages). A conflicting task
is left out with its files."""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_git.core.git import Git
from spark_git.core.gitmerge import merge_tree
from spark_git.state.queuelog import CandidatePart, QueueEntry


@dataclass
class Built:
    base: str
    parts: list[CandidatePart] = field(default_factory=list)
    conflicts: list[tuple[QueueEntry, list[str]]] = field(default_factory=list)
    rewritten: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # task -> (old, new) commits

    @property
    def tip(self) -> str:
        return self.parts[-1].tip if self.parts else self.base


def build(git: Git, base: str, entries: list[QueueEntry]) -> Built:
    out = Built(base)
    for e in entries:
        applied = apply(git, out.tip, e.sha)
        if isinstance(applied, list):
            out.conflicts.append((e, applied))
            continue
        tip, pairs = applied
        out.parts.append(CandidatePart(task=e.task, ref=e.ref, head=e.sha, tip=tip))
        out.rewritten[e.task] = pairs
    return out


def apply(git: Git, onto: str, head: str) -> tuple[str, list[tuple[str, str]]] | list[str]:
    """(new tip, [(old commit, replayed commit)]) or the conflicting files."""
    if git.is_ancestor(onto, head):
        return head, []
    tip, pairs = onto, list[tuple[str, str]]()
    for sha in git.out("rev-list", "--reverse", "--topo-order", "--no-merges", f"{onto}..{head}").split():
        headers, message = git.commit_object(sha)
        parent = headers.get("parent", [onto])[0]
        # merge-tree finds the merge base itself (git < 2.40 has no --merge-base): a commit with the
        # candidate's tree whose only parent is the commit's parent makes that parent the base, so
        # the three-way merge is exactly a cherry-pick of `sha` onto the candidate.
        ours = git.commit_tree(git.tree_of(tip), [parent], "spark-git queue: cherry-pick base", _ident(headers))
        tree, files = merge_tree(git, ours, sha)
        if tree is None:
            return files
        new = git.commit_tree(tree, [tip], message, _ident(headers))
        pairs.append((sha, new))
        tip = new
    return tip, pairs


def _ident(headers: dict[str, list[str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for key, pre in (("author", "GIT_AUTHOR"), ("committer", "GIT_COMMITTER")):
        name, _, rest = headers[key][0].partition(" <")
        email, _, date = rest.partition("> ")
        env.update({f"{pre}_NAME": name, f"{pre}_EMAIL": email, f"{pre}_DATE": date})
    return env
