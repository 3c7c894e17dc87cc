"""`cleanup` (COMPLETE → CLEANUP) and `abandon` (any state → ABANDONED): end a task without losing a
commit. Order: archive refs first, then the transition, the snapshot, worktree removal, branch
deletion (compare-and-swap), and the lock last, so a killed run leaves a lock the next run resumes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spark_git import protocol
from spark_git.core import faults
from spark_git.core.errors import BadInput, Blocked, SparkError
from spark_git.core.git import ZERO_SHA, Git, Sha, branch_ref
from spark_git.core.layout import Layout, task_name, within
from spark_git.core.model import Model
from spark_git.gates import attribution
from spark_git.ops.ending.endplan import Contained, Tree, plan
from spark_git.ops.queue.checks import approval_unmet
from spark_git.ops.shared import archive, caches, gatetree, hooksetup, keep
from spark_git.ops.shared.taskfile import load_task, no_task, save_task
from spark_git.ops.shared.transitions import record_transition
from spark_git.ops.shared.worktrees import Progress, lost_head, quiet, stray_agent_branch
from spark_git.state.backends import open_store
from spark_git.state.locks import WORKTREES, require_owner, task_mutex_name
from spark_git.state.models import AuditSnapshot, TaskFile
from spark_git.state.recorded import check_recorded
from spark_git.state.store import Store

ENDED = ("CLEANUP", "ABANDONED")


class EndData(Model):
    task: str
    final_state: str
    why: str | None = None
    archived: list[archive.Archived] = []
    removed_worktrees: list[str] = []
    deleted_branches: list[str] = []
    kept_branches: list[str] = []  # not contained in the base branch: kept (and archived)
    kept_paths: list[str] = []  # directories that are not worktrees: never deleted by spark-git
    snapshot: str
    go_to: str | None = None  # the caller stood in a removed worktree: where to cd
    already_done: bool = False
    dry_run: bool = False  # --dry-run: what a real run would do now; nothing was changed (a new commit's ref ends in NEW)


def cleanup(layout: Layout, task: str, *, session: str | None, force: bool = False, abandon: bool = False,
            why: str | None = None, caller: Path | None = None, dry_run: bool = False, progress: Progress = quiet) -> EndData:
    return _end(layout, open_store(layout), task, session=session, final="ABANDONED" if abandon else "CLEANUP", force=force or abandon,
                why=why or ("spark-git cleanup --abandon" if abandon else None), caller=caller, force_locked=force,
                dry_run=dry_run, progress=progress)


def abandon(layout: Layout, task: str, *, why: str, session: str | None, caller: Path | None = None, force: bool = False,
            dry_run: bool = False, progress: Progress = quiet) -> EndData:
    if not why.strip():
        raise BadInput("--why needs a reason; it is recorded in the audit trail")
    return _end(layout, open_store(layout), task, session=session, final="ABANDONED", force=True, why=why, caller=caller, force_locked=force,
                dry_run=dry_run, progress=progress)


def _end(layout: Layout, store: Store, task: str, *, session: str | None, final: str, force: bool, why: str | None, caller: Path | None,
         force_locked: bool = False, dry_run: bool = False, progress: Progress = quiet) -> EndData:
    task = task_name(task)
    go_to = str(layout.main_worktree) if caller is not None and within(caller, layout.task_dir(task)) else None
    if not store.has_task(task) and not layout.task_dir(task).exists():
        raise no_task(store, task)  # before the mutex: no lock file named after a typo
    with store.mutex(task_mutex_name(task)):
        if not store.has_task(task):
            done = store.read_snapshot(task)
            if done is not None and done.final_state in ENDED:
                return EndData(task=task, final_state=done.final_state, why=done.why, snapshot=str(layout.audit_snapshot(task)), go_to=go_to, already_done=True)
        tf = load_task(store, task)
        check_recorded(layout, tf)
        _check_may_end(store, tf, final, session, why)
        git = layout.git()
        trees = _trees(store, tf, git, progress)
        if tf.state == final:  # a resumed run: files a killed `worktree remove` deleted are not work
            for t in trees:
                kept = [e for e in t.dirty if not e.startswith(" D ")]
                t.partly_removed, t.dirty = len(kept) < len(t.dirty), kept
        locked = _locked(trees, force_locked, task)
        dirty = _dirty(trees, force, task)
        contained = _containment(git, tf.base_branch)
        heads = git.refs("refs/heads/")
        branches = [(b, heads[branch_ref(b)]) for b in _branches(layout, store, tf, trees, heads)]
        if dry_run:
            planned = plan(store, tf, git, trees, branches, contained, final)
            return EndData(task=task, final_state=final, why=why, snapshot=str(layout.audit_snapshot(task)), go_to=go_to, dry_run=True, **vars(planned))
        kept, archived = _keep_untracked(store, tf, trees, session, progress)
        archived += _archive(store, tf, dirty, trees, branches, contained, session, progress)
        faults.point("end-after-archive")
        _record_end(store, tf, final, session, why, archived)
        for entry in [e for e in store.queue_entries() if e.task == task]:  # an ended task's entry can never land
            store.dequeue(entry)
        for t in locked:  # --force removed a worktree someone locked on purpose: say so in the trail
            store.event(task, "locked_worktree_removed", session, path=str(t.path), reason=_lock_reason(t))
        prior = store.read_snapshot(task)
        if prior is None or prior.final_state != final:  # a resumed run keeps the first, complete count
            store.write_snapshot(task, _snapshot(store, tf, git, heads, contained, archived, why))
        faults.point("end-after-snapshot")
        data = EndData(task=task, final_state=final, why=why, archived=archived, snapshot=str(layout.audit_snapshot(task)), go_to=go_to, kept_paths=kept)
        _remove_all(store, git, tf, trees, branches, contained, final, data, progress)
        faults.point("end-before-unlock")
        store.release_task(task)
    kind = "cleaned_up" if final == "CLEANUP" else "abandoned"
    store.event(task, kind, session, why=why, removed_worktrees=data.removed_worktrees,
                deleted_branches=data.deleted_branches, kept_branches=data.kept_branches, archived=[a.ref for a in archived])
    return data


def _towards_landing(store: Store, tf: TaskFile) -> str:
    """The next command on the way to `complete`: a step of the protocol (full) before the state that
    lands, the human's approval before `complete` (issue 14: `complete` was suggested before `approve`)."""
    task, layout = tf.task_name, store.layout
    if protocol.is_full(layout, tf) and tf.state != protocol.State.AWAITING_USER_APPROVAL:
        return protocol.path_to(tf, protocol.State.AWAITING_USER_APPROVAL)
    head = layout.git().branch_head(tf.task_branch)
    unmet = approval_unmet(layout, tf, head) if head is not None else []
    return unmet[0].fix if unmet and unmet[0].fix else f"spark-git complete {task}"


