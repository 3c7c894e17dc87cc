"""The hook entry that fails closed (clients/jsonhooks.py WRAP, issue 22): Gemini CLI and Codex CLI let a
tool call through when their hook exits 1, exits 2 silently or dies by a signal, so their entries run
spark-git inside a POSIX-sh wrapper. Here the installed command runs as the clients run it (`bash -c`,
both; `sh -c` too) with a crashing spark-git on PATH, and with the real one; the real
clients are in tests/test_real_gemini.py and test_real_codex.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.repo import make_repo, sealed_env, spark

from spark_git.clients import jsonhooks, registry
from spark_git.clients.claude import CLAUDE
from spark_git.clients.codex import CODEX
from spark_git.clients.gemini import GEMINI

# The clients whose entries are wrapped (their facts say so) and the shell each runs a hook command with.
SHELLS = {"gemini": "bash", "codex": "bash"}
CRASHES = {
    "exit 1": ("echo 'Traceback (most recent call last): ImportError' >&2\nexit 1\n", "exit status 1: Traceback"),
    "exit 2 silently": ("exit 2\n", "exit status 2)"),
    "killed by a signal": ("kill -9 $$\n", "exit status 137"),
    "allow printed, then exit 1": ("printf '{\"decision\": \"allow\"}'\nexit 1\n", "exit status 1"),
}
EVENT = {"session_id": "s", "cwd": "/", "hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
         "tool_input": {"command": "echo x"}}


def pre_tool_use(client: str) -> str:
    return registry.get(client).wanted()[0].command


def run_entry(client: str, cwd: Path, event: dict | str, path: str, shell: str | None = None) -> subprocess.CompletedProcess[str]:
    raw = event if isinstance(event, str) else json.dumps(event)
    env = {**sealed_env(cwd / ".home"), "PATH": path}
    shell = shutil.which(shell or SHELLS[client])
    assert shell is not None, "no such shell"
    return subprocess.run([shell, "-c", pre_tool_use(client)], input=raw, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def fake_spark_git(tmp: Path, body: str) -> str:
    bindir = tmp / "fakebin"
    bindir.mkdir()
    (bindir / "spark-git").write_text("#!/bin/sh\ncat >/dev/null\n" + body)
    (bindir / "spark-git").chmod(0o755)
    return f"{bindir}{os.pathsep}{os.environ['PATH']}"


def test_the_wrapped_clients_are_the_ones_whose_facts_say_so() -> None:
    assert sorted(c for c in registry.CLIENTS if registry.get(c).facts.wrap) == sorted(SHELLS)
    for client in SHELLS:
        for w in registry.get(client).wanted():
            assert w.command == jsonhooks.wrapped(w.command) and jsonhooks.is_ours(w.command), w.command
    assert all(not jsonhooks.is_guarded(w.command) for w in CLAUDE.wanted())  # Claude Code: onFailure: block


@pytest.mark.parametrize("client", list(SHELLS))
@pytest.mark.parametrize("shell", ["bash", "sh"])
@pytest.mark.parametrize("crash", list(CRASHES))
def test_a_crashing_hook_blocks_with_a_reason_on_stdout_and_stderr(tmp_path: Path, client: str, shell: str, crash: str) -> None:
    body, said = CRASHES[crash]
    r = run_entry(client, tmp_path, EVENT, fake_spark_git(tmp_path, body), shell)
    assert r.returncode == 2, r
    for out in (r.stdout, r.stderr):
        assert "spark-git: blocked: the spark-git hook failed (" in out and said in out, r
    with pytest.raises(ValueError):
        json.loads(r.stdout)  # Gemini parses stdout first: whatever the crash printed, no JSON answer survives


@pytest.mark.parametrize("client", list(SHELLS))
def test_spark_git_missing_from_path_blocks(tmp_path: Path, client: str) -> None:
    r = run_entry(client, tmp_path, EVENT, "/nonexistent")
    assert r.returncode == 2 and "exit status 127" in r.stdout and "spark-git: " in r.stdout and "not found" in r.stdout, r


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("wrap")
    repo = make_repo(base / "repo")
    assert spark(repo, "start", "t1", "--agents", "a", env=sealed_env(base / "home", SPARK_SESSION_ID="s1")).returncode == 0
    return base


def _real_path() -> str:
    return f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"


def test_spark_git_answers_pass_through(live: Path) -> None:
    """An allow (exit 0, nothing said), a refusal (exit 2, its reason on stderr, nothing on stdout) and
    Gemini's SessionStart JSON on stdout go through the wrapper unchanged."""
    a = live / "repo.tasks" / "t1" / "agents" / "a" / "code"
    ok = {**EVENT, "cwd": str(a), "tool_input": {"command": "echo x > mine.txt"}}
    r = run_entry("gemini", a, ok, _real_path())
    assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), r
    bad = {**EVENT, "cwd": str(a), "tool_input": {"command": f"echo x > {live / 'repo'}/evil.txt"}}
    r = run_entry("gemini", a, bad, _real_path())
    assert r.returncode == 2 and r.stdout == "" and r.stderr.startswith("spark-git: blocked: `> ") and "exit status" not in r.stderr, r
    r = run_entry("codex", a, {**bad, "tool_name": "Bash"}, _real_path())
    assert r.returncode == 2 and r.stderr.startswith("spark-git: blocked: `> ") and "exit status" not in r.stderr, r
    start = GEMINI.wanted()[1].command
    env = {**sealed_env(live / "home", SPARK_SESSION_ID="s1"), "PATH": _real_path()}
    ev = json.dumps({"session_id": "s1", "cwd": str(live / "repo"), "hook_event_name": "SessionStart", "source": "startup"})
    s = subprocess.run(["bash", "-c", start], input=ev, cwd=live / "repo", env=env, capture_output=True, text=True, timeout=60)
    assert s.returncode == 0 and "task t1" in json.loads(s.stdout)["hookSpecificOutput"]["additionalContext"], s


