"""What each client needs for honest work under `agent run` (issue 32 item 3), with the real clients
played by the scripted model server: Gemini CLI hides the user's git config from its shell
(GIT_CONFIG_GLOBAL=/dev/null) and its agent still commits as the user; Codex CLI runs `bash -lc`, whose
/etc/profile resets PATH, and its agent still finds the project's tools (spark-git's virtualenv here)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures import codexrun
from fixtures.claude_agent import AgentTask, agent_task
from fixtures.claude_agent import client_env as claude_env
from fixtures.modelserver import gemini_agent
from fixtures.modelserver.anthropic import Anthropic
from fixtures.modelserver.core import ModelServer, Say, Script, Tool, dead_proxy, require_binary
from fixtures.modelserver.gemini import GeminiApi
from fixtures.modelserver.openai import OpenAIResponses
from fixtures.repo import git, share_records_key, spark

OUTPUT = {"status": "OK", "summary": "work committed", "artifacts": {"files_changed": ["note.txt"]}}
IDENTITY = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")


def owner(env: dict[str, str]) -> dict[str, str]:
    return {**{k: v for k, v in env.items() if not k.startswith("SPARK_")}, "SPARK_SESSION_ID": "owner"}


def test_a_gemini_agent_commits_as_the_user_though_gemini_hides_the_git_config(tmp_path: Path) -> None:
    require_binary("bwrap")
    t = gemini_agent.gemini_task(tmp_path)
    home = Path(t.env["HOME"])
    (home / ".gitconfig").write_text("[user]\n\tname = Dana Human\n\temail = dana@example.invalid\n")  # as most users have it: no env
    env = {k: v for k, v in owner(t.env).items() if k not in IDENTITY}
    script = Script([Tool("run_shell_command", {"command": "echo hi > note.txt && git add note.txt && git commit -q -m '[a] note'; echo rc=$?"}),
                     Say(json.dumps(OUTPUT))])
    with ModelServer(GeminiApi(), script) as srv:
        r = spark(t.main, "agent", "run", "t1", "a", "--client", "gemini", "--json", "--", "--yolo",
                  env=gemini_agent.client_env(env, srv.url, dead_proxy()), process=True)
    assert "rc=0" in json.dumps(script.requests), r
    assert git(t.a, "log", "-1", "--format=%s|%an <%ae>|%cn") == "[a] note|Dana Human <dana@example.invalid>|Dana Human"
    assert json.loads(r.stdout)["data"]["report_status"] == "COMPLETE", r


@pytest.fixture
def ct() -> Iterator[codexrun.CodexTask]:
    yield from codexrun.codex_task()


def test_a_codex_agent_keeps_the_path_its_login_shell_would_reset(ct: codexrun.CodexTask) -> None:
    venv_bin = str(Path(sys.executable).parent)
    assert venv_bin in ct.env["PATH"].split(os.pathsep)  # the coordinator's PATH has the project's tools
    script = Script([Tool("exec_command", {"cmd": "command -v spark-git; echo path=$PATH"}), Say(json.dumps(OUTPUT))])
    with ModelServer(OpenAIResponses(), script) as srv:
        r = spark(ct.main, "agent", "run", "t1", "a", "--client", "codex", "--json", "--", *codexrun.server_args(srv.url),
                  env=codexrun.client_env(owner(ct.env), dead_proxy()), process=True)
    said = json.dumps(script.requests)
    assert f"{venv_bin}/spark-git" in said, (said[-2000:], r)  # found through the login shell's PATH


@pytest.fixture
def claude_task() -> Iterator[AgentTask]:
    """Outside /dev: Claude Code's sandbox mounts its own /dev (fixtures/claude_agent.py)."""
    for tool in ("claude", "bwrap", "socat"):
        require_binary(tool)
    d = Path(tempfile.mkdtemp(prefix="spark-needs-", dir="/tmp"))
    yield agent_task(d)
    shutil.rmtree(d, ignore_errors=True)


def test_complete_with_nothing_committed_and_a_dirty_tree_is_flagged(claude_task: AgentTask) -> None:
    """The agent says OK but its work never reached its branch: `agent run` files it unfinished, with
    the files, and a COMPLETE reported by hand in that shape is flagged by `status`."""
    t = claude_task
    script = Script([Tool("Bash", {"command": "echo 'def mul(a, b): return a * b' >> calc.py", "description": "edit, no commit"}),
                     Say(json.dumps({"status": "OK", "summary": "mul() added", "artifacts": {"files_changed": ["calc.py"]}}))])
    share_records_key(t.base / "state", t.env["XDG_STATE_HOME"])
    with ModelServer(Anthropic(), script) as srv:
        env = {**claude_env(t, srv.url), "SPARK_SESSION_ID": "owner", "XDG_STATE_HOME": str(t.base / "state")}
        r = spark(t.repo, "agent", "run", "t1", "a", "--client", "claude", "--json", "--", "--dangerously-skip-permissions", env=env, process=True)
    d = json.loads(r.stdout)["data"]
    assert d["report_status"] == "IN_PROGRESS" and "a reported COMPLETE but committed nothing and left 1 uncommitted file(s) (calc.py)" in d["incomplete"], d
    a_env = {**t.env, **json.loads(spark(t.repo, "env", "t1", "--agent", "a", "--json", env=t.env).stdout)["data"]["vars"]}
    assert spark(t.worktree("a"), "report", "t1", "--agent", "a", "--status", "COMPLETE", env=a_env).returncode == 0
    a = json.loads(spark(t.repo, "status", "t1", "--json", env={**t.env, "SPARK_SESSION_ID": "owner"}).stdout)["data"]["tasks"][0]["agents"][0]
    assert "COMPLETE with nothing committed and 1 uncommitted file(s): calc.py" in a["flags"], a


def test_a_failed_runs_last_words_lead_with_the_cause_not_stack_frames() -> None:
    from spark_git.ops.life.agentrun import _cause

    err = "Loaded cached credentials.\nError when talking to Gemini API: fetch failed (ECONNREFUSED 127.0.0.1:9)\n" + \
          "".join(f"    at retry{i} (file:///gemini.js:{i}:1)\n" for i in range(200)) + "An unexpected critical error occurred:\n"
    words = _cause(err)
    assert words.splitlines()[:2] == ["Loaded cached credentials.", "Error when talking to Gemini API: fetch failed (ECONNREFUSED 127.0.0.1:9)"]
    assert " at retry" not in words
