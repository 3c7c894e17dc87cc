"""Claude Code's worktree hooks: `hook worktree-create` gives a session that belongs to a task (its
coordinator, or one of its agents) a spark-git agent worktree of that task instead of a bare
`.claude/worktrees/<name>` under the main worktree; outside any task, a plain `git worktree add` under
the tasks root. `hook worktree-remove` archives before it deletes: uncommitted work and the branch head
go to refs/spark/archive first."""

from __future__ import annotations

import re
from pathlib import Path

from spark_git.clients import extras, registry
from spark_git.core import paths
from spark_git.core.errors import BadInput
from spark_git.core.git import Git
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.guard import identity
from spark_git.ops.life.agent_add import add_agent
from spark_git.ops.shared import archive
from spark_git.protocol import agent_add_guard
from spark_git.state.backends import open_store
from spark_git.state.store import Store

PLAIN_DIR = ".worktrees"  # <tasks_root>/.worktrees/<name>: not a task name (those start with [a-z0-9])
# Archive refs of plain worktrees: refs/spark/archive/_worktrees/…, a name no task can have (a ref
# component cannot start with "." like PLAIN_DIR). No audit event: there is no task to log it in.
PLAIN_ARCHIVE = "_worktrees"
ENDED = ("COMPLETED", "ABANDONED")


class WorktreeHookData(Model):
    path: str
    task: str | None = None  # None: a plain worktree, outside any task
    agent: str | None = None
    branch: str | None = None
    action: str  # created, reused, plain (create); removed, kept (an agent's, until cleanup), absent (remove)
    archived: list[archive.Archived] = []
    note: str | None = None