@pytest.mark.parametrize("client", list(SHELLS))
def test_an_unreadable_event_passes_outside_a_live_repo_and_blocks_inside(live: Path, tmp_path: Path, client: str) -> None:
    """docs/decisions.md: spark-git's own answer outside a live repo stays a pass-through (exit 0 and
    the warning), not taken for a crash; inside one it blocks."""
    plain = make_repo(tmp_path / "plain")
    r = run_entry(client, plain, "{nope", _real_path())
    assert r.returncode == 0 and r.stdout == "" and "not JSON" in r.stderr and "allowing" in r.stderr, r
    r = run_entry(client, live / "repo.tasks" / "t1" / "agents" / "a" / "code", "{nope", _real_path())
    assert r.returncode == 2 and "blocked" in r.stderr and "exit status" not in r.stderr, r


def test_installed_entries_are_found_upgraded_and_removed(repo: Path, cli) -> None:
    """An older plain Gemini entry (spark-git named by a path) is wrapped in place, not duplicated;
    uninstall finds the wrapped one."""
    settings = repo / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"BeforeTool": [{"matcher": "write_file|replace|run_shell_command", "hooks": [
        {"type": "command", "command": "/opt/bin/spark-git hook pre-tool-use --client gemini"}]}]}}))
    assert cli("hooks", "install", "--client", "gemini").returncode == 0
    hooks = json.loads(settings.read_text())["hooks"]
    assert [h["command"] for g in hooks["BeforeTool"] for h in g["hooks"]] == [jsonhooks.wrapped("/opt/bin/spark-git hook pre-tool-use --client gemini")]
    assert [h["command"] for g in hooks["SessionStart"] for h in g["hooks"]] == [GEMINI.wanted()[1].command]
    assert cli("hooks", "install", "--client", "gemini", "--json").json["data"]["changed"] is False
    r = cli("hooks", "uninstall", "--client", "gemini", "--json")
    assert r.returncode == 0 and not settings.exists(), r
    assert jsonhooks.unguarded(CODEX.wanted()[0].command) == "spark-git hook pre-tool-use --client codex"
