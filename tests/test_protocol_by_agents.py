"""The `full` protocol walked from INIT to cleanup on a small Python package with a pytest gate, every
agent's part done by a real client launched by `agent run --all` (Claude Code for the requirements,
Gemini CLI for the plans and the final review, Codex CLI for the implementation, Claude Code for the
implementation's review), each played by the scripted model server. Nothing is written and no report
filed by hand: the coordinator only runs the `next` command each step prints (issue 32)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator

import pytest
from fixtures import dayproject
from fixtures.agentworld import World, agent_world, output, run_all
from fixtures.modelserver.anthropic import Anthropic
from fixtures.modelserver.core import Say, Tool
from fixtures.modelserver.gemini import GeminiApi
from fixtures.modelserver.openai import OpenAIResponses
from fixtures.repo import git

REV, UPD = "architecture-reviewer", "test-updater"  # MEDIUM (a test file): the classification's agent set
CONFIG = dayproject.config().replace('protocol = "light"\n', "")  # protocol full, pytest as build and final gate
REQUIREMENTS = ("# Requirements\n\n- `calc.sub(a, b)` returns a - b for ints\n- a pytest test covers it\n"
                "- the public interface of calc keeps add and neg unchanged\n")
SUB = "\n\ndef sub(a: int, b: int) -> int:\n    return a - b\n"
TEST = "from calc import sub\n\n\ndef test_sub() -> None:\n    assert sub(5, 3) == 2\n"


@pytest.fixture
def world() -> Iterator[World]:
    yield from agent_world(dayproject.FILES, CONFIG, ("claude", "codex", "gemini"))


def test_the_full_protocol_is_walked_by_agents_of_three_clients(world: World) -> None:
    w = world
    assert w.step("start", "t1", "--title", "Add sub to calc", "--agents", "")["next"][-2:] == ["spark-git classify t1", "spark-git status t1"]
    assert w.step("classify", "t1", "--files", "tests/test_calc.py")["data"]["decision"]["agents"] == [REV, UPD]
    assert w.step("advance", "t1")["data"]["to"] == "CLASSIFIED"
    out = w.step("advance", "t1")
    assert out["data"]["to"] == "REQUIREMENTS" and out["next"][0] == "spark-git agent run t1 --all", out

    # REQUIREMENTS: Claude Code; each answer carries its requirements analysis, filed as its report
    out = run_all(w, "claude", Anthropic(), {a: [Say(output(f"{a}: requirements", requirements=REQUIREMENTS))] for a in (REV, UPD)})
    assert out["next"] == ["spark-git advance t1"], out
    for a in (REV, UPD):
        assert (w.task / f"t1-{a}-requirements.md").read_text() == REQUIREMENTS
    assert w.step("advance", "t1")["data"]["to"] == "SYNTHESIS"

    # SYNTHESIS: Gemini CLI; each answer carries its plan, filed in task.md
    out = run_all(w, "gemini", GeminiApi(), {a: [Say(output(f"{a}: plan", plan=f"{a} adds what its part needs: sub() and its test."))] for a in (REV, UPD)})
    assert out["next"] == ["spark-git approve t1 --plan"], out
    md = (w.task / "task.md").read_text()
    assert f"## Implementation Plan: {REV}\n\n{REV} adds" in md and f"## Implementation Plan: {UPD}\n\n{UPD} adds" in md, md
    w.step("approve", "t1", "--plan")
    assert w.step("advance", "t1")["data"]["to"] == "IMPLEMENTATION"

    # IMPLEMENTATION: Codex CLI writes and commits; the coordinator merges (pytest is the gate)
    upd = w.task / "agents" / UPD / "code"
    commit = (f"printf '%s' {shlex.quote(SUB)} >> calc/__init__.py && printf '%s' {shlex.quote(TEST)} > tests/test_sub.py"
              f" && git add -A && git commit -q -m '[{UPD}] sub() and its test'")
    out = run_all(w, "codex", OpenAIResponses(), {UPD: [Tool("exec_command", {"cmd": commit, "workdir": str(upd)}),
                                                        Say(output("sub() added with a test", artifacts={"files_changed": ["calc/__init__.py"]}))]})
    assert out["next"] == ["spark-git merge t1 --all"], out
    assert w.step("merge", "t1", "--all")["next"] == ["spark-git agent run t1 --all"]  # now the reviewers
    head = git(w.repo, "rev-parse", "t1")
    assert git(w.repo, "log", "-1", "--format=%s", "t1") == f"[{UPD}] sub() and its test"

    # ... and its reviewer, Claude Code, reviews that head: the decision is filed, bound to it
    out = run_all(w, "claude", Anthropic(), {REV: [Say(output("looks right", decision="APPROVED"))]})
    st = json.loads((w.task / "agents" / REV / "status.json").read_text())
    assert st["decision"] == "APPROVED" and st["last_review_sha"] == head, st
    assert out["next"] == ["spark-git advance t1"], out
    assert w.step("advance", "t1")["data"]["to"] == "VALIDATION"
    assert w.step("advance", "t1")["data"]["to"] == "REVIEW"

    # REVIEW: Gemini CLI reviews again
    out = run_all(w, "gemini", GeminiApi(), {REV: [Say(output("approved for landing", decision="APPROVED"))]})
    assert out["next"] == ["spark-git advance t1"], out
    assert w.step("advance", "t1")["data"]["to"] == "AWAITING_USER_APPROVAL"
    w.step("approve", "t1", "--changes")
    w.step("complete", "t1")
    assert git(w.repo, "rev-parse", "main^2") == head
    assert w.step("advance", "t1")["data"]["to"] == "CLEANUP"
    w.step("cleanup", "t1")

    audit = w.step("audit", "t1")["data"]
    assert audit["smells"] == [], audit
    trail = json.loads((w.task / "audit-trail.json").read_text())
    runs = [(e["agent"], e["client"], e["report_status"]) for e in trail["events"] if e.get("kind") == "agent_run"]
    assert sorted(runs) == sorted([(REV, "claude", "COMPLETE"), (UPD, "claude", "COMPLETE"), (REV, "gemini", "COMPLETE"), (UPD, "gemini", "COMPLETE"),
                                   (UPD, "codex", "COMPLETE"), (REV, "claude", "COMPLETE"), (REV, "gemini", "COMPLETE")]), runs
    # every report came from the agent's own session (agent run), none from the coordinator's
    assert {i["session_id"] for i in trail["agent_invocations"]} == {f"agent:t1:{REV}", f"agent:t1:{UPD}"}, trail["agent_invocations"]
