"""`merge` (agent → task), `sync` (agent catches up with the task) and `complete` (task → base).

Every ref move is a compare-and-swap or a `git merge --ff-only` in the worktree that has the branch
checked out (git moves HEAD there with its old value checked). Before an agent branch is rewritten
(rebase, attribution stamping) its old head is kept under `refs/spark/archive/...`, so no commit is
ever unreachable, even if the process is killed half-way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from spark_git.state import audit
from spark_git.ops import envs
from spark_git.core import faults
from spark_git.gates import attribution
from spark_git.gates import command as gates
from spark_git.state import notes
from spark_git.protocol import machine as protocol
from spark_git.core.errors import BadInput, Blocked, Failed, SparkError
from spark_git.core.git import ZERO_SHA, Git, branch_ref
from spark_git.core.layout import Layout, agent_name, task_name
from spark_git.state.locks import MAIN, mutex, require_owner, task_mutex_name
from spark_git.state.models import AgentStatus, MainLock, TaskFile, now
from spark_git.state.files import create_exclusive, read_optional, write_atomic
from spark_git.ops.tasks import load_task, save_task, updating

ARCHIVE_PREFIX = "refs/spark/archive"
GATE_LEFT_CHANGES_HINT = "a gate must not change the files it tests; add its outputs (e.g. __pycache__/, build/) to .gitignore, then try again"
MARKER = ".spark-merge-rebase"  # in the agent dir: "a rebase started by `merge` is in progress"


class LandedCommit(BaseModel):
    sha: str
    original_sha: str | None = None  # before rebase/stamping, when it was rewritten
    subject: str
    files: list[str]


class MergeData(BaseModel):
    task: str
    agent: str
    task_branch: str
    old_head: str
    new_head: str
    landed: list[LandedCommit]
    rebased: bool
    stamped: int  # commits whose message got the agent prefix / trailers
    archive_ref: str | None
    gate: gates.GateEvidence | None
    recovered: list[str] = []  # leftovers of a killed merge that this one cleaned up


class MergeRefusal(BaseModel):
    agent: str
    status: str  # BLOCKED | FAIL, as the single-agent merge would have printed
    exit_code: int
    error: str
    hint: str | None = None
    details: dict[str, Any] = {}
    next: list[str] = []


class MergeAllData(BaseModel):
    task: str
    merged: list[MergeData]  # in the order tried; entries with no `landed` had nothing new
    refused: list[MergeRefusal]


class SyncData(BaseModel):
    task: str
    agent: str
    task_head: str
    agent_head: str
    rebased: bool
    conflicts: list[str]
    archive_ref: str | None


# -- helpers -------------------------------------------------------------------------------------


def _agent_entry(tf: TaskFile, agent: str):
    if agent not in tf.agents:
        raise BadInput(f"task {tf.task_name!r} has no agent {agent!r}", details={"agents": sorted(tf.agents)}, task=tf.task_name)
    return tf.agents[agent]


def _worktree(path: str, what: str, task: str) -> Git:
    if not Path(path).is_dir():
        raise Blocked(f"{what} {path} does not exist", next=[f"spark-git doctor {task}"], task=task)
    return Git(path)


def archive(git: Git, task: str, branch: str, sha: str) -> str:
    """Keeps `sha` reachable under refs/spark/archive/<task>/<branch>/<sha12> (created by CAS)."""
    ref = f"{ARCHIVE_PREFIX}/{task}/{branch}/{sha[:12]}"
    cur = git.rev_parse(ref)
    if cur is None:
        git.update_ref(ref, sha, ZERO_SHA, message=f"spark-git: keep {branch} before rewriting it")
    elif cur != sha:  # 12-hex-digit collision: keep both
        ref = f"{ref}-{sha[12:20]}"
        if git.rev_parse(ref) is None:
            git.update_ref(ref, sha, ZERO_SHA, message=f"spark-git: keep {branch} before rewriting it")
    return ref


def _recover(layout: Layout, task: str, agent: str, wt: Git) -> list[str]:
    """Cleans up after a merge that was killed while rebasing A's worktree (we hold the task mutex,
    so that merge is dead). A rebase the agent started itself (`sync`) is left alone."""
    done: list[str] = []
    marker = layout.agent_dir(task, agent) / MARKER
    if marker.exists():
        if wt.rebase_in_progress():
            wt.rebase_abort()  # back to the head recorded when the rebase started (also archived)
            done.append(f"aborted the rebase a killed merge left in {wt.cwd}")
        marker.unlink(missing_ok=True)
    return done


def _rebase_onto(layout: Layout, task: str, agent: str, wt: Git, upstream: str, leave_conflicts: bool) -> list[str]:
    """Rebases the worktree's branch onto `upstream`. Returns the conflicting files (then the rebase
    was aborted and everything restored, unless `leave_conflicts`)."""
    marker = layout.agent_dir(task, agent) / MARKER
    if not leave_conflicts:
        write_atomic(marker, {"pid": os.getpid(), "upstream": upstream, "at": now()})
    r = wt.rebase(upstream)
    faults.point("merge-rebase-returned")  # the rebase may be stopped on a conflict right now
    stopped = wt.rebase_in_progress()
    if r.returncode == 0 and not stopped:
        marker.unlink(missing_ok=True)
        return []
    conflicts = wt.conflicted_files() if stopped else []
    if not stopped:
        marker.unlink(missing_ok=True)
        raise Failed(f"git rebase {upstream} failed in {wt.cwd}:\n{r.stderr.strip()}", task=task)
    if not leave_conflicts:
        wt.rebase_abort()
        marker.unlink(missing_ok=True)
    return conflicts or ["(rebase stopped; see `git status`)"]


def _stamp(git: Git, commits: list[str], agent: str, task: str, onto: str) -> tuple[str, dict[str, str]]:
    """Replays `commits` (oldest first, linear) onto `onto` with attribution added to each message.
    Same trees, authors and dates; returns (new tip, old sha → new sha)."""
    parent = onto
    mapping: dict[str, str] = {}
    for sha in commits:
        headers, message = git.commit_object(sha)
        env = _ident_env(headers)
        parent = git.commit_tree(headers["tree"][0], [parent], attribution.stamp_message(message, agent, task), env)
        mapping[sha] = parent
    return parent, mapping


def _ident_env(headers: dict[str, list[str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for key, pre in (("author", "GIT_AUTHOR"), ("committer", "GIT_COMMITTER")):
        line = headers[key][0]
        name, _, rest = line.partition(" <")
        email, _, date = rest.partition("> ")
        env.update({f"{pre}_NAME": name, f"{pre}_EMAIL": email, f"{pre}_DATE": date})
    return env


def _update_agent_status(layout: Layout, task: str, agent: str, sha: str) -> None:
    path = layout.agent_status(task, agent)
    st = read_optional(path, AgentStatus) or AgentStatus(agent=agent, task=task)
    st.last_merge_sha = sha
    st.updated_at = now()
    write_atomic(path, st)


def _unmet_blocked(what: str, unmet: list[protocol.Unmet], task: str) -> Blocked:
    return Blocked(
        f"{what}: {len(unmet)} condition(s) not met",
        details={"unmet": [str(u) for u in unmet]},
        next=[u.fix for u in unmet if u.fix],
        task=task,
    )


def record_gate(layout: Layout, task: str, ev: gates.GateEvidence, session: str | None, **extra: Any) -> None:
    entry = {
        "gate": ev.gate, "command": ev.command, "result": "passed" if ev.passed else "failed", "ran": ev.ran,
        "exit_code": ev.exit_code, "timed_out": ev.timed_out, "duration_s": ev.duration_s, "tree": ev.tree,
        "commit": ev.commit, "log_path": ev.log_path, "tests": ev.tests, "session_id": session, **extra,
    }
    audit.record(layout, task, "build_verifications", entry, session=session)
    if ev.commit:
        notes.append(layout, ev.commit, {"kind": "gate", "task": task, "session": session, **ev.model_dump(mode="json"), **extra})


def _gate_failed(ev: gates.GateEvidence, task: str, what: str) -> Failed:
    reason = ev.error or f"exit code {ev.exit_code}"
    return Failed(
        f"{what}: gate {ev.gate!r} failed ({reason}); log: {ev.log_path}",
        hint="read the log, fix the code, commit, and try again",
        details={"log_path": ev.log_path, "exit_code": ev.exit_code, "timed_out": ev.timed_out, "command": ev.command},
        task=task,
    )


def _record_unrecorded_landing(layout: Layout, tf: TaskFile, agent: str, a_head: str, task_head: str, session: str | None) -> list[str]:
    """A merge killed after its fast-forward but before its notes: A's head is on the task branch but
    was never recorded. Record it now (attribution from the trailers the merge stamped)."""
    entry = tf.agents[agent]
    git = layout.git()
    if a_head in (entry.last_merge_sha, tf.base_commit) or not git.is_ancestor(a_head, task_head):
        return []
    if any(o.get("kind") == "landed" for o in notes.read(git, a_head)):
        return []
    since = entry.last_merge_sha if entry.last_merge_sha and git.is_ancestor(entry.last_merge_sha, a_head) else tf.base_commit
    mine = [(sha, subj) for sha, subj, body in git.log_fields(f"{since}..{a_head}", ["%H", "%s", "%B"], "--first-parent")
            if attribution.trailer_agent(body) == agent]
    if not mine:
        return []
    gate = [o for o in notes.read(git, a_head) if o.get("kind") == "gate"]
    notes.append_many(layout, [(sha, {"kind": "attribution", "agent": agent, "task": tf.task_name, "session": session, "branch": entry.branch, "recovered": True}) for sha, _ in mine]
                      + [(a_head, {"kind": "landed", "task": tf.task_name, "agent": agent, "session": session, "recovered": True,
                                   "gate_passed": bool(gate and gate[-1].get("passed")), "gate_tree": gate[-1].get("tree") if gate else None})])
    stats = git.numstat(f"{since}..{a_head}")
    for sha, subj in reversed(mine):
        audit.record(layout, tf.task_name, "commits", {"sha": sha, "agent": agent, "branch": entry.branch, "files": [f[2] for f in stats.get(sha, [])], "message": subj, "recovered": True}, session=session)
    entry.last_merge_sha = a_head
    _update_agent_status(layout, tf.task_name, agent, a_head)
    return [f"recorded {len(mine)} commit(s) of {agent} that a killed merge landed without notes"]


# -- merge -----------------------------------------------------------------------------------------


def merge(layout: Layout, task: str, agent: str, *, session: str | None) -> MergeData:
    task = task_name(task)
    agent = agent_name(agent)
    # Like tasks.updating(), but task.json is only written when something landed ("nothing new"
    # must change nothing, not even last_active_at).
    with mutex(layout, task_mutex_name(task)):
        tf = load_task(layout, task)
        require_owner(f"task {task!r}", tf.session_id, tf.last_active_at, session, task=task)
        data = _merge_locked(layout, tf, agent, session)
        if data.landed or data.recovered:
            save_task(layout, tf)
        return data


def merge_all(layout: Layout, task: str, *, session: str | None) -> MergeAllData:
    """Every agent of the task, in the order they joined, each through the whole `merge` (its own
    gates, its own task-mutex hold). One agent's refusal does not stop the others; the protocol's
    and the owner's refusals are the same for every agent, so they stop the batch before it starts."""
    task = task_name(task)
    tf = load_task(layout, task)
    require_owner(f"task {task!r}", tf.session_id, tf.last_active_at, session, task=task)
    unmet = protocol.merge_conditions(layout, tf)
    if unmet:
        raise _unmet_blocked(f"cannot merge the agents of {task}", unmet, task)
    data = MergeAllData(task=task, merged=[], refused=[])
    for agent in tf.agents:
        try:
            data.merged.append(merge(layout, task, agent, session=session))
        except SparkError as e:
            data.refused.append(MergeRefusal(agent=agent, status=e.status, exit_code=e.exit_code, error=e.message, hint=e.hint, details=e.details, next=e.next))
    return data