def derive_agent(name: str) -> str:
    """An agent name from the client's worktree name: lowercase, other characters as '-'."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")
    slug = re.sub(r"\.{2,}", ".", slug)[:63].rstrip("-.")
    slug = slug[:-5] if slug.endswith(".lock") else slug
    return slug or "worktree"


def _owned(store: Store, sessions: set[str]) -> list[str]:
    out = []
    for t in store.task_names():
        tf = store.read_task(t)
        if tf is not None and tf.session_id in sessions and tf.state not in ENDED:
            out.append(t)
    return out


def task_of(store: Store, session: str | None, sessions: set[str], cwd: Path) -> tuple[str | None, bool]:
    """(task the session belongs to, whether it owns the task lock); (None, False) outside any task."""
    repo = paths.repo_around(cwd)
    if repo is None:
        return None, False
    me = identity.caller(repo, session, str(cwd))
    if me.kind == "agent" and me.task:
        return me.task, False
    owned = _owned(store, sessions)
    if me.task in owned:
        return me.task, True
    if len(owned) > 1:
        raise BadInput(f"session owns several tasks ({', '.join(owned)}) and was not started in one of them: "
                       "start the client in the task worktree to say which task the worktree is for")
    return (owned[0], True) if owned else (None, False)


def create(layout: Layout, name: str, *, session: str | None, sessions: set[str], cwd: Path, client: str) -> WorktreeHookData:
    if not name.strip():
        raise BadInput("worktree-create: the event has no name")
    store = open_store(layout)
    task, owner = task_of(store, session, sessions, cwd)
    if task is None:
        return _plain(layout, name)
    agent = derive_agent(name)
    tf = store.read_task(task)
    entry = tf.agents.get(agent) if tf else None
    if entry is not None and Path(entry.worktree).is_dir():
        d = WorktreeHookData(path=entry.worktree, task=task, agent=agent, branch=entry.branch, action="reused")
    else:
        # Recorded as added by the lock's session when it is one of this event's (SPARK_SESSION_ID), else the event's.
        by = tf.session_id if owner and tf is not None and tf.session_id in sessions else session
        if session:
            # Claimed before it exists: agent add's sandbox refresh then grants the new worktree to the
            # launching agent in the same write (Claude Code's settings watcher can miss a second one).
            identity.claim(layout.repo.common_dir, task, agent, session)
        try:
            a = add_agent(layout, store, task, agent, why=f"created by {client} for {name}", session=by,
                          guard=agent_add_guard(store), owner=owner)
        except BaseException:
            if session:
                identity.claim_path(layout.repo.common_dir, task, agent).unlink(missing_ok=True)
            raise
        failed = next((r.failed for r in a.provisioning if r.failed), None)
        note = f"setup command failed (exit {failed.exit_code}, log {failed.log})" if failed else None
        note = "; ".join(n for n in (note, _settle(layout, store, Path(a.worktree), client)) if n) or None
        d = WorktreeHookData(path=a.worktree, task=task, agent=agent, branch=a.branch, action="created", note=note)
    # Only a worktree made now is claimed (above): an existing one (another agent's, or made for another
    # session) is handed out but judged as before, else naming it would take over its identity.
    return d


def _plain(layout: Layout, name: str) -> WorktreeHookData:
    slug = derive_agent(name)
    path = layout.tasks_root / PLAIN_DIR / slug
    branch = f"worktree-{slug}"
    if path.is_dir():
        return WorktreeHookData(path=str(path), branch=branch, action="reused", note=f"not in a spark-git task: reusing the plain worktree {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    layout.git().run("worktree", "add", "--quiet", "-b", branch, str(path), "HEAD")
    return WorktreeHookData(path=str(path), branch=branch, action="plain",
                            note=f"not in a spark-git task: plain worktree {path} on new branch {branch} (spark-git does not track it)")


def remove(layout: Layout, worktree: Path, *, session: str | None) -> WorktreeHookData:
    """Archive before delete. A plain worktree (made outside any task): its uncommitted work archived,
    then removed, its branch kept. A spark-git agent worktree: its uncommitted work archived, the
    worktree kept until the task ends (`cleanup` archives and removes it; until then its commits
    land with `merge`, which needs the worktree)."""
    path = paths.real(worktree)
    if not path.is_dir():
        return WorktreeHookData(path=str(worktree), action="absent", note=f"{worktree} does not exist; nothing to remove")
    place = paths.locate(paths.real(layout.tasks_root), path)
    task, agent = (place.task, place.agent) if place.kind == "agent" and not place.rel else (None, None)
    if task is None and not path.is_relative_to(paths.real(layout.tasks_root / PLAIN_DIR)):
        raise BadInput(f"{worktree} is neither a spark-git agent worktree nor a worktree made by `hook worktree-create`; "
                       "spark-git will not remove it", hint=f"git worktree remove {worktree}")
    store = open_store(layout)
    kept = _archive(store, task, agent or path.name, path, session)
    if task and agent:
        store.event(task, "worktree_remove_deferred", session, agent=agent, worktree=str(path), archived=[a.ref for a in kept])
        return WorktreeHookData(path=str(path), task=task, agent=agent, branch=layout.agent_branch(task, agent), action="kept", archived=kept, note=(
            f"agent {agent}'s worktree stays until task {task} ends (`spark-git cleanup {task}` archives and removes it); "
            f"its commits land with `spark-git merge {task} --agent {agent}`"))
    layout.git().run("worktree", "remove", "--force", "--force", str(path))  # its work was archived above
    return WorktreeHookData(path=str(path), action="removed", archived=kept)


def _archive(store: Store, task: str | None, label: str, path: Path, session: str | None) -> list[archive.Archived]:
    """The worktree's uncommitted work (or a detached HEAD) archived under its task, or under
    PLAIN_ARCHIVE without an audit event for a plain worktree (None)."""
    wt = Git(path)
    out: list[archive.Archived] = []
    head = wt.rev_parse("HEAD")
    files = [e.path for e in wt.status()]
    where, logged = (task, True) if task else (PLAIN_ARCHIVE, False)
    if files:
        out.append(archive.keep_uncommitted(store, where, label, path, files, session, event=logged))
    elif head and wt.current_branch() is None:  # a detached HEAD: no branch keeps its commits
        out.append(archive.keep(store, where, f"head-{label}", head, f"detached HEAD of {path}", session, event=logged))
    return out


def _settle(layout: Layout, store: Store, worktree: Path, client: str) -> str | None:
    """The client's own wait until its session can use the new worktree (Claude Code: its sandbox grant)."""
    return extras.of(registry.get(client)).settle(layout, store, worktree) if client in registry.CLIENTS else None
