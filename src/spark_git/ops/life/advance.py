"""`advance`: perform one transition of the protocol's table (its guard, then its effects); the
transition is written by shared/transitions.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from spark_git import protocol
from spark_git.core.errors import BadInput, Blocked
from spark_git.core.layout import Layout, task_name
from spark_git.core.model import Model
from spark_git.gates import command as gates
from spark_git.gates import evidence as gate_evidence
from spark_git.gates import verdicts
from spark_git.ops.life import handin
from spark_git.ops.shared import envs, gatetree, signed
from spark_git.ops.shared.taskfile import updating
from spark_git.ops.shared.transitions import record_transition
from spark_git.protocol import State
from spark_git.state.backends import open_store
from spark_git.state.files import write_text_atomic
from spark_git.state.models import TaskFile
from spark_git.state.store import Store


class AdvanceData(Model):
    task: str
    from_state: str
    to: str
    variant: str
    protocol: str
    evidence: dict[str, Any] = {}
    waived: list[str] = []  # unmet conditions recorded but not enforced (protocol = "light")
    next_states: list[str] = []
    build_note: str | None = None  # what the build gate did for this transition: ran now, or a verdict reused (and whose)


def advance(layout: Layout, task: str, to: str | None, *, session: str | None, why: str | None = None, rerun: bool = False) -> AdvanceData:
    task = task_name(task)
    to = _known_state(to, task)
    store = open_store(layout)
    handin.file_handed_in(layout, store, task)  # reports agents handed in from their boxes count now
    with updating(store, task, session, owner=False) as tf:
        frm = tf.state
        rule = _rule(store, tf, to)
        to = rule.to.value
        ctx = protocol.make_ctx(store, tf, session, why, run_build=_build_runner(store, tf, rerun), verify_plan=signed.plan_problem)
        unmet = rule.guard(ctx)
        if to == State.COMPLETE:
            raise protocol.refuse(f"cannot advance {task} to COMPLETE", unmet, task)
        if unmet and (protocol.is_full(layout, tf) or any(u.kind == protocol.OWNER for u in unmet)):
            raise protocol.refuse(f"cannot advance {task} from {frm} to {to}", unmet, task, hint=f"nothing was changed; the conditions of {frm} → {to} are listed")
        waived = [str(u) for u in unmet]
        head = protocol.task_head(ctx)
        for effect in rule.effects:
            effect(ctx)
        for path, text in ctx.writes.items():
            write_text_atomic(path, text)
        build = None
        if isinstance(ctx.record_build, gates.GateEvidence):
            build = ctx.evidence["build"] = gate_evidence.entry(ctx.record_build, session, omit=("timed_out",), by="advance")
        evidence = dict(ctx.evidence)
        evidence["task_head"] = head
        if waived:
            evidence["waived"] = waived
        if why:
            evidence["why"] = why
        record_transition(store, tf, to, session, f"spark-git advance{' --why ' + repr(why) if why else ''}", evidence)
        if build is not None:
            store.audit(task, "build_verifications", build, session=session)
        return AdvanceData(task=task, from_state=frm, to=to, variant=protocol.variant_of(tf), protocol=protocol.protocol_of(layout, tf),
                           evidence=evidence, waived=waived, next_states=protocol.next_states(tf), build_note=_build_note(ctx))


def _build_note(ctx: protocol.Ctx) -> str | None:
    ev, rec = ctx.record_build, ctx.evidence.get("build")
    if isinstance(ev, gates.GateEvidence):
        if ev.reused_from:
            return f"gates.build not run again: the tree of {ev.commit[:12]} passed it before ({ev.reused_from}; --rerun runs it)"
        return f"gates.build ran now on {ev.commit[:12]}: passed" + (f" in {ev.duration_s:.1f} s" if ev.duration_s is not None else "")
    if isinstance(rec, dict) and rec.get("commit"):
        return f"gates.build not run again: it passed on {str(rec['commit'])[:12]} at {rec.get('at')} (log {rec.get('log_path')})"
    return None


def _known_state(to: str | None, task: str) -> str | None:
    if to is None:
        return None
    to = to.strip().upper()
    if to not in protocol.WORKFLOW_STATES:
        raise BadInput(f"unknown state {to!r}: use one of {', '.join(protocol.WORKFLOW_STATES)}", task=task)
    return to


def _rule(store: Store, tf: TaskFile, to: str | None) -> protocol.Rule:
    """The transition to `to` (None: the variant's default next state); Blocked if it is not legal."""
    legal, task, frm = protocol.next_states(tf), tf.task_name, tf.state
    if to is None:
        if not legal:
            raise Blocked(f"task {task!r} is in {frm}: there is no state after it", task=task)
        to = legal[0]
    rule = protocol.rule_for(tf, to)
    if rule is None:
        raise Blocked(
            f"illegal transition {frm} → {to} for task {task!r} (variant {protocol.variant_of(tf)})",
            hint=f"legal next state(s) from {frm}: {', '.join(legal) or 'none'}",
            details={"legal_next_states": legal},
            next=[_command_to(store, tf, s) for s in legal],
            task=task,
        )
    return rule


def _command_to(store: Store, tf: TaskFile, state: str) -> str:
    """The command towards `state`; `complete` after the human's approval when none holds for the head."""
    cmd = protocol.command_to(tf.task_name, state, tf.state)
    if state != State.COMPLETE:
        return cmd
    cp = tf.checkpoint
    if cp is not None and cp.type == "changes" and cp.approved and protocol.make_ctx(store, tf, tf.session_id, dry=True).holds(cp.commit_sha, cp.patch_id):
        return cmd
    return f"spark-git approve {tf.task_name} --changes && {cmd}"


def _build_runner(store: Store, tf: TaskFile, rerun: bool = False) -> Callable[[], gates.GateEvidence]:
    """The build gate on the task worktree, for the guard of VALIDATION → REVIEW."""
    layout, task = store.layout, tf.task_name
    # A passing verdict of this very tree (same command and environment) is reused, and the result says
    # so: re-running the whole suite on a tree that passed a minute earlier told nobody anything.
    return lambda: verdicts.run_configured(store, "build", layout.config.gates, Path(tf.worktree), layout.logs_dir(task),
                                           env=envs.for_worktree(store, task), rerun=rerun,
                                           place=lambda commit: gatetree.clean_checkout(store, f"{task}/build", commit, task))