def _merge_locked(layout: Layout, tf: TaskFile, agent: str, session: str | None) -> MergeData:
    task = tf.task_name
    entry = _agent_entry(tf, agent)
    unmet = protocol.merge_conditions(layout, tf)
    if unmet:
        raise _unmet_blocked(f"cannot merge {agent} into {task}", unmet, task)
    git = layout.git()
    awt = _worktree(entry.worktree, f"agent {agent}'s worktree", task)
    twt = _worktree(tf.worktree, "the task worktree", task)
    recovered = _recover(layout, task, agent, awt)
    if awt.rebase_in_progress():
        raise Blocked(
            f"a rebase is in progress in {awt.cwd} (from `spark-git sync` or by hand)",
            hint="resolve the conflicts, `git add` them and `git rebase --continue` (or `git rebase --abort`), then merge again",
            next=[f"cd {awt.cwd} && git status"], task=task,
        )
    a_branch, a_dirty = awt.branch_and_status()
    t_branch, t_dirty = twt.branch_and_status()
    if a_branch != entry.branch:
        raise Blocked(f"{awt.cwd} is on {a_branch or 'a detached HEAD'}, expected branch {entry.branch}", task=task)
    if t_branch != tf.task_branch:
        raise Blocked(f"{twt.cwd} is on {t_branch or 'a detached HEAD'}, expected branch {tf.task_branch}", task=task)
    gates.check_clean(awt, f"agent {agent}'s worktree", task, a_dirty)
    gates.check_clean(twt, "the task worktree", task, t_dirty)

    heads = git.refs(branch_ref(tf.task_branch), branch_ref(entry.branch))  # one git call for both
    task_head, a_head = heads.get(branch_ref(tf.task_branch)), heads.get(branch_ref(entry.branch))
    if task_head is None or a_head is None:
        raise Blocked(f"branch {tf.task_branch if task_head is None else entry.branch} does not exist", next=[f"spark-git doctor {task}"], task=task)
    messages = git.messages(f"{task_head}..{a_head}")  # oldest first: also the list of new commits
    new = list(messages)
    if not new:
        recovered += _record_unrecorded_landing(layout, tf, agent, a_head, task_head, session)
        return MergeData(task=task, agent=agent, task_branch=tf.task_branch, old_head=task_head, new_head=task_head, landed=[],
                         rebased=False, stamped=0, archive_ref=None, gate=None, recovered=recovered)

    mode = layout.config.attribution.mode
    unattributed = [sha for sha in new if not attribution.attributed_to(messages[sha], agent)]
    if mode == "require" and unattributed:
        raise Blocked(
            f"{len(unattributed)} commit(s) on {entry.branch} are not attributed to {agent}",
            hint=f"start each subject with '{attribution.subject_prefix(agent)} ' or add a 'Spark-Agent: {agent}' trailer (git rebase -i / commit --amend), or set attribution.mode = \"add\"",
            details={"commits": [f"{sha[:12]} {messages[sha].splitlines()[0] if messages[sha] else ''}" for sha in unattributed]},
            task=task,
        )

    archive_ref = None
    rebased = False
    original = {sha: sha for sha in new}
    if not git.is_ancestor(task_head, a_head):
        had_archive = set(git.refs(f"{ARCHIVE_PREFIX}/{task}/{entry.branch}/"))
        archive_ref = archive(git, task, entry.branch, a_head)
        conflicts = _rebase_onto(layout, task, agent, awt, task_head, leave_conflicts=False)
        if conflicts:
            if archive_ref not in had_archive:  # the branch is back at a_head: leave no trace
                git.delete_ref(archive_ref, a_head, message="spark-git merge: conflict, nothing rewritten")
            raise Blocked(
                f"{agent}'s commits conflict with the task branch; nothing was changed",
                hint=f"run `spark-git sync {task} --agent {agent}`, resolve the conflicts in {awt.cwd}, `git rebase --continue`, then merge again",
                details={"conflicts": conflicts},
                next=[f"spark-git sync {task} --agent {agent}"],
                task=task,
            )
        rebased = True
        faults.point("merge-after-rebase")
        a_head_rebased = awt.head()
        messages = git.messages(f"{task_head}..{a_head_rebased}")
        rebased_commits = list(messages)
        # rebase keeps the order; commits already upstream are dropped (then the mapping is unknown)
        if len(rebased_commits) == len(new):
            original = dict(zip(rebased_commits, new))
        else:
            original = {sha: None for sha in rebased_commits}  # type: ignore[misc]
        a_head = a_head_rebased
        new = rebased_commits

    stamped = 0
    if mode == "add" and new:
        todo = [sha for sha in new if not (attribution.attributed_to(messages[sha], agent) and f"Spark-Task: {task}" in messages[sha])]
        if todo:
            if archive_ref is None:
                archive_ref = archive(git, task, entry.branch, a_head)
            tip, mapping = _stamp(git, new, agent, task, task_head)
            git.update_ref(branch_ref(entry.branch), tip, a_head, message=f"spark-git merge: attribute commits to {agent}")
            original = {mapping[s]: original.get(s) for s in new}
            new = [mapping[s] for s in new]
            a_head = tip
            stamped = len(todo)
            faults.point("merge-after-stamp")
    if not new:  # everything was already upstream after the rebase
        return MergeData(task=task, agent=agent, task_branch=tf.task_branch, old_head=task_head, new_head=task_head, landed=[],
                         rebased=rebased, stamped=0, archive_ref=archive_ref, gate=None, recovered=recovered)

    ev = gates.run("build", layout.config.gates.build, awt.cwd, layout.logs_dir(task), layout.config.gates.timeout_s, env=envs.for_worktree(layout, task, agent))
    record_gate(layout, task, ev, session, agent=agent)
    if not ev.passed:
        raise _gate_failed(ev, task, f"{agent} was not merged into {task}")
    after = awt.head_and_tree()
    if after is None or after[0] != a_head or ev.commit != a_head:  # same commit id ⇒ same tree
        raise Failed(f"{agent}'s branch changed while its gate ran ({a_head[:12]} → {(after[0] if after else '?')[:12]}); nothing was merged", task=task)
    left = awt.status()
    if left:
        raise Failed(f"the build gate left changes in {awt.cwd}; nothing was merged", details={"files": [str(s) for s in left]}, task=task,
                     hint=GATE_LEFT_CHANGES_HINT)

    faults.point("merge-before-ff")
    if git.branch_head(tf.task_branch) != task_head:  # cannot happen under the task mutex; never land over it
        raise Failed(f"task branch {tf.task_branch} moved during the merge; nothing was merged", task=task)
    twt.merge_ff_only(a_head)
    if git.branch_head(tf.task_branch) != a_head:  # the task worktree is on that branch (checked above)
        raise Failed(f"fast-forward of {tf.task_branch} did not land {a_head[:12]}", task=task)
    faults.point("merge-after-ff")

    changes = git.changes(f"{task_head}..{a_head}")
    landed = []
    for sha in new:
        subject, files = changes.get(sha, ("", []))
        landed.append(LandedCommit(sha=sha, original_sha=original.get(sha) if original.get(sha) != sha else None, subject=subject, files=[f[2] for f in files]))
    at = now()
    notes.append_many(layout, [
        (c.sha, {"kind": "attribution", "agent": agent, "task": task, "session": session, "branch": entry.branch, "original": c.original_sha})
        for c in landed
    ] + [(a_head, {"kind": "landed", "task": task, "agent": agent, "session": session, "gate_tree": ev.tree, "gate_ran": ev.ran, "gate_passed": ev.passed, "log_path": ev.log_path})])
    for c in landed:
        audit.record(layout, task, "commits", {"sha": c.sha, "agent": agent, "branch": entry.branch, "time": at, "files": c.files, "message": c.subject, "original_sha": c.original_sha}, session=session)
    audit.event(layout, task, "merged", session, agent=agent, old_head=task_head, new_head=a_head, commits=len(landed), rebased=rebased, stamped=stamped)
    entry.last_merge_sha = a_head
    _update_agent_status(layout, task, agent, a_head)
    return MergeData(task=task, agent=agent, task_branch=tf.task_branch, old_head=task_head, new_head=a_head, landed=landed,
                     rebased=rebased, stamped=stamped, archive_ref=archive_ref, gate=ev, recovered=recovered)