def _check_may_end(store: Store, tf: TaskFile, final: str, session: str | None, why: str | None = None) -> None:
    task = tf.task_name
    require_owner(f"task {task!r}", tf.session_id, tf.last_active_at, session, task=task)
    if final == "CLEANUP" and tf.state not in ("COMPLETE", "CLEANUP"):
        raise Blocked(
            f"task {task!r} is {tf.state}, not COMPLETE: cleanup removes only finished tasks",
            hint="land it with `spark-git complete` (after the human's approval), or stop it with `spark-git abandon` (its work is archived)",
            next=[_towards_landing(store, tf), f"spark-git abandon {task} --why 'not needed any more'", f"spark-git cleanup {task} --abandon"],
            details={"state": tf.state}, task=task,
        )
    if final == "CLEANUP" and tf.state == "COMPLETE":
        # The protocol's own conditions for COMPLETE → CLEANUP (the branch is contained in the base, every
        # agent COMPLETE, some agent ever invoked unless `why` says otherwise).
        unmet = protocol.guard_for(tf, "CLEANUP")(protocol.make_ctx(store, tf, session, why))
        if unmet:
            raise protocol.refuse(f"cleanup of task {task!r}", unmet, task)


def _lock_reason(t: Tree) -> str:
    return t.wt.extra.get("locked", "") if t.wt is not None else ""


