"""Every client `agent run` starts is in spark-git's box (issue 31 item 3), not only the one without a
sandbox of its own: the real Claude Code and Codex CLI, played by the scripted model server, find the
user's HOME empty (a file planted there is not read, a file written there is not on disk, the git
configuration cannot be changed), the spark-git state directory absent, and the coordinator's
processes out of sight; their own work in the worktree goes through. Gemini CLI: tests/test_agent_box.py."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures import codexrun
from fixtures.claude_agent import AgentTask, agent_task, client_env
from fixtures.modelserver.anthropic import Anthropic
from fixtures.modelserver.core import ModelServer, Say, Script, Tool, dead_proxy, require_binary
from fixtures.modelserver.openai import OpenAIResponses
from fixtures.repo import git, share_records_key, spark

OUTPUT = {"status": "OK", "summary": "work committed", "artifacts": {"files_changed": ["note.txt"]}}
SECRET = "MARKER-FROM-THE-USERS-HOME-4242"
COMMIT = "echo hi > note.txt && git add note.txt && git commit -q -m '[a] note' && echo committed"


def plant(home: Path) -> dict[str, bytes | None]:
    """A secret in the user's HOME and the files an escape would write; what they hold now."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".secret-note").write_text(SECRET + "\n")
    (home / ".bashrc").write_text("# the user's\n")
    watched = [home / ".bashrc", home / "planted.txt", home / ".config" / "git" / "config", home / ".gitconfig"]
    return {str(p): p.read_bytes() if p.exists() else None for p in watched}


def unchanged(before: dict[str, bytes | None]) -> None:
    after = {p: Path(p).read_bytes() if Path(p).exists() else None for p in before}
    assert after == before


# the commands an agent's script runs (a file the hook does not read); each prints what happened
ESCAPES = (
    "cat ~/.secret-note; echo read-rc=$?",
    "echo x > ~/planted.txt; echo plant-rc=$?",
    "mkdir -p ~/.config/git && printf '[core]\\n\\tfsmonitor = /bin/true\\n' >> ~/.config/git/config; echo gitconfig-rc=$?",
    "ls {coordinator} >/dev/null 2>&1; echo proc-rc=$?",
)


def script_file(worktree: Path, coordinator: int) -> str:
    (worktree / "escape.sh").write_text("\n".join(e.format(coordinator=f"/proc/{coordinator}/root") for e in ESCAPES) + "\n")
    return "sh escape.sh; rm escape.sh"


@pytest.fixture
def claude_task() -> Iterator[AgentTask]:
    for tool in ("claude", "bwrap", "socat"):
        require_binary(tool)
    d = Path(tempfile.mkdtemp(prefix="spark-box-all-", dir="/tmp"))
    yield agent_task(d)
    shutil.rmtree(d, ignore_errors=True)


def test_claude_code_is_boxed_its_home_hidden(claude_task: AgentTask) -> None:
    t = claude_task
    home, a = Path(t.env["HOME"]), t.worktree("a")
    before = plant(home)
    script = Script([
        Tool("Read", {"file_path": str(home / ".secret-note")}),  # the client's own tool: not in its command sandbox
        Tool("Write", {"file_path": str(home / "planted.txt"), "content": "x\n"}),  # outside the repository: the hook allows it
        Tool("Bash", {"command": script_file(a, os.getpid()), "description": "scripted"}),
        Tool("Bash", {"command": COMMIT, "description": "scripted"}),
        Say(json.dumps(OUTPUT)),
    ])
    share_records_key(t.base / "state", t.env["XDG_STATE_HOME"])
    with ModelServer(Anthropic(), script) as srv:
        env = {**client_env(t, srv.url), "SPARK_SESSION_ID": "owner", "XDG_STATE_HOME": str(t.base / "state")}
        r = spark(t.repo, "agent", "run", "t1", "a", "--client", "claude", "--json", "--", "--dangerously-skip-permissions", env=env, process=True)
    sent = json.dumps(script.requests)
    assert SECRET not in sent and "read-rc=1" in sent, sent[-3000:]  # neither its Read tool nor a script read the user's HOME
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["data"]["boundary"] == "bubblewrap" and out["data"]["report_status"] == "COMPLETE", out
    unchanged(before)  # on disk: nothing the agent wrote into HOME is there
    assert git(a, "log", "-1", "--format=%s") == "[a] note"  # its own work went through


@pytest.fixture
def ct() -> Iterator[codexrun.CodexTask]:
    yield from codexrun.codex_task()


def test_codex_is_boxed_its_home_hidden_and_the_coordinator_out_of_sight(ct: codexrun.CodexTask) -> None:
    home = Path(ct.env["HOME"])
    before = plant(home)
    script = Script([Tool("exec_command", {"cmd": script_file(ct.a, os.getpid())}), Tool("exec_command", {"cmd": COMMIT}), Say(json.dumps(OUTPUT))])
    with ModelServer(OpenAIResponses(), script) as srv:
        owner = {**{k: v for k, v in ct.env.items() if not k.startswith("SPARK_")}, "SPARK_SESSION_ID": "owner"}
        env = codexrun.client_env(owner, dead_proxy())
        r = spark(ct.main, "agent", "run", "t1", "a", "--client", "codex", "--json", "--", *codexrun.server_args(srv.url), env=env, process=True)
    sent = json.dumps(script.requests)
    assert SECRET not in sent and "read-rc=1" in sent, sent[-3000:]  # HOME is empty in the box
    assert "proc-rc=2" in sent or "proc-rc=1" in sent, sent[-3000:]  # its own PID namespace: the coordinator is not there
    unchanged(before)
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["data"]["boundary"] == "bubblewrap" and out["data"]["report_status"] == "COMPLETE", out
    assert git(ct.a, "log", "-1", "--format=%s") == "[a] note"