# -- sync ------------------------------------------------------------------------------------------


def sync(layout: Layout, task: str, agent: str, *, session: str | None) -> SyncData:
    task = task_name(task)
    agent = agent_name(agent)
    with updating(layout, task, session) as tf:
        entry = _agent_entry(tf, agent)
        git = layout.git()
        awt = _worktree(entry.worktree, f"agent {agent}'s worktree", task)
        _recover(layout, task, agent, awt)
        if awt.rebase_in_progress():
            raise Blocked(
                f"a rebase is already in progress in {awt.cwd}",
                hint="resolve the conflicts, `git add` them and `git rebase --continue`",
                details={"conflicts": awt.conflicted_files()}, next=[f"cd {awt.cwd} && git status"], task=task,
            )
        gates.check_clean(awt, f"agent {agent}'s worktree", task)
        task_head = git.branch_head(tf.task_branch)
        a_head = git.branch_head(entry.branch)
        if task_head is None or a_head is None:
            raise Blocked(f"branch {tf.task_branch if task_head is None else entry.branch} does not exist", task=task)
        if git.is_ancestor(task_head, a_head):
            return SyncData(task=task, agent=agent, task_head=task_head, agent_head=a_head, rebased=False, conflicts=[], archive_ref=None)
        ref = archive(git, task, entry.branch, a_head)
        conflicts = _rebase_onto(layout, task, agent, awt, task_head, leave_conflicts=True)
        audit.event(layout, task, "synced", session, agent=agent, task_head=task_head, old_agent_head=a_head, conflicts=conflicts)
        return SyncData(task=task, agent=agent, task_head=task_head, agent_head=awt.head() or a_head, rebased=True, conflicts=conflicts, archive_ref=ref)