def _locked(trees: list[Tree], force: bool, task: str) -> list[Tree]:
    """Worktrees locked with `git worktree lock` by someone (not git's or spark-git's own "initializing"
    lock of a worktree being created): refused unless --force, then logged."""
    locked = [t for t in trees if t.wt is not None and t.wt.locked and _lock_reason(t) != "initializing"]
    if locked and not force:
        raise Blocked(
            f"task {task!r} has {len(locked)} worktree(s) locked with `git worktree lock`; nothing was removed",
            hint="unlock them (`git worktree unlock PATH`) or pass --force to remove them anyway (logged)",
            next=[f"git worktree unlock {t.path}" for t in locked],
            details={"locked": [f"{t.path}: {_lock_reason(t) or '(no reason given)'}" for t in locked]}, task=task,
        )
    return locked


def _dirty(trees: list[Tree], force: bool, task: str) -> list[Tree]:
    dirty = [t for t in trees if t.dirty]
    if dirty and not force:
        raise Blocked(
            f"task {task!r} has uncommitted changes in {len(dirty)} worktree(s); nothing was removed",
            hint="commit them, or pass --force to save them as a commit on an archive ref first",
            next=[f"spark-git cleanup {task} --force"],
            details={"dirty": [f"{t.path}: {f}" for t in dirty for f in t.dirty]}, task=task,
        )
    return dirty


def _keep_untracked(store: Store, tf: TaskFile, trees: list[Tree], session: str | None, progress: Progress) -> tuple[list[str], list[archive.Archived]]:
    """Nested repositories moved aside and ignored files archived: `worktree remove` deletes both."""
    kept: list[str] = []
    archived: list[archive.Archived] = []
    for t in trees:
        if t.wt is None or t.wt.prunable or not t.path.is_dir():
            continue
        if t.found.nested or t.found.ignored:
            progress(f"archiving ignored files and nested repositories of {t.path}")
        kept += [k.path for k in keep.keep_nested(store, tf.task_name, t.label, t.path, t.found.nested)]
        t.submodules = keep.submodules(t.path)
        archived += keep.keep_submodules(store, tf.task_name, t.label, t.path, t.submodules, session)
        ignored = keep.keep_ignored(store, tf.task_name, t.label, t.path, t.found.ignored, session)
        if ignored is not None:
            archived.append(ignored)
        kept += [k.path for k in keep.keep_large(store, tf.task_name, t.label, t.path, t.found.ignored)]
    return kept, archived


def _archive(store: Store, tf: TaskFile, dirty: list[Tree], trees: list[Tree], branches: list[tuple[str, Sha]], contained: Contained,
             session: str | None, progress: Progress) -> list[archive.Archived]:
    """Archive refs for everything the removal could drop: uncommitted work, detached and unmerged heads."""
    task = tf.task_name
    archived = []
    for t in dirty:
        progress(f"archiving uncommitted work in {t.path} ({len(t.dirty)} file(s))")
        archived.append(archive.keep_uncommitted(store, task, t.label, t.path, t.dirty, session))
    progress("archiving unmerged heads")
    for t in trees:
        if t.wt is not None and t.wt.detached and t.wt.head and not contained(t.wt.head):
            archived.append(archive.keep(store, task, f"detached-{t.label}", t.wt.head, f"detached HEAD of {t.path}", session))
        elif t.wt is not None and t.wt.branch and (t.wt.head or ZERO_SHA) == ZERO_SHA and t.path.is_dir():
            lost = lost_head(t.path)  # its branch was deleted under it: the worktree's reflog still has the head
            if lost is not None and not contained(lost):
                archived.append(archive.keep(store, task, f"lost-{t.label}", lost, f"head of {t.path}, whose branch {t.wt.branch} was deleted", session))
    for b, head in branches:
        if not contained(head):
            archived.append(archive.keep(store, task, b, head, f"branch {b}", session))
    return archived


