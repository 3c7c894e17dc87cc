"""A task landing through the forge (`complete --via`, landing/complete_via.py opens the PR/MR): what
`queue` and `status` show of it, asked of the forge (`gh pr view` / `glab mr view`), and a merge or
a close seen there recorded (the transition, the note, the queue's outcome, the base fast-forwarded)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from spark_git.core.errors import SparkError
from spark_git.core.git import Git, branch_ref
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.state.models import TaskFile, now
from spark_git.state.store import Store

if TYPE_CHECKING:
    from spark_git.core import forge


class ForgeView(Model):
    """A task's PR/MR as `queue` and `status` show it (`error`: the forge could not be asked)."""

    task: str
    via: str
    url: str
    number: str
    head: str
    state: Literal["open", "merged", "closed"]
    merged_at: str | None = None
    merge_commit: str | None = None
    error: str | None = None


def view_of(tf: TaskFile, error: str | None = None) -> ForgeView | None:
    m = tf.forge
    if m is None:
        return None
    return ForgeView(task=tf.task_name, via=m.via, url=m.url, number=m.number, head=m.head, state=m.state, merged_at=m.merged_at,
                     merge_commit=m.merge_commit, error=error)


def observe(layout: Layout, store: Store, tf: TaskFile) -> ForgeView | None:
    """Asks the forge about the task's open PR/MR and records a merge or a close (never fails: an
    unanswered question is the view's `error`)."""
    m = tf.forge
    if m is None or m.state != "open":
        return view_of(tf)
    from spark_git.core import forge  # lazy, like the recording below: `status` shows tasks without a PR/MR at no cost

    try:
        seen = forge.cli(m.via).view(layout.main_worktree, forge.Opened(m.url, m.number))
        if seen.state != "open":
            tf = _record(layout, store, tf.task_name, seen) or tf
    except SparkError as e:
        return view_of(tf, e.message)
    return view_of(tf)


def _record(layout: Layout, store: Store, task: str, seen: forge.Seen) -> TaskFile | None:
    from spark_git.ops.queue.land import record_outcome  # lazy: only a PR/MR seen merged or closed is recorded
    from spark_git.ops.shared.taskfile import updating
    from spark_git.ops.shared.transitions import record_transition
    from spark_git.state.queuelog import QueueOutcome

    with updating(store, task, None, owner=False) as tf:
        m = tf.forge
        if m is None or m.state != "open":
            return tf  # recorded already
        m.state, m.merged_at, m.merge_commit, m.seen_at = seen.state, seen.merged_at, seen.merge_commit, now()
        session = m.session_id
        if seen.state == "merged":
            store.add_notes([(m.head, {"kind": "completed", "task": task, "session": session, "base": tf.base_branch, "via": m.via,
                                       "url": m.url, "landed_as": seen.merge_commit, "merged_at": seen.merged_at})])
            record_transition(store, tf, "COMPLETE", session, f"merged on the forge ({m.via}): {m.url}",
                              {"commit": m.head, "landed_commit": seen.merge_commit, "via": m.via, "url": m.url})
            store.event(task, "completed", session, base=tf.base_branch, via=m.via, url=m.url, landed_commit=seen.merge_commit)
        else:
            store.event(task, "forge_closed", session, via=m.via, url=m.url)
        record_outcome(store, QueueOutcome(task=task, ref=m.url, head=m.head, result="landed" if seen.state == "merged" else "blocked",
                                           reason=f"merged through {m.via}: {m.url}" if seen.state == "merged" else f"closed on the forge unmerged: {m.url}",
                                           landed_commit=seen.merge_commit))
    if seen.state == "merged":
        _take_base(layout, tf)
    return tf


def _take_base(layout: Layout, tf: TaskFile) -> None:
    """The base as the forge left it, fast-forwarded here when that is a fast-forward (then `cleanup`
    finds the task contained in it); otherwise left for the user to pull."""
    from spark_git.core.gitremote import Remote  # lazy: see _record

    assert tf.forge is not None
    git, base = layout.git(), tf.base_branch
    try:
        Remote(git, tf.forge.remote).fetch_refs({branch_ref(base): f"refs/remotes/{tf.forge.remote}/{base}"})
        theirs, mine = git.rev_parse(f"refs/remotes/{tf.forge.remote}/{base}"), git.branch_head(base)
        if theirs is None or mine is None or theirs == mine or not git.is_ancestor(mine, theirs):
            return
        wt = next((w.path for w in git.worktrees() if w.branch == base), None)
        if wt is None:
            git.update_ref(branch_ref(base), theirs, mine, message=f"spark-git: {base} as merged on the forge")
        elif not Git(wt).status():
            Git(wt).merge_ff_only(theirs)
    except SparkError:
        return  # the merge is recorded; the base is the user's to pull


def refresh_all(layout: Layout, store: Store) -> list[ForgeView]:
    """Every task of this clone with a PR/MR: the open ones asked about (and recorded), all shown."""
    res = []
    for name in layout.task_names():
        try:
            tf = store.read_task_here(name)
        except SparkError:
            continue
        if tf is not None and tf.forge is not None:
            v = observe(layout, store, tf)
            if v is not None:
                res.append(v)
    return res