# -- complete --------------------------------------------------------------------------------------


class CompleteData(BaseModel):
    task: str
    base_branch: str
    old_base: str
    new_base: str
    approved_sha: str
    gate: gates.GateEvidence
    main_worktree_updated: bool


def _base_worktree(git: Git, base: str) -> Path | None:
    for wt in git.worktrees():
        if wt.branch == base:
            return wt.path
    return None


def complete(layout: Layout, task: str, *, session: str | None) -> CompleteData:
    task = task_name(task)
    if session is None:
        raise Blocked("no session given: complete is run by the task's owner", hint="pass --session or export SPARK_SESSION_ID", task=task)
    with mutex(layout, MAIN):
        lock_path = layout.main_lock()
        held = read_optional(lock_path, MainLock)
        reason = f"spark-git complete {task}"
        # Ours from a complete that was killed before releasing it: take it over (and release it).
        took_lock = held is not None and held.session_id == session and held.reason == reason
        if held is not None and held.session_id != session:
            require_owner("the main worktree", held.session_id, held.last_active_at, session, task=task)
        if held is None:
            lock_path.parent.mkdir(parents=True, exist_ok=True)
            took_lock = create_exclusive(lock_path, MainLock(session_id=session, reason=reason, pid=os.getpid()))
        try:
            return _complete_locked(layout, task, session)
        finally:
            if took_lock:
                lock_path.unlink(missing_ok=True)


