"""The machine as data: the transition table gives the legal next states of the protocol's two
variants (with the ways back of issue 11: VALIDATION → IMPLEMENTATION, the human's request for changes), the refusal builder's two forms, and protocol/ stays pure (it loads
neither gates nor ops)."""

from __future__ import annotations

import subprocess
import sys

from spark_git import protocol
from spark_git.protocol import State
from spark_git.protocol.machine import legal_anywhere
from spark_git.state.models import TaskFile

FULL = {
    "INIT": ["CLASSIFIED"], "CLASSIFIED": ["REQUIREMENTS"], "REQUIREMENTS": ["SYNTHESIS"], "SYNTHESIS": ["IMPLEMENTATION"],
    "IMPLEMENTATION": ["VALIDATION"], "VALIDATION": ["REVIEW", "IMPLEMENTATION", "REQUIREMENTS"],
    "REVIEW": ["AWAITING_USER_APPROVAL", "IMPLEMENTATION", "SCOPE_NEGOTIATION", "REQUIREMENTS"],
    "SCOPE_NEGOTIATION": ["SYNTHESIS", "AWAITING_USER_APPROVAL"], "AWAITING_USER_APPROVAL": ["COMPLETE", "IMPLEMENTATION"],
    "COMPLETE": ["CLEANUP"], "CLEANUP": [], "ABANDONED": [],
}
SHORT = {
    "INIT": ["CLASSIFIED"], "CLASSIFIED": ["REQUIREMENTS"], "REQUIREMENTS": ["SYNTHESIS"], "SYNTHESIS": ["AWAITING_USER_APPROVAL"],
    "IMPLEMENTATION": [], "VALIDATION": [], "REVIEW": [], "SCOPE_NEGOTIATION": [],
    "AWAITING_USER_APPROVAL": ["COMPLETE", "SYNTHESIS"], "COMPLETE": ["CLEANUP"], "CLEANUP": [], "ABANDONED": [],
}


def _tf(state: str, variant: str | None) -> TaskFile:
    return TaskFile(task_name="t", session_id="s", state=state, base_branch="main", base_commit="0" * 40,
                    task_branch="task/t", worktree="/nonexistent", variant=variant)


def test_next_states_per_variant() -> None:
    for variant, table in (("full", FULL), ("short", SHORT), (None, FULL), ("odd", FULL)):
        for state, expected in table.items():
            got = protocol.next_states(_tf(state, variant))
            assert got == expected, (variant, state)
            assert all(type(s) is str for s in got)  # plain strings into JSON, never enum members


def test_state_values_are_the_file_strings() -> None:
    assert [s.value for s in State] == list(FULL)
    assert [str(s) for s in protocol.WORKFLOW_STATES] == [s for s in FULL if s != "ABANDONED"]
    assert f"{State.AWAITING_USER_APPROVAL}" == "AWAITING_USER_APPROVAL"


def test_every_transition_has_a_guard_and_legal_transitions_only() -> None:
    for r in protocol.TRANSITIONS:
        assert callable(r.guard) and all(callable(e) for e in r.effects)
        assert legal_anywhere(r.frm, r.to)
    assert legal_anywhere("REVIEW", "ABANDONED") and not legal_anywhere("CLEANUP", "ABANDONED")
    assert not legal_anywhere("INIT", "REVIEW") and not legal_anywhere(None, "INIT")


def test_effects_live_on_their_transitions() -> None:
    names = {(r.frm.value, r.to.value): [e.__name__ for e in r.effects] for r in protocol.TRANSITIONS}
    assert names["SCOPE_NEGOTIATION", "AWAITING_USER_APPROVAL"] == ["present_changes", "defer_follow_ups"]
    assert names["REVIEW", "AWAITING_USER_APPROVAL"] == ["present_changes"]
    assert names["SYNTHESIS", "AWAITING_USER_APPROVAL"] == ["present_changes"]
    for back in (("VALIDATION", "REQUIREMENTS"), ("REVIEW", "REQUIREMENTS"), ("SCOPE_NEGOTIATION", "SYNTHESIS")):
        assert names[back] == ["void_plan_approval"]
    for back in (("AWAITING_USER_APPROVAL", "IMPLEMENTATION"), ("AWAITING_USER_APPROVAL", "SYNTHESIS")):
        assert names[back] == ["request_changes"]


def test_refuse_forms() -> None:
    unmet = [protocol.Unmet("a", "fix"), protocol.Unmet("b", "fix"), protocol.Unmet("c")]
    e = protocol.refuse("cannot x", unmet, "t")
    assert (e.message, e.hint, e.next) == ("cannot x: 3 condition(s) not met", "nothing was changed", ["fix"])
    assert e.details == {"unmet": ["a  → fix", "b  → fix", "c"]}
    plain = protocol.refuse("cannot x", unmet, "t", default_hint=None, dedupe=False)
    assert (plain.hint, plain.next) == (None, ["fix", "fix"])
    assert protocol.refuse("cannot x", unmet, "t", hint="h").hint == "h"


def test_protocol_loads_neither_gates_nor_ops() -> None:
    code = "import sys, spark_git.protocol; print(sorted(m for m in sys.modules if m.startswith(('spark_git.gates', 'spark_git.ops', 'spark_git.cli'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
