"""`approve`: the human's approval of the task's changes (or its plan), bound to a commit id and, for
changes, to the patch (`git patch-id --verbatim`), signed with the human's SSH key (ops/shared/signed.py); `approve --request-changes`: the human sends the
changes back to IMPLEMENTATION. `approval_holds` is the one rule saying whether an approval still holds.

The confirmation happens before the task mutex is taken (a human may take minutes to type); the
commit approved is fixed before asking, so what the human saw is what is recorded.
"""

from __future__ import annotations

import getpass
import os
import shlex
from collections.abc import Callable
from typing import Literal

from spark_git import protocol
from spark_git.core import sshsig
from spark_git.core.errors import BadInput, Blocked
from spark_git.core.git import branch_ref
from spark_git.core.layout import Layout, task_name
from spark_git.core.model import Model
from spark_git.ops.landing.presented import Presented, present
from spark_git.ops.shared import signed
from spark_git.ops.shared.taskfile import load_task, updating
from spark_git.ops.shared.transitions import record_transition
from spark_git.protocol import approval_holds
from spark_git.state.backends import open_store
from spark_git.state.models import Checkpoint, TaskFile, now
from spark_git.state.store import Store

Kind = Literal["changes", "plan"]

__all__ = ["ApproveData", "ChangesRequestedData", "approval_holds", "approve", "request_changes"]


class ApproveData(Model):
    task: str
    kind: str
    commit_sha: str
    task_head: str
    approved_at: str
    approved_by: str
    via: str  # "terminal" or "non-interactive"
    presented: Presented | None = None  # approve --changes: what was shown (or would have been, non-interactive)
    signed_with: str | None = None  # the key file that signed the approval (a public key: ssh-agent signed)
    key_created: bool = False  # approve created that key (no key was configured)
    allowed_signers: str | None = None  # the file its public key was just recorded in as an allowed approver
    key_protection: str | None = None  # how the key's secret is kept: passphrase, ssh-agent, hardware, unprotected
    unprotected_key: bool = False  # signed with a key no secret protects ([approval] unprotected_key = true)
    unguarded: list[str] = []  # clients whose agent sessions nothing keeps from the key (no sandbox, or it cannot run)


def who_approves(session: str | None) -> str:
    try:
        user = getpass.getuser()
    except Exception:  # no passwd entry (containers)
        user = os.environ.get("USER", "unknown")
    return f"{user}@{os.uname().nodename}" + (f" (session {session})" if session else "")


