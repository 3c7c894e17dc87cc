"""What other commands ask of the protocol: is task.json's state explained by its log (hand edits),
and the protocol's conditions of `merge`, `complete`, `approve` and `agent add`. Each returns ALL
unmet ones (empty: go ahead), each with the command that would make it hold."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

from spark_git.core.errors import Blocked, CorruptState
from spark_git.core.git import branch_ref
from spark_git.core.layout import Layout
from spark_git.protocol.checks import every_agent_complete, plan_unmet, rejected_since_presented
from spark_git.protocol.context import PlanCheck, approval_holds, make_ctx
from spark_git.protocol.machine import is_full, legal_anywhere, next_states, path_to
from spark_git.protocol.states import AGENT_ADD_STATES, SHORT, State, variant_of
from spark_git.protocol.unmet import FORGED_LOG, STATE_LOG_MISMATCH, Unmet
from spark_git.state import chain, recordmac
from spark_git.state.models import TaskFile
from spark_git.state.store import Store

S = State


def _inconsistency(tf: TaskFile, key: bytes | None) -> Unmet | None:
    log = tf.transition_log
    if not log:
        return Unmet(f"state is {tf.state} but transition_log is empty", kind=STATE_LOG_MISMATCH)
    bad = chain.broken_at(log)
    if bad is not None:
        t = log[bad]
        return Unmet(f"transition_log entry {bad} ({t.from_state} → {t.to} at {t.at}) does not fit the hash chain: it was written or edited by hand")
    bad = chain.unauthentic_at(log, key, tf.task_name)
    if bad is not None:
        t = log[bad]
        return Unmet(f"transition_log entry {bad} ({t.from_state} → {t.to} at {t.at}) does not carry spark-git's MAC: the log was written "
                     "or rewritten outside spark-git (a recomputed hash chain does not make it valid), or with another records key than "
                     f"{recordmac.key_path()} (another machine of yours: copy its key here)", kind=FORGED_LOG)
    if log[0].from_state is not None or log[0].to != S.INIT:
        return Unmet(f"transition_log does not begin with the start of the task (→ INIT), but with {log[0].from_state} → {log[0].to}")
    for prev, t in pairwise(log):
        if t.from_state != prev.to:
            return Unmet(f"transition_log jumps: {prev.to} is followed by a transition from {t.from_state} (at {t.at})")
        light = getattr(t, "protocol", None) == "light"
        if not light and not legal_anywhere(t.from_state, t.to):
            return Unmet(f"transition_log holds an illegal transition {t.from_state} → {t.to} (at {t.at})")
    if tf.state != log[-1].to:
        return Unmet(f"state is {tf.state} but the last recorded transition leads to {log[-1].to}", kind=STATE_LOG_MISMATCH)
    return None


def inconsistency(tf: TaskFile, key: bytes | None) -> str | None:
    """Why `tf.state` cannot be explained by its transition_log, authenticated with the records `key`
    (None: it can; a None key, where it cannot be read, checks no MAC)."""
    problem = _inconsistency(tf, key)
    return problem.condition if problem else None


def consistency_problems(store: Store, tf: TaskFile) -> list[Unmet]:
    """For `doctor`: what about task.json's state its transition_log cannot explain."""
    problem = _inconsistency(tf, recordmac.load_key(store.layout))
    unchained = None if problem else _unchained(store, tf)
    return [problem] if problem else [Unmet(unchained)] if unchained else []


def _unchained(store: Store, tf: TaskFile) -> str | None:
    """A log without hashes is accepted only if the audit trail has never recorded a chained entry
    (a task started before the chain existed), so stripping the hashes does not hide an edit."""
    if chain.chained(tf.transition_log):
        return None
    try:
        trail = store.read_audit(tf.task_name)
    except CorruptState:  # an unreadable trail proves nothing either way (doctor reports it)
        return None
    if trail is not None and any(t.get("hash") for t in trail.state_transitions):
        return "transition_log has no hash chain but the audit trail recorded chained transitions: the log was rewritten by hand"
    return None