def _record_end(store: Store, tf: TaskFile, final: str, session: str | None, why: str | None, archived: list[archive.Archived]) -> None:
    if tf.state != final:
        reason = why or "spark-git cleanup"
        record_transition(store, tf, final, session, reason, evidence={"archived": [a.ref for a in archived]})
        save_task(store, tf)
    faults.point("end-after-transition")


def _remove_all(store: Store, git: Git, tf: TaskFile, trees: list[Tree], branches: list[tuple[str, Sha]], contained: Contained, final: str,
                data: EndData, progress: Progress) -> None:
    """Worktrees (agents first, the task worktree last), then the branches no worktree still has out."""
    with store.mutex(WORKTREES):
        order = sorted(trees, key=lambda t: t.label == "task")
        for i, t in enumerate(order, 1):
            progress(f"[{i}/{len(order)}] removing {t.path}")
            _remove(git, t, data)
        gatetree.remove_checkouts(store.layout, tf.task_name)  # the gates' clean checkouts: nothing of anyone's in them
        git.worktree_prune()
        faults.point("end-after-worktrees")
        still_out = {wt.branch for wt in git.worktrees() if wt.branch}
        for b, head in branches:
            if b in still_out or not (contained(head) or final == "ABANDONED"):
                data.kept_branches.append(b)
                continue
            git.delete_ref(branch_ref(b), head, message=f"spark-git {final.lower()} {tf.task_name}")
            data.deleted_branches.append(b)
    if data.deleted_branches:
        hooksetup.refresh(store.layout, store)  # other agents' sandboxes named these refs (a gone one is a mount point)


def _containment(git: Git, base: str) -> Contained:
    base_head = git.branch_head(base)
    cache: dict[str, bool] = {}

    def contained(sha: str) -> bool:
        if base_head is None:
            return False
        if sha not in cache:
            cache[sha] = sha == base_head or git.is_ancestor(sha, base_head)
        return cache[sha]

    return contained


def _trees(store: Store, tf: TaskFile, git: Git, progress: Progress = quiet) -> list[Tree]:
    """The task's worktrees: those task.json names and any other worktree git has under the task dir."""
    task = tf.task_name
    with store.mutex(WORKTREES):  # `worktree list` reads admin dirs a concurrent `start` may be writing
        registered = {wt.path.resolve(): wt for wt in git.worktrees()}
    wanted: dict[Path, str] = {Path(tf.worktree).resolve(): "task"}
    for a, e in tf.agents.items():
        wanted[Path(e.worktree).resolve()] = a
    root = store.layout.task_dir(task).resolve()
    for p in registered:
        if p not in wanted and within(p, root):
            wanted[p] = p.parent.name if p.name == "code" else p.name
    res = []
    for p, label in wanted.items():
        wt = registered.get(p)
        t = Tree(label=label, path=p, wt=wt)
        if wt is not None and p.is_dir() and not wt.prunable:
            progress(f"scanning {p}")
            t.found = keep.scan(p)
            found, cached = t.found, caches.names(store.layout.config)
            found.ignored = [f for f in found.ignored if not caches.is_cache(f, cached)]
            work = [e for e in found.dirty if not caches.untracked_cache(e, cached)]
            t.caches, found.dirty = len(work) < len(found.dirty), work
            t.dirty = found.dirty
        res.append(t)
    return res


