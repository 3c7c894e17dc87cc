"""The task protocol, pure of commands: states (states.py), the transition table with guards and
effects (machine.py, guards.py, effects.py), and the conditions other commands ask for (conditions.py).
Callers use `from spark_git import protocol`; ops/life/advance.py performs the transitions."""

from spark_git.protocol.conditions import (
    agent_add_guard,
    approve_conditions,
    check_consistent,
    complete_conditions,
    consistency_problems,
    inconsistency,
    merge_conditions,
)
from spark_git.protocol.context import BuildRun, Ctx, PlanCheck, approval_holds, config_rules, make_ctx, protocol_of, read_status, task_head, task_md_digest, walk_rules
from spark_git.protocol.effects import request_changes
from spark_git.protocol.machine import (
    TRANSITIONS,
    WORKFLOW_STATES,
    Rule,
    blockers,
    command_to,
    guard_for,
    is_full,
    legal,
    next_states,
    path_to,
    rule_for,
)
from spark_git.protocol.states import AGENT_ADD_STATES, FULL, SHORT, VARIANTS, State, variant_of
from spark_git.protocol.unmet import FORGED_LOG, OWNER, STATE_LOG_MISMATCH, Unmet, refuse

__all__ = [
    "AGENT_ADD_STATES",
    "FORGED_LOG",
    "FULL",
    "OWNER",
    "SHORT",
    "STATE_LOG_MISMATCH",
    "TRANSITIONS",
    "VARIANTS",
    "WORKFLOW_STATES",
    "BuildRun",
    "Ctx",
    "PlanCheck",
    "Rule",
    "State",
    "Unmet",
    "agent_add_guard",
    "approval_holds",
    "approve_conditions",
    "blockers",
    "check_consistent",
    "command_to",
    "complete_conditions",
    "config_rules",
    "consistency_problems",
    "guard_for",
    "inconsistency",
    "is_full",
    "legal",
    "make_ctx",
    "merge_conditions",
    "next_states",
    "path_to",
    "protocol_of",
    "read_status",
    "refuse",
    "request_changes",
    "rule_for",
    "task_head",
    "task_md_digest",
    "variant_of",
    "walk_rules",
]