def _complete_locked(layout: Layout, task: str, session: str) -> CompleteData:
    with updating(layout, task, session) as tf:
        git = layout.git()
        base = tf.base_branch
        head = git.branch_head(tf.task_branch)
        base_head = git.branch_head(base)
        if head is None or base_head is None:
            raise Blocked(f"branch {tf.task_branch if head is None else base} does not exist", task=task)
        unmet: list[protocol.Unmet] = []
        cp = tf.checkpoint
        if cp is None or cp.type != "changes" or not cp.approved or not cp.commit_sha:
            unmet.append(protocol.Unmet(f"the human has not approved the changes of {task} (head {head[:12]})", f"spark-git approve {task} --changes"))
        elif cp.commit_sha != head:
            unmet.append(protocol.Unmet(
                f"the approval is for {cp.commit_sha[:12]}, but the task head is now {head[:12]} (a later commit voids it)",
                f"spark-git approve {task} --changes",
            ))
        if not git.is_ancestor(base_head, head):
            unmet.append(protocol.Unmet(
                f"{base} moved since the task branched ({base} is at {base_head[:12]}, not an ancestor of {head[:12]}): the task is not a fast-forward",
                f"bring the task up to date: cd {tf.worktree} && git rebase {base}; then gate and approve again",
            ))
        twt = Git(tf.worktree)
        if not Path(tf.worktree).is_dir():
            unmet.append(protocol.Unmet(f"the task worktree {tf.worktree} does not exist", f"spark-git doctor {task}"))
        else:
            dirty = twt.status()
            if dirty:
                unmet.append(protocol.Unmet(f"the task worktree {tf.worktree} is not clean: {', '.join(str(d) for d in dirty[:10])}", "commit or remove the changes"))
            elif twt.head() != head:
                unmet.append(protocol.Unmet(f"the task worktree is not at the task head {head[:12]}"))
        main_wt = _base_worktree(git, base)
        if main_wt is not None:
            dirty = Git(main_wt).status()
            if dirty:
                unmet.append(protocol.Unmet(f"{main_wt} has {base} checked out and is not clean: {', '.join(str(d) for d in dirty[:10])}", f"commit, stash or remove them in {main_wt}"))
        unmet += protocol.complete_conditions(layout, tf, head)
        if unmet:
            raise _unmet_blocked(f"cannot complete {task}", unmet, task)

        ev = gates.run("final", layout.config.gates.final, Path(tf.worktree), layout.logs_dir(task), layout.config.gates.timeout_s, env=envs.for_worktree(layout, task))
        record_gate(layout, task, ev, session)
        if not ev.passed:
            raise _gate_failed(ev, task, f"{task} was not completed")
        if twt.head() != head or git.branch_head(tf.task_branch) != head:
            raise Failed("the task branch changed while the final gate ran; nothing landed", task=task)
        left = twt.status()
        if left:
            raise Failed(f"the final gate left changes in {tf.worktree}; nothing landed", details={"files": [str(s) for s in left]}, task=task,
                         hint=GATE_LEFT_CHANGES_HINT)
        faults.point("complete-before-ff")
        if git.branch_head(base) != base_head:  # a human committed on the base meanwhile: land nothing
            raise Failed(f"{base} moved while {task} was being completed ({base_head[:12]} → {(git.branch_head(base) or '?')[:12]}); nothing landed", task=task)
        if main_wt is not None:
            Git(main_wt).merge_ff_only(head)  # moves HEAD (the base branch) with its old value checked
        else:
            git.update_ref(branch_ref(base), head, base_head, message=f"spark-git complete {task}")
        landed = git.branch_head(base)
        if landed != head or head != ev.commit or head != (cp.commit_sha if cp else None):
            raise Failed(f"{base} is at {landed}, expected the approved and gated {head}", task=task)
        faults.point("complete-after-ff")
        notes.append(layout, head, {"kind": "completed", "task": task, "session": session, "base": base, "old_base": base_head})
        protocol.record_transition(layout, tf, "COMPLETE", session, f"landed on {base}", {"commit": head, "old_base": base_head, "gate_log": ev.log_path})
        audit.event(layout, task, "completed", session, base=base, old_base=base_head, new_base=head)
        return CompleteData(task=task, base_branch=base, old_base=base_head, new_base=head, approved_sha=head, gate=ev, main_worktree_updated=main_wt is not None)
