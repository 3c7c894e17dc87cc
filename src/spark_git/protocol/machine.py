"""The state machine as data: every transition with its workflow variants, its guard and its effects.
Each transition carries its guard and its effect; the functions below only read the table.

`advance` (ops/life/advance.py) performs the transitions; `status` asks for their blockers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from spark_git.core.layout import Layout
from spark_git.protocol.context import Ctx, PlanCheck, make_ctx, protocol_of
from spark_git.protocol.effects import defer_follow_ups, present_changes, request_changes, void_plan_approval
from spark_git.protocol.guards import (
    g_awaiting,
    g_back_to_impl,
    g_build_failed,
    g_changes_requested,
    g_classified,
    g_cleanup,
    g_complete,
    g_implementation,
    g_reopen,
    g_requirements,
    g_review,
    g_scope,
    g_scope_to_awaiting,
    g_scope_to_synthesis,
    g_short_awaiting,
    g_synthesis,
    g_validation,
)
from spark_git.protocol.states import FULL, SHORT, State, variant_of
from spark_git.protocol.unmet import OWNER, Unmet
from spark_git.state.models import TaskFile
from spark_git.state.store import Store

Guard = Callable[[Ctx], list[Unmet]]
Effect = Callable[[Ctx], None]


@dataclass(frozen=True)
class Rule:
    """One transition of the machine."""

    frm: State
    to: State
    variants: tuple[str, ...]
    guard: Guard
    effects: tuple[Effect, ...] = ()


S, BOTH = State, (FULL, SHORT)
# Per from-state in this order: the first legal one is `advance`'s default.
TRANSITIONS: tuple[Rule, ...] = (
    Rule(S.INIT, S.CLASSIFIED, BOTH, g_classified),
    Rule(S.CLASSIFIED, S.REQUIREMENTS, BOTH, g_requirements),
    Rule(S.REQUIREMENTS, S.SYNTHESIS, BOTH, g_synthesis),
    Rule(S.SYNTHESIS, S.IMPLEMENTATION, (FULL,), g_implementation),
    Rule(S.SYNTHESIS, S.AWAITING_USER_APPROVAL, (SHORT,), g_short_awaiting, (present_changes,)),
    Rule(S.IMPLEMENTATION, S.VALIDATION, (FULL,), g_validation),
    Rule(S.VALIDATION, S.REVIEW, (FULL,), g_review),
    Rule(S.VALIDATION, S.IMPLEMENTATION, (FULL,), g_build_failed),
    Rule(S.VALIDATION, S.REQUIREMENTS, (FULL,), g_reopen, (void_plan_approval,)),
    Rule(S.REVIEW, S.AWAITING_USER_APPROVAL, (FULL,), g_awaiting, (present_changes,)),
    Rule(S.REVIEW, S.IMPLEMENTATION, (FULL,), g_back_to_impl),
    Rule(S.REVIEW, S.SCOPE_NEGOTIATION, (FULL,), g_scope),
    Rule(S.REVIEW, S.REQUIREMENTS, (FULL,), g_reopen, (void_plan_approval,)),
    Rule(S.SCOPE_NEGOTIATION, S.SYNTHESIS, (FULL,), g_scope_to_synthesis, (void_plan_approval,)),
    Rule(S.SCOPE_NEGOTIATION, S.AWAITING_USER_APPROVAL, (FULL,), g_scope_to_awaiting, (present_changes, defer_follow_ups)),
    Rule(S.AWAITING_USER_APPROVAL, S.COMPLETE, BOTH, g_complete),
    Rule(S.AWAITING_USER_APPROVAL, S.IMPLEMENTATION, (FULL,), g_changes_requested, (request_changes,)),
    Rule(S.AWAITING_USER_APPROVAL, S.SYNTHESIS, (SHORT,), g_changes_requested, (request_changes,)),
    Rule(S.COMPLETE, S.CLEANUP, BOTH, g_cleanup),
)
# The states a task walks through (ABANDONED ends it from anywhere, outside the table).
WORKFLOW_STATES: tuple[State, ...] = tuple(s for s in State if any(s in (r.frm, r.to) for r in TRANSITIONS))


def rules_from(tf: TaskFile) -> list[Rule]:
    v = variant_of(tf)
    return [r for r in TRANSITIONS if r.frm == tf.state and v in r.variants]


def rule_for(tf: TaskFile, to: str) -> Rule | None:
    return next((r for r in rules_from(tf) if r.to == to), None)


def next_states(tf: TaskFile) -> list[str]:
    return [r.to.value for r in rules_from(tf)]


def legal(tf: TaskFile, to: str) -> bool:
    return rule_for(tf, to) is not None


def legal_anywhere(frm: str | None, to: str) -> bool:
    """Legal in some variant (for a recorded transition_log)."""
    if to == State.ABANDONED and frm not in (State.CLEANUP, State.ABANDONED):  # `abandon` ends a task from any live state
        return True
    return any(r.frm == frm and r.to == to for r in TRANSITIONS)


def guard_for(tf: TaskFile, to: str) -> Guard:
    r = rule_for(tf, to)
    if r is None:
        raise KeyError(f"no transition {tf.state} → {to} in variant {variant_of(tf)}")
    return r.guard


def is_full(layout: Layout, tf: TaskFile) -> bool:
    return protocol_of(layout, tf) == "full"


def blockers(store: Store, tf: TaskFile, session: str | None, verify_plan: PlanCheck | None) -> dict[str, list[Unmet]]:
    """For `status`: each legal next state → what blocks it (dry: no gate runs)."""
    out = {}
    for to in next_states(tf):
        ctx = make_ctx(store, tf, session if session is not None else tf.session_id, dry=True, verify_plan=verify_plan)
        out[to] = [u for u in guard_for(tf, to)(ctx) if u.kind != OWNER]
    return out


def command_to(task: str, state: str, frm: str | None = None) -> str:
    """The command that performs a transition: three of them are whole commands of their own."""
    if frm == State.AWAITING_USER_APPROVAL and state in (State.IMPLEMENTATION, State.SYNTHESIS):
        return f"spark-git approve {task} --request-changes --why 'what must change'"
    if state == State.COMPLETE:
        return f"spark-git complete {task}"
    if state == State.CLEANUP:
        return f"spark-git cleanup {task}"
    return f"spark-git advance {task} --to {state}"


def path_to(tf: TaskFile, state: str) -> str:
    if state in next_states(tf):
        return command_to(tf.task_name, state, tf.state)
    return f"spark-git advance {tf.task_name}"  # a step towards `state`; the refusal says where it leads
