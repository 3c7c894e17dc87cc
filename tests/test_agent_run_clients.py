"""`spark-git agent run` with the real Codex CLI and Gemini CLI (Claude Code: tests/test_agent_run.py),
each played by the scripted server through its own harness: a headless run that edits, commits with
attribution and answers with the Universal Output JSON becomes a's COMPLETE report with that evidence."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures import codexrun
from fixtures.modelserver import gemini_agent
from fixtures.modelserver.core import ModelServer, Say, Script, Tool, dead_proxy
from fixtures.modelserver.gemini import GeminiApi
from fixtures.modelserver.openai import OpenAIResponses
from fixtures.repo import Run, git, spark

OUTPUT = {"status": "OK", "summary": "work committed", "artifacts": {"files_changed": ["note.txt"]}}
COMMIT = "echo done > note.txt && git add -A && git commit -q -m '[a] note'"


def owner(env: dict[str, str]) -> dict[str, str]:
    """The coordinator's environment: the harness's, without an agent's SPARK_* identity."""
    return {**{k: v for k, v in env.items() if not k.startswith("SPARK_")}, "SPARK_SESSION_ID": "owner"}


def reported(main: Path, worktree: Path, r: Run) -> None:
    out = json.loads(r.stdout)
    assert out["status"] == "OK" and out["data"]["report_status"] == "COMPLETE", out
    assert git(worktree, "log", "-1", "--format=%s") == "[a] note"
    st = json.loads((main.parent / "repo.tasks/t1/agents/a/status.json").read_text())
    assert st["status"] == "COMPLETE" and st["evidence"]["output"]["summary"] == "work committed", st


@pytest.fixture
def ct() -> Iterator[codexrun.CodexTask]:
    yield from codexrun.codex_task()


def test_codex_headless_run_becomes_a_complete_report(ct: codexrun.CodexTask) -> None:
    script = Script([Tool("exec_command", {"cmd": COMMIT}), Say(json.dumps(OUTPUT))])
    with ModelServer(OpenAIResponses(), script) as srv:
        env = codexrun.client_env(owner(ct.env), dead_proxy())
        r = spark(ct.main, "agent", "run", "t1", "a", "--client", "codex", "--json", "--", *codexrun.server_args(srv.url), env=env, process=True)
    assert r.returncode == 0, r
    reported(ct.main, ct.a, r)
    assert json.loads(r.stdout)["data"]["boundary"] == "bubblewrap"  # spark-git's box around it, its own sandbox inside (clients/codex/box.py)


def test_gemini_headless_run_becomes_a_complete_report(tmp_path: Path) -> None:
    t = gemini_agent.gemini_task(tmp_path)
    script = Script([Tool("run_shell_command", {"command": COMMIT}), Say(json.dumps(OUTPUT))])
    with ModelServer(GeminiApi(), script) as srv:
        env = gemini_agent.client_env(owner(t.env), srv.url, dead_proxy())
        r = spark(t.main, "agent", "run", "t1", "a", "--client", "gemini", "--json", "--", "--yolo", env=env, process=True)
    assert r.returncode == 0, r
    reported(t.main, t.a, r)
    assert json.loads(r.stdout)["data"]["boundary"] == "bubblewrap"  # no sandbox of its own: spark-git's (tests/test_agent_box.py)
