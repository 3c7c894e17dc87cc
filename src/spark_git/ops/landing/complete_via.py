"""`complete --via gh|glab`: landing through the forge. The guards of `complete` first (the approval
bound to the head, a clean task worktree at the head, the protocol, the final gate on the head): a
refusal pushes nothing. Then the task branch is pushed (a fast-forward, never forced), the PR/MR is
opened with the evidence in its body and the forge's auto-merge is enabled, bound to the gated head.
The forge merges; `queue`/`status` ask it (`gh pr view` / `glab mr view`) and record what they see."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from spark_git.core import forge
from spark_git.core.errors import BadInput, Blocked, Failed
from spark_git.core.git import branch_ref
from spark_git.core.gitremote import Remote
from spark_git.core.layout import Layout, task_name
from spark_git.core.model import Model
from spark_git.core.proc import Ticker
from spark_git.gates import command as gates
from spark_git.gates import evidence
from spark_git.ops.landing import forgebody
from spark_git.ops.queue import gate
from spark_git.ops.queue.checks import forge_unmet
from spark_git.ops.shared.merging.prepare import unmet_blocked
from spark_git.ops.shared.taskfile import load_task, updating
from spark_git.state.backends import open_store
from spark_git.state.locks import require_owner
from spark_git.state.models import ForgeMark, TaskFile
from spark_git.state.store import Store


class ForgeCompleteData(Model):
    task: str
    result: Literal["opened"] = "opened"
    via: Literal["gh", "glab"]
    url: str
    number: str
    remote: str
    task_branch: str
    base_branch: str
    head: str
    method: Literal["merge", "squash", "rebase"]
    auto_merge: bool
    gate: gates.GateEvidence | None = None


def complete_via(layout: Layout, task: str, via: str, *, session: str | None, method: str = "merge", rerun: bool = False,
                 ticker: Ticker | None = None) -> ForgeCompleteData:
    task = task_name(task)
    if method not in forge.METHODS:
        raise BadInput(f"--merge-method {method!r}: one of {', '.join(forge.METHODS)}")
    client = forge.cli(via)  # a missing client refuses before anything runs
    if session is None:
        raise Blocked("no session given: complete is run by the task's owner", hint="pass --session or export SPARK_SESSION_ID", task=task)
    store = open_store(layout)
    tf = load_task(store, task)
    require_owner(f"task {task!r}", tf.session_id, tf.last_active_at, session, task=task)
    head = _checked_head(layout, store, tf)
    ev = _final_gate(layout, store, tf, head, gate.GateOpts(rerun=rerun, ticker=ticker), session, via)
    remote = layout.config.sync.remote or "origin"
    refused: Blocked | None = None
    with updating(store, task, session) as tf:
        if layout.git().branch_head(tf.task_branch) != head:
            raise Blocked(f"the task head moved while the final gate ran (gated {head[:12]}): nothing was pushed", task=task,
                          next=[f"spark-git complete {task} --via {via}"])
        _push(layout, remote, tf.task_branch, head)
        opened = _open(layout, store, client, tf, head, ev, via)
        try:
            client.auto_merge(layout.main_worktree, opened, head, method)
        except Blocked as e:  # the PR/MR stays open and recorded: merging it is then the forge's user's call
            refused = e
        tf.forge = ForgeMark(via=via, url=opened.url, number=opened.number, head=head, remote=remote, method=method,
                             session_id=session)
        store.event(task, "forge_opened", session, via=via, url=opened.url, head=head, auto_merge=refused is None)
        store.add_notes([(head, {"kind": "forge", "task": task, "session": session, "via": via, "url": opened.url, "state": "open",
                                 "base": tf.base_branch, "method": method, "auto_merge": refused is None})])
    if refused is not None:
        raise Blocked(f"opened {opened.url}, but {via} refused to enable auto-merge: {refused.message}", task=task,
                      hint="merge it on the forge (spark-git records the outcome when `queue` or `status` sees it)",
                      details={**refused.details, "url": opened.url}, next=["spark-git queue"])
    return ForgeCompleteData(task=task, via=via, url=opened.url, number=opened.number, remote=remote, task_branch=tf.task_branch,
                             base_branch=tf.base_branch, head=head, method=method, auto_merge=True, gate=ev)


def _checked_head(layout: Layout, store: Store, tf: TaskFile) -> str:
    head = layout.git().branch_head(tf.task_branch)
    if head is None:
        raise Blocked(f"branch {tf.task_branch} does not exist", task=tf.task_name)
    unmet = forge_unmet(layout, store, tf, head)
    if unmet:
        raise unmet_blocked(f"cannot complete {tf.task_name} through the forge (nothing was pushed)", unmet, tf.task_name)
    return head


def _final_gate(layout: Layout, store: Store, tf: TaskFile, head: str, opts: gate.GateOpts, session: str, via: str) -> gates.GateEvidence:
    """gates.final on the task head, in its worktree (a passing verdict of the tree is reused)."""
    ev = gate.run_in_task(layout, store, head, tf.task_name, Path(tf.worktree), opts)
    if ev is None:
        raise Blocked(f"the task worktree {tf.worktree} is not clean at the head {head[:12]}", task=tf.task_name)
    evidence.record(store, tf.task_name, ev, session, note=True)
    if not ev.passed:
        why = ev.error or (f"exit {ev.exit_code}" if not ev.timed_out else "timed out")
        raise Failed(f"{tf.task_name} was not sent to the forge: the final gate failed on {head[:12]} ({why}); log: {ev.log_path}", task=tf.task_name,
                     hint="read the log, fix the code, commit, and try again", details={"log_path": ev.log_path, "log_tail": gates.log_tail(ev.log_path)},
                     next=[f"spark-git complete {tf.task_name} --via {via}"])
    return ev


def _push(layout: Layout, remote: str, branch: str, head: str) -> None:
    """The task branch to the remote at the gated head: created, or fast-forwarded (never forced)."""
    r = Remote(layout.git(), remote)
    r.url()  # a missing remote is named as such
    res = r.push({branch_ref(branch): head}, {})
    if not res.ok:
        raise Blocked(f"remote {remote!r} refused the task branch {branch} at {head[:12]} (it has commits the task lacks?): nothing was opened",
                      hint=f"see `git fetch {remote} {branch}`; bring them into the task, or delete the remote branch", details={"stderr": res.stderr})


def _open(layout: Layout, store: Store, client: forge.Cli, tf: TaskFile, head: str, ev: gates.GateEvidence, via: str) -> forge.Opened:
    """Opens the PR/MR; after a crash between opening and recording, a re-run finds the open one."""
    title, body = forgebody.compose(layout, store, tf, head, ev, via)
    cwd = layout.main_worktree
    try:
        return client.create(cwd, tf.base_branch, tf.task_branch, title, body)
    except Blocked:
        found = client.find_open(cwd, tf.task_branch)
        if found is None:
            raise
        return found