def check_consistent(store: Store, tf: TaskFile) -> None:
    problem = inconsistency(tf, recordmac.load_key(store.layout)) or _unchained(store, tf)
    if problem:
        raise Blocked(
            f"task {tf.task_name!r} was edited by hand: {problem}; every command on it is refused until a human looks",
            hint="task.json's state must be explained by its transition_log; run `spark-git doctor` (it reads the task anyway)",
            next=[f"spark-git doctor {tf.task_name}", f"spark-git audit {tf.task_name}"],
            details={"path": str(store.layout.task_json(tf.task_name)), "problem": problem},
            task=tf.task_name,
        )


def merge_conditions(layout: Layout, tf: TaskFile, verify_plan: PlanCheck) -> list[Unmet]:
    """Protocol conditions for `spark-git merge` (agent → task) beyond the merge gates; `verify_plan`:
    the signature check of the plan approval (the ops layer's)."""
    if not is_full(layout, tf):
        return []
    if variant_of(tf) == SHORT:
        if tf.state != S.SYNTHESIS:
            return [Unmet(f"task {tf.task_name} is in {tf.state}; under protocol \"full\" (variant short) agent merges are accepted only in SYNTHESIS after plan approval", path_to(tf, S.SYNTHESIS))]
        return [Unmet(f"{u.condition} (agent merges in SYNTHESIS need the human's plan approval)", u.fix) for u in plan_unmet(layout, tf, verify_plan)]
    if tf.state != S.IMPLEMENTATION:
        return [Unmet(f"task {tf.task_name} is in {tf.state}; under protocol \"full\" agent merges are accepted only in IMPLEMENTATION", path_to(tf, S.IMPLEMENTATION))]
    return []


def complete_conditions(store: Store, tf: TaskFile, head: str) -> list[Unmet]:
    """Protocol conditions for `spark-git complete` (task → base) beyond approval and the final gate."""
    layout = store.layout
    if not is_full(layout, tf):
        return []
    if tf.state != S.AWAITING_USER_APPROVAL:
        return [Unmet(f"task {tf.task_name} is in {tf.state}; under protocol \"full\" complete needs AWAITING_USER_APPROVAL", path_to(tf, S.AWAITING_USER_APPROVAL))]
    presented, patch = None, None
    for t in reversed(tf.transition_log):
        if t.to == S.AWAITING_USER_APPROVAL:
            presented, patch = t.evidence.get("task_head"), t.evidence.get("task_patch_id")
            break
    if not approval_holds(layout.git(), branch_ref(tf.base_branch), presented, patch, head):
        return [Unmet(f"the task head {head[:12]} is not the commit presented for approval ({(presented or '?')[:12]}) and its patch differs",
                      f"spark-git approve {tf.task_name} --request-changes --why 'changed after review'")]
    ctx = make_ctx(store, tf, tf.session_id, dry=True)
    return every_agent_complete(ctx) + rejected_since_presented(ctx)


def approve_conditions(layout: Layout, tf: TaskFile, kind: str) -> list[Unmet]:
    """`approve --plan` only in SYNTHESIS, `approve --changes` only in AWAITING_USER_APPROVAL (full)."""
    if not is_full(layout, tf):
        return []
    need = S.SYNTHESIS if kind == "plan" else S.AWAITING_USER_APPROVAL
    if tf.state != need:
        return [Unmet(f"task {tf.task_name} is in {tf.state}; approve --{kind} needs {need}", path_to(tf, need))]
    return []


def agent_add_guard(store: Store) -> Callable[[TaskFile], None]:
    """For tasks.add_agent: refused outside AGENT_ADD_STATES (full); joining in SYNTHESIS voids the plan approval."""

    def guard(tf: TaskFile) -> None:
        check_consistent(store, tf)
        reopen = S.REQUIREMENTS in next_states(tf)
        if is_full(store.layout, tf) and tf.state not in AGENT_ADD_STATES:
            raise Blocked(
                f"task {tf.task_name!r} is in {tf.state}: agents can join only in {', '.join(AGENT_ADD_STATES)}",
                hint="a new agent must state its requirements: the task must go back to REQUIREMENTS first"
                + (" (spark-git advance --to REQUIREMENTS --why ...)" if reopen else ""),
                next=[f"spark-git advance {tf.task_name} --to REQUIREMENTS --why '...'"] if reopen else [],
                details={"state": tf.state}, task=tf.task_name,
            )
        if tf.state == S.SYNTHESIS and tf.plan_approval is not None:
            tf.plan_approval = None

    return guard
