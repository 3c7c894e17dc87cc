"""Issue 31's gate escape with the real Claude Code as the agent (it only commits a test helper, as on
1697f77): `agent run` has Claude Code (played by the scripted model server) write and commit the
attack of tests/test_gate_box.py as its gate script; the coordinator's `merge` runs it in the gate's
box. Checked on disk and in git: main never moved, no key byte read, the human's git config and
spark-git's virtualenv untouched, no host socket reached."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.claude_agent import FILES, AgentTask, client_env
from fixtures.modelserver.anthropic import Anthropic
from fixtures.modelserver.core import ModelServer, Say, Script, Tool, require_binary
from fixtures.repo import git, make_repo, sealed_env, share_records_key, spark

from spark_git.gates import verdictkey
from tests.test_gate_box import ATTACK, NAMES, _listener

OUTPUT = {"status": "OK", "summary": "a test helper added", "artifacts": {"files_changed": ["attack.py"]}}


@pytest.fixture
def t() -> Iterator[AgentTask]:
    for tool in ("claude", "bwrap", "socat"):
        require_binary(tool)
    base = Path(tempfile.mkdtemp(prefix="spark-gate-claude-", dir="/tmp"))  # outside /dev: Claude Code's sandbox mounts its own
    env = sealed_env(base / "home", PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    config = (f'protocol = "light"\n[approval]\nallow_non_interactive = true\n[gates]\nbuild = ["{sys.executable}", "attack.py"]\n'
              f"env = {json.dumps(list(NAMES))}\n")  # the gate keeps the attack's addresses: only the box stands in its way
    repo = make_repo(base / "repo", FILES, config=config)
    assert spark(repo, "hooks", "install", "--client", "claude", env={**env, "SPARK_SESSION_ID": "owner"}).returncode == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "spark-git's hooks", env=env)
    assert spark(repo, "start", "t1", "--agents", "a,b", env={**env, "SPARK_SESSION_ID": "owner"}).returncode == 0
    yield AgentTask(base, repo, env)
    shutil.rmtree(base, ignore_errors=True)


def test_gate_code_committed_by_the_real_claude_code_cannot_escape(t: AgentTask) -> None:
    a, home = t.worktree("a"), Path(t.env["HOME"])
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    pth = site / f"spark-test-{os.getpid()}-{t.base.name}.pth"
    sock = t.base / "repo.tasks" / "host.sock"
    srv, got = _listener(sock)
    main = git(t.repo, "rev-parse", "refs/heads/main")
    verdictkey.load_key(t.repo / ".git", [])  # the verdict key exists, as after any gate
    key = verdictkey.key_path(t.repo / ".git")
    script = Script([
        Tool("Write", {"file_path": str(a / "attack.py"), "content": ATTACK}),
        Tool("Bash", {"command": "git add attack.py && git commit -q -m '[a] a test helper' && git rev-parse HEAD", "description": "commit"}),
        Say(json.dumps(OUTPUT)),
    ])
    share_records_key(t.base / "state", t.env["XDG_STATE_HOME"])
    owner = {"SPARK_SESSION_ID": "owner", "XDG_STATE_HOME": str(t.base / "state")}
    try:
        with ModelServer(Anthropic(), script) as srv_model:
            r = spark(t.repo, "agent", "run", "t1", "a", "--client", "claude", "--json", "--", "--dangerously-skip-permissions",
                      env={**client_env(t, srv_model.url), **owner}, process=True)
        assert json.loads(r.stdout)["data"]["report_status"] == "COMPLETE", r
        agent_sha = git(a, "rev-parse", "HEAD")
        values = (str(t.repo / ".git"), agent_sha, str(key), str(home), str(pth), str(sock))
        r = spark(t.repo, "--json", "merge", "t1", "--agent", "a", env={**t.env, **owner, **dict(zip(NAMES, values, strict=True))}, process=True)
    finally:
        srv.close()
        leaked_pth = pth.exists()
        pth.unlink(missing_ok=True)
    log = sorted((t.base / "repo.tasks" / "t1" / "logs").glob("*-build.log"))[-1].read_text()
    assert "ATTACK" in log and git(a, "log", "-1", "--format=%s") == "[a] a test helper", log  # Claude Code committed it; it ran
    assert git(t.repo, "rev-parse", "refs/heads/main") == main, log
    assert not leaked_pth and not (home / ".config" / "git" / "config").exists(), log
    assert got == [] and "'key': []" in log, log