def approve(
    layout: Layout,
    task: str,
    *,
    kind: Kind = "changes",
    sha: str | None,
    session: str | None,
    interactive: bool,
    ask: Callable[[str], str] | None = None,
    show: Callable[[Presented], None] | None = None,
    show_plan: Callable[[str], None] | None = None,
) -> ApproveData:
    """`ask(prompt)` returns what the human typed (only called when `interactive`); `show` draws what
    is approved (changes), `show_plan` the plan's text (task.md), before the question."""
    task = task_name(task)
    if kind not in ("changes", "plan"):
        raise BadInput(f"approve --{kind} is not supported")
    store = open_store(layout)
    tf = load_task(store, task)
    unmet = protocol.approve_conditions(layout, tf, kind)
    if unmet:
        raise protocol.refuse(f"cannot approve the {kind} of {task}", unmet, task)
    digest = protocol.task_md_digest(layout, task) if kind == "plan" else None
    if kind == "plan" and digest is None:
        raise Blocked(f"there is no plan to approve: {layout.task_md(task)} does not exist", next=[f"spark-git classify {task}"], task=task)
    if signed.inside_repo(layout):
        raise Blocked(f"the spark-git state directory {sshsig.state_dir()} is inside the repository, where agents can read the approval key; "
                      "nothing was recorded", hint="unset XDG_STATE_HOME (or point it outside the repository) and approve again", task=task)
    target = _target(layout, tf, sha)
    _not_again(layout, tf, kind, target, digest)
    again, git = f"spark-git approve {task} --{kind}", layout.git()
    if not interactive and not layout.config.approval.allow_non_interactive:
        _confirm(layout, task, target, digest, interactive, ask, again=again)  # refused before a key is looked for (or created)
    signer = signed.approver(git, layout, interactive=interactive, again=again)  # a key no secret protects is refused here
    view = present(store, tf, target) if kind == "changes" else None
    if view is not None and interactive and show is not None:
        show(view)
    if kind == "plan" and interactive and show_plan is not None:
        show_plan(layout.task_md(task).read_text(errors="replace"))
    presented_at = now()
    via = _confirm(layout, task, target, digest, interactive, ask, again=again, signing=signer.describe())
    by = who_approves(session)
    rec = signed.record(git, tf, kind, target, digest, by, now(), signer)
    sig = signed.sign(rec, signer)  # after the confirmation, before the mutex: a passphrase may be asked
    cp = Checkpoint(type=kind, commit_sha=target, presented_at=presented_at, approved=True, approved_by=by, task_md_sha256=digest,
                    patch_id=rec["patch_id"], signed=sig.payload, signature=sig.signature)
    cp.via = via  # type: ignore[attr-defined]  # an extra field, kept by the model
    cur_head = _record(store, task, cp, sha is not None, session)
    _noted(store, task, kind, target, session, by, via, signer)
    return ApproveData(task=task, kind=kind, commit_sha=target, task_head=cur_head or target, approved_at=cp.approved_at or "", approved_by=by, via=via,
                       presented=view, signed_with=str(sig.key.path), key_created=sig.key.created,
                       allowed_signers=str(sshsig.allowed_path()) if sig.allowed_added else None,
                       key_protection=signer.protection, unprotected_key=signer.unprotected,
                       unguarded=signed.unguarded(layout.main_worktree))


def _noted(store: Store, task: str, kind: Kind, target: str, session: str | None, by: str, via: str, signer: signed.Approver) -> None:
    """The approval's note and event, each saying how the key's secret is kept (verify and audit read it)."""
    said = {"key": signer.protection, "unprotected_key": signer.unprotected}
    store.add_notes([(target, {"kind": "approval", "what": kind, "task": task, "session": session, "by": by, "via": via, **said})])
    store.event(task, "approved", session, what=kind, commit_sha=target, by=by, via=via, **said)


def _not_again(layout: Layout, tf: TaskFile, kind: Kind, target: str, digest: str | None) -> None:
    """Approving what is already approved records nothing (no duplicate in checkpoint_history)."""
    cp = tf.plan_approval if kind == "plan" else tf.checkpoint
    if cp is None or not cp.approved or (cp.task_md_sha256 != digest if kind == "plan" else cp.commit_sha != target):
        return
    if (signed.problem(layout, tf, cp, target) if kind == "changes" else signed.plan_problem(layout, tf, cp)) is not None:
        return  # recorded but not a valid signature here (unsigned, forged, another key, approvers changed): the human signs again
    what = f"the plan of {tf.task_name}" if kind == "plan" else f"the changes of {tf.task_name} at {target[:12]}"
    nxt = f"spark-git advance {tf.task_name}" if kind == "plan" else f"spark-git complete {tf.task_name}"
    raise Blocked(f"{what} already approved (by {cp.approved_by} at {cp.approved_at}); nothing was recorded", next=[nxt], task=tf.task_name)


def _target(layout: Layout, tf: TaskFile, sha: str | None) -> str:
    """The commit approved: the task head, or `sha` if it is on the task branch."""
    task, git = tf.task_name, layout.git()
    head = git.branch_head(tf.task_branch)
    if head is None:
        raise Blocked(f"task branch {tf.task_branch} does not exist", task=task)
    if sha is None:
        return head
    resolved = git.rev_parse(sha)
    if resolved is None:
        raise BadInput(f"{sha!r} is not a commit in this repository", task=task)
    if not git.is_ancestor(resolved, head):
        raise BadInput(f"{resolved[:12]} is not on the task branch {tf.task_branch}", task=task)
    return resolved