def _branches(layout: Layout, store: Store, tf: TaskFile, trees: list[Tree], heads: dict[str, Sha]) -> list[str]:
    """The branches this task may delete: those task.json records (checked against the layout), and an
    agent branch of an interrupted `agent add` that spark-git created. Never a branch a worktree was
    merely switched to, nor one that only looks like an agent branch."""
    task = tf.task_name
    names: list[str] = [tf.task_branch, *(e.branch for e in tf.agents.values()), *tf.created_branches]
    prefix = layout.agent_branch(task, "\0").split("\0")[0]
    candidates: list[str] = [t.wt.branch for t in trees if t.wt is not None and t.wt.branch]
    if prefix:
        candidates += [r.removeprefix("refs/heads/") for r in heads if r.startswith(f"refs/heads/{prefix}")]
    git = layout.git()
    for b in dict.fromkeys(candidates):
        if b not in names and stray_agent_branch(layout, store, git, task, b):
            names.append(b)
    base = tf.base_branch
    return [b for b in dict.fromkeys(names) if b != base and branch_ref(b) in heads]


def _remove(git: Git, t: Tree, data: EndData) -> None:
    if t.wt is not None:
        if t.path.exists():
            args = ["worktree", "remove"]
            if t.dirty or t.caches or t.wt.locked or t.partly_removed or t.submodules:  # dirty work and submodules are already on archive refs
                args += ["--force", "--force"] if t.wt.locked else ["--force"]
            git.run(*args, str(t.path))
        data.removed_worktrees.append(str(t.path))
    elif t.path.exists():
        try:
            t.path.rmdir()  # an empty directory left by a killed `worktree add`
        except OSError:
            data.kept_paths.append(str(t.path))  # not a worktree: spark-git never deletes files it does not own


def _snapshot(store: Store, tf: TaskFile, git: Git, heads: dict[str, Sha], contained: Contained, archived: list[archive.Archived], why: str | None) -> AuditSnapshot:
    head = heads.get(branch_ref(tf.task_branch))
    by_state: dict[str, int] = {}
    for t in tf.transition_log:
        by_state[t.to] = by_state.get(t.to, 0) + 1
    by_agent: dict[str, int] = {}
    coordination = total = 0
    if head is not None:
        for (message,) in git.log_fields(f"{tf.base_commit}..{head}", ["%B"]):
            total += 1
            agent = attribution.trailer_agent(message) or attribution.prefix_agent(message)
            if agent:
                by_agent[agent] = by_agent.get(agent, 0) + 1
            else:
                coordination += 1
    try:
        trail = store.read_audit(tf.task_name)
    except SparkError:
        trail = None
    gates = trail.build_verifications if trail else []
    passed = sum(1 for g in gates if _gate_passed(g))
    return AuditSnapshot(
        task_name=tf.task_name, final_state=tf.state, session_id=tf.session_id, title=tf.title, why=why,
        created_at=tf.created_at, base_branch=tf.base_branch, base_commit=tf.base_commit, task_branch=tf.task_branch,
        task_head=head, landed=bool(head and contained(head)), transitions=len(tf.transition_log), transitions_by_state=by_state,
        agents=list(tf.agents), commits_total=total, commits_by_agent=by_agent, coordination_commits=coordination,
        gate_runs=len(gates), gate_runs_passed=passed, gates_all_passed=(passed == len(gates)) if gates else None,
        archive_refs=[a.model_dump() for a in archived], task_json=tf.model_dump(mode="json", by_alias=True),
    )


def _gate_passed(entry: dict[str, Any]) -> bool:
    if entry.get("result") in ("passed", "failed"):
        return bool(entry["result"] == "passed")
    if isinstance(entry.get("passed"), bool):
        return bool(entry["passed"])
    ev = entry.get("evidence")
    if isinstance(ev, dict) and isinstance(ev.get("passed"), bool):
        return bool(ev["passed"])
    return bool(entry.get("exit_code", entry.get("returncode")) == 0)

