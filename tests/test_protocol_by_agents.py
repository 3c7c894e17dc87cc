"""The `full` protocol walked from INIT to cleanup on a small Python package with a pytest gate, every
agent's part done by a real client launched by `agent run --all` (Claude Code for the requirements,
Gemini CLI for the plans and the final review, Codex CLI for the implementation, Claude Code for the
implementation's review), each played by the scripted model server. Nothing is written and no report
filed by hand: the coordinator only runs the `next` command each step prints (issue 32). The walk is
fixtures/daywalk.py's, which scripts/bench_day walks on a real project."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator

import pytest
from fixtures import dayproject
from fixtures.agentworld import World, agent_world
from fixtures.daywalk import Change, Day
from fixtures.repo import git

REV, UPD = "architecture-reviewer", "test-updater"  # MEDIUM (a test file): the classification's agent set
CONFIG = dayproject.config().replace('protocol = "light"\n', "")  # protocol full, pytest as build and final gate
REQUIREMENTS = ("# Requirements\n\n- `calc.sub(a, b)` returns a - b for ints\n- a pytest test covers it\n"
                "- the public interface of calc keeps add and neg unchanged\n")
SUB = "\n\ndef sub(a: int, b: int) -> int:\n    return a - b\n"
TEST = "from calc import sub\n\n\ndef test_sub() -> None:\n    assert sub(5, 3) == 2\n"
COMMIT = (f"printf '%s' {shlex.quote(SUB)} >> calc/__init__.py && printf '%s' {shlex.quote(TEST)} > tests/test_sub.py"
          f" && git add -A && git commit -q -m '[{UPD}] sub() and its test'")
CHANGE = Change("Add sub to calc", ("tests/test_calc.py",), REQUIREMENTS, "sub() and its test", {UPD: COMMIT})


@pytest.fixture
def world() -> Iterator[World]:
    yield from agent_world(dayproject.FILES, CONFIG, ("claude", "codex", "gemini"))


def test_the_full_protocol_is_walked_by_agents_of_three_clients(world: World) -> None:
    w, day = world, Day(world, CHANGE)
    assert day.at("start")["next"][-2:] == ["spark-git classify t1", "spark-git status t1"]
    assert day.at("classify")["data"]["decision"]["agents"] == [REV, UPD]
    assert day.at("advance")["data"]["to"] == "CLASSIFIED"
    out = day.at("advance")
    assert out["data"]["to"] == "REQUIREMENTS" and out["next"][0] == "spark-git agent run t1 --all", out

    # REQUIREMENTS: Claude Code; each answer carries its requirements analysis, filed as its report
    out = day.at("agent run claude")
    assert out["next"] == ["spark-git advance t1"], out
    for a in (REV, UPD):
        assert (w.task / f"t1-{a}-requirements.md").read_text() == REQUIREMENTS
    assert day.at("advance")["data"]["to"] == "SYNTHESIS"

    # SYNTHESIS: Gemini CLI; each answer carries its plan, filed in task.md
    out = day.at("agent run gemini")
    assert out["next"] == ["spark-git approve t1 --plan"], out
    md = (w.task / "task.md").read_text()
    assert f"## Implementation Plan: {REV}\n\n{REV} adds" in md and f"## Implementation Plan: {UPD}\n\n{UPD} adds" in md, md
    day.at("approve")
    assert day.at("advance")["data"]["to"] == "IMPLEMENTATION"

    # IMPLEMENTATION: Codex CLI writes and commits; the coordinator merges (pytest is the gate)
    assert day.at("agent run codex")["next"] == ["spark-git merge t1 --all"]
    assert day.at("merge")["next"] == ["spark-git agent run t1 --all"]  # now the reviewers
    head = git(w.repo, "rev-parse", "t1")
    assert git(w.repo, "log", "-1", "--format=%s", "t1") == f"[{UPD}] sub() and its test"

    # ... and its reviewer, Claude Code, reviews that head: the decision is filed, bound to it
    out = day.at("agent run claude")
    st = json.loads((w.task / "agents" / REV / "status.json").read_text())
    assert st["decision"] == "APPROVED" and st["last_review_sha"] == head, st
    assert out["next"] == ["spark-git advance t1"], out
    assert day.at("advance")["data"]["to"] == "VALIDATION"
    assert day.at("advance")["data"]["to"] == "REVIEW"

    # REVIEW: Gemini CLI reviews again
    assert day.at("agent run gemini")["next"] == ["spark-git advance t1"]
    assert day.at("advance")["data"]["to"] == "AWAITING_USER_APPROVAL"
    day.at("complete")  # after `approve t1 --changes`
    assert git(w.repo, "rev-parse", "main^2") == head
    assert day.at("cleanup")["data"]["final_state"] == "CLEANUP"  # `complete` said `cleanup t1` (no `advance` between)

    audit = day.at("audit")["data"]
    assert audit["smells"] == [], audit
    trail = json.loads((w.task / "audit-trail.json").read_text())
    runs = [(e["agent"], e["client"], e["report_status"]) for e in trail["events"] if e.get("kind") == "agent_run"]
    assert sorted(runs) == sorted([(REV, "claude", "COMPLETE"), (UPD, "claude", "COMPLETE"), (REV, "gemini", "COMPLETE"), (UPD, "gemini", "COMPLETE"),
                                   (UPD, "codex", "COMPLETE"), (REV, "claude", "COMPLETE"), (REV, "gemini", "COMPLETE")]), runs
    # every report came from the agent's own session (agent run), none from the coordinator's
    assert {i["session_id"] for i in trail["agent_invocations"]} == {f"agent:t1:{REV}", f"agent:t1:{UPD}"}, trail["agent_invocations"]
    assert [s.label for s in day.steps][-3:] == ["complete", "cleanup", "audit"]