def _confirm(layout: Layout, task: str, target: str, digest: str | None, interactive: bool, ask: Callable[[str], str] | None,
             verb: str = "Approve", again: str | None = None, signing: str | None = None) -> str:
    """How the human confirmed ("terminal" or "non-interactive"); Blocked if they did not. `signing`:
    the key that will sign, as the screen shows it."""
    if interactive:
        assert ask is not None
        subject = layout.git().log_fields("-1", ["%s"], target)[0][0] if target else ""
        what = f"the plan of task {task!r} ({layout.task_md(task)}, sha256 {digest[:12]})" if digest else f"the changes of task {task!r} at {target[:12]} ({subject})"
        typed = ask(
            f"{verb} {what}?\n" + (f"Signed with {signing}.\n" if signing else "") +
            "Type the task name to approve, anything else to refuse: "
        ).strip()
        if typed != task:
            raise Blocked(f"not approved: the confirmation did not match the task name {task!r}; nothing was recorded", task=task)
        return "terminal"
    if not layout.config.approval.allow_non_interactive:
        raise Blocked(
            "approval needs a human at a terminal: stdin is not a terminal",
            hint="run `spark-git approve` yourself in a terminal, or set approval.allow_non_interactive = true in the repo's config",
            next=[again] if again else [],  # for the human, at a terminal
            task=task,
        )
    return "non-interactive"


def _record(store: Store, task: str, cp: Checkpoint, sha_given: bool, session: str | None) -> str | None:
    """Records `cp` in task.json unless the task moved while the human was confirming; the task head."""
    layout = store.layout
    with updating(store, task, session, owner=False) as cur:
        cur_head = layout.git().branch_head(cur.task_branch)
        if not sha_given and cur_head != cp.commit_sha:
            raise Blocked(f"the task head moved from {(cp.commit_sha or '?')[:12]} to {(cur_head or '?')[:12]} while you were confirming; nothing was recorded", task=task)
        cp.approved_at = now()
        if cp.type == "plan":
            if protocol.approve_conditions(layout, cur, "plan") or protocol.task_md_digest(layout, task) != cp.task_md_sha256:
                raise Blocked("the task or its task.md changed while you were confirming; nothing was recorded", task=task)
            cur.plan_approval = cp
            cur.checkpoint_history.append({"decision": "plan_approved", "task_md_sha256": cp.task_md_sha256, "by": cp.approved_by,
                                           "via": getattr(cp, "via", None), "at": cp.approved_at})
        else:
            cur.checkpoint = cp
            cur.checkpoint_history.append({"decision": "approved", "commit_sha": cp.commit_sha, "patch_id": cp.patch_id, "by": cp.approved_by,
                                           "at": cp.approved_at})
    return cur_head


class ChangesRequestedData(Model):
    task: str
    commit_sha: str  # the head the decision refers to
    patch_id: str | None
    why: str
    from_state: str
    to: str
    requested_at: str
    requested_by: str
    via: str


