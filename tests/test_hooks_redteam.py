"""The red-team corpus of shell calls (tests/data/hook-redteam/calls.jsonl): calls agent a1 of task t1
makes from its own worktree that must be refused — the shell's own syntax hiding a ref move (the
comment bypasses of issue 31), coordinator commands however wrapped, writes outside the worktree
through common tools, git's own file-writing options, the user's start-up files, the state directory
through globs and links, lines the grammar does not read — and everyday calls that must be allowed.
Each is replayed through the real hook entry in each client's event shape (Claude Code's Bash,
Codex's Bash, Gemini CLI's run_shell_command); a sample also as real processes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.repo import make_repo, sealed_env, spark

from spark_git.__main__ import main
from tests.hookutil import client_event, put_in_state

CALLS = [json.loads(line) for line in (Path(__file__).parent / "data" / "hook-redteam" / "calls.jsonl").read_text().splitlines() if line.strip()]
CLIENTS = ("claude", "codex", "gemini")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("redteam")
    home = base / "home"
    env = sealed_env(home, SPARK_SESSION_ID="s1")
    repo = make_repo(base / "repo", {"README.md": "# demo\n", "src/app.py": "print('hi')\n", "package.json": "{}\n"})
    for t in ("t1", "t2"):
        assert spark(repo, "start", t, "--agents", "a1,a2", env=env).returncode == 0
    put_in_state(repo, "t1", "IMPLEMENTATION")
    state = home / ".local" / "state" / "spark-git"
    state.mkdir(parents=True, exist_ok=True)
    (state / "records.key").touch()
    (base / "outside").mkdir()
    (base / "outside" / "keys").symlink_to(state)  # a link an agent found (or made earlier) into the state directory
    root = base / "repo.tasks"
    return {"a1": root / "t1/agents/a1/code", "A2": root / "t1/agents/a2/code", "CODE": root / "t1/code", "MAIN": repo,
            "T2A1": root / "t2/agents/a1/code", "COMMON": repo / ".git", "HOME": home, "OUTSIDE": base / "outside", "STATE": state}


def _fill(text: str, w: dict[str, Path]) -> str:
    for key in ("A2", "CODE", "MAIN", "T2A1", "COMMON", "HOME", "OUTSIDE", "STATE"):
        text = text.replace("{" + key + "}", str(w[key]))
    return text


def _event(client: str, cwd: Path, command: str) -> str:
    if client == "claude":
        ev = {"session_id": "redteam", "cwd": str(cwd), "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command}}
    elif client == "codex":
        ev = client_event("codex-PreToolUse-Bash", CWD=str(cwd))
        ev["tool_input"] = {"command": command}
    else:
        ev = client_event("gemini-BeforeTool-run_shell_command", CWD=str(cwd), DIR=".")
        ev["tool_input"]["command"] = command
    return json.dumps(ev)


def _decide(w: dict[str, Path], client: str, command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    for k in ("CLAUDE_PROJECT_DIR", "SPARK_SESSION_ID", "SPARK_AGENT", "SPARK_TASK"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("HOME", str(w["HOME"]))
    monkeypatch.setenv("XDG_STATE_HOME", str(w["HOME"] / ".local" / "state"))
    monkeypatch.chdir(w["a1"])
    monkeypatch.setattr(sys, "stdin", io.StringIO(_event(client, w["a1"], command)))
    capsys.readouterr()
    rc = main(["hook", "pre-tool-use", "--client", client])
    return rc, capsys.readouterr().err


def test_the_corpus_is_big_and_covers_every_class() -> None:
    deny = [c for c in CALLS if c["expect"] == "deny"]
    assert len(deny) >= 160 and len(CALLS) - len(deny) >= 68 and len({c["id"] for c in CALLS}) == len(CALLS)
    assert {c["class"] for c in deny} == {"shell syntax", "coordinator command", "write elsewhere", "git writes files", "start-up files",
                                          "state directory", "unreadable"}


@pytest.mark.parametrize("client", CLIENTS)
def test_every_call_gets_its_expected_decision(world, client: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = []
    for c in CALLS:
        rc, err = _decide(world, client, _fill(c["command"], world), monkeypatch, capsys)
        got = "deny" if rc == 2 else "allow"
        if got != c["expect"] or (got == "deny" and not err.startswith("spark-git: blocked:")):
            wrong.append(f"{c['id']} [{c['class']}] {c['command']!r}: expected {c['expect']}, got rc={rc} {err.strip()[:200]}")
    assert not wrong, f"{len(wrong)} wrong decisions of {len(CALLS)} ({client}):\n" + "\n".join(wrong)


def test_the_comment_bypasses_are_refused_and_say_why(world, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for cmd in ("echo hi # note\ngit update-ref refs/heads/main HEAD", "echo a#b; git update-ref refs/heads/main HEAD"):
        rc, err = _decide(world, "claude", cmd, monkeypatch, capsys)
        assert rc == 2 and "`git update-ref` would move or rewrite the base branch (main)" in err, err


def test_an_unreadable_line_is_refused_with_what_to_write_instead(world, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = _decide(world, "claude", 'echo "unterminated; git status', monkeypatch, capsys)
    assert rc == 2 and "cannot read this command line" in err and "write it as plain commands" in err, err


def test_a_coordinator_command_names_the_agents_own_way_on(world, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err = _decide(world, "codex", "cd /tmp && env -i PATH=$PATH setsid -f spark-git complete t1", monkeypatch, capsys)
    assert rc == 2 and "`spark-git complete` is the coordinator's command" in err and "spark-git report t1 --agent a1" in err, err


@pytest.mark.parametrize("c", [c for c in CALLS if c["class"] in ("shell syntax", "state directory", "everyday")][::9], ids=lambda c: c["id"])
def test_some_calls_as_real_processes(world, c: dict) -> None:
    env = {**sealed_env(world["HOME"]), "SPARK_SESSION_ID": ""}
    r = subprocess.run([sys.executable, "-m", "spark_git", "hook", "pre-tool-use"], input=_event("claude", world["a1"], _fill(c["command"], world)),
                       capture_output=True, text=True, cwd=world["a1"], env=env, timeout=60)
    assert ("deny" if r.returncode == 2 else "allow") == c["expect"], (c, r.returncode, r.stderr)


def test_only_shell_calls_load_the_grammar(world) -> None:
    """The parser is loaded for a shell call and for nothing else (a Write stays on the standard library)."""
    code = ("import io, sys, json; from spark_git.clients import hooks; sys.stdin = io.StringIO(sys.argv[1]); "
            "rc = hooks.main(['pre-tool-use']); print(json.dumps([rc, 'tree_sitter' in sys.modules]))")
    write = json.dumps({"session_id": "x", "cwd": str(world["a1"]), "hook_event_name": "PreToolUse", "tool_name": "Write",
                        "tool_input": {"file_path": str(world["A2"] / "x"), "content": "x"}})
    env = {**os.environ, "HOME": str(world["HOME"]), "XDG_STATE_HOME": str(world["HOME"] / ".local" / "state")}
    outs = [subprocess.run([sys.executable, "-c", code, ev], capture_output=True, text=True, cwd=world["a1"], env=env) for ev in (write, _event("claude", world["a1"], "ls"))]
    assert [json.loads(o.stdout.strip().splitlines()[-1]) for o in outs] == [[2, False], [0, True]], outs