def request_changes(layout: Layout, task: str, *, why: str, sha: str | None, session: str | None, interactive: bool,
                    ask: Callable[[str], str] | None = None, show: Callable[[Presented], None] | None = None) -> ChangesRequestedData:
    """The human's "not like this": recorded, bound to the head it refers to, and the task goes back to
    work (AWAITING_USER_APPROVAL → IMPLEMENTATION, or SYNTHESIS in the short variant) through the
    protocol table's row, whose effect starts a new review round."""
    task = task_name(task)
    if not why.strip():
        raise BadInput("a request for changes needs a reason: --why '...'", task=task)
    store = open_store(layout)
    tf = load_task(store, task)
    target = _target(layout, tf, sha)
    if interactive and show is not None:
        show(present(store, tf, target))
    via = _confirm(layout, task, target, None, interactive, ask, verb="Request changes to",
                   again=shlex.join(["spark-git", "approve", task, "--request-changes", "--why", why]))
    by = who_approves(session)
    with updating(store, task, session, owner=False) as cur:
        if sha is None and layout.git().branch_head(cur.task_branch) != target:
            raise Blocked(f"the task head moved from {target[:12]} while you were confirming; nothing was recorded", task=task)
        frm, rule = cur.state, _back_rule(layout, cur)
        ctx = protocol.make_ctx(store, cur, session, why)
        ctx.decision = {"decision": "changes_requested", "commit_sha": target, "patch_id": layout.git().patch_id(branch_ref(cur.base_branch), target),
                        "why": why, "by": by, "via": via}
        if rule is None:  # protocol light, outside AWAITING_USER_APPROVAL: the decision is recorded, the state stays
            protocol.request_changes(ctx)
        else:
            unmet = rule.guard(ctx)
            if unmet:
                raise protocol.refuse(f"cannot request changes to {task}", unmet, task)
            for effect in rule.effects:
                effect(ctx)
            record_transition(store, cur, rule.to.value, session, f"spark-git approve --request-changes --why {why!r}",
                              {**ctx.evidence, "task_head": target, "why": why})
        to = cur.state
    d = ctx.evidence["decision"]
    store.add_notes([(target, {"kind": "changes_requested", "task": task, "session": session, "by": by, "via": via, "why": why})])
    store.event(task, "changes_requested", session, commit_sha=target, patch_id=d["patch_id"], why=why, by=by, via=via)
    return ChangesRequestedData(task=task, commit_sha=target, patch_id=d["patch_id"], why=why, from_state=frm, to=to,
                                requested_at=d["at"], requested_by=by, via=via)


def _back_rule(layout: Layout, tf: TaskFile) -> protocol.Rule | None:
    """The table's way back from AWAITING_USER_APPROVAL; None under protocol light in another state."""
    if tf.state == protocol.State.AWAITING_USER_APPROVAL:
        for to in (protocol.State.IMPLEMENTATION, protocol.State.SYNTHESIS):
            rule = protocol.rule_for(tf, to)
            if rule is not None:
                return rule
    if not protocol.is_full(layout, tf):
        return None
    need = protocol.State.AWAITING_USER_APPROVAL
    raise protocol.refuse(f"cannot request changes to {tf.task_name}", [protocol.Unmet(
        f"task {tf.task_name} is in {tf.state}; approve --request-changes needs {need}", protocol.path_to(tf, need))], tf.task_name)


class PlanRejectedData(Model):
    task: str
    task_md_sha256: str | None
    why: str
    rejected_at: str
    rejected_by: str
    via: str


def reject_plan(layout: Layout, task: str, *, why: str, session: str | None, interactive: bool,
                ask: Callable[[str], str] | None = None) -> PlanRejectedData:
    """The human's "not this plan" (`approve --plan --request-changes --why`): recorded in the decision
    history; the task stays in SYNTHESIS and any plan approval ends."""
    task = task_name(task)
    if not why.strip():
        raise BadInput("rejecting a plan needs a reason: --why '...'", task=task)
    store = open_store(layout)
    tf = load_task(store, task)
    unmet = protocol.approve_conditions(layout, tf, "plan")
    if unmet:
        raise protocol.refuse(f"cannot reject the plan of {task}", unmet, task)
    digest = protocol.task_md_digest(layout, task)
    via = _confirm(layout, task, "", digest, interactive, ask, verb="Reject",
                   again=shlex.join(["spark-git", "approve", task, "--plan", "--request-changes", "--why", why]))
    by, at = who_approves(session), now()
    with updating(store, task, session, owner=False) as cur:
        if protocol.task_md_digest(layout, task) != digest or protocol.approve_conditions(layout, cur, "plan"):
            raise Blocked("the task or its task.md changed while you were confirming; nothing was recorded", task=task)
        cur.plan_approval = None
        cur.checkpoint_history.append({"decision": "plan_rejected", "task_md_sha256": digest, "why": why, "by": by, "via": via, "at": at})
    store.event(task, "plan_rejected", session, task_md_sha256=digest, why=why, by=by, via=via)
    return PlanRejectedData(task=task, task_md_sha256=digest, why=why, rejected_at=at, rejected_by=by, via=via)
