"""Gemini CLI events (tests/data/client-events/gemini-*.json) replayed through `spark-git hook …
--client gemini`: write_file/replace like Write/Edit, run_shell_command like Bash starting in
dir_path, SessionStart answered as JSON additionalContext."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.repo import make_repo, sealed_env, spark

from tests.hookutil import client_event, put_in_state, replay


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("gemini")
    env = sealed_env(base / "home", SPARK_SESSION_ID="s1")
    repo = make_repo(base / "repo", {"README.md": "# demo\n", "src/app.py": "print('hi')\n"})
    assert spark(repo, "start", "t1", "--agents", "a1,a2", env=env).returncode == 0
    put_in_state(repo, "t1", "IMPLEMENTATION")
    t = base / "repo.tasks" / "t1"
    hook_env = {k: v for k, v in env.items() if k != "SPARK_SESSION_ID"}
    return {"repo": repo, "code": t / "code", "a1": t / "agents" / "a1" / "code", "a2": t / "agents" / "a2" / "code", "env": hook_env}


def run(w: dict, ev: dict, sub: str = "pre-tool-use"):
    return replay(ev, "gemini", sub, env=w["env"])


@pytest.mark.parametrize("tool", ["write_file", "replace"])
def test_file_tools_are_judged_like_write_and_edit(world, tool: str) -> None:
    a1, a2 = world["a1"], world["a2"]
    ok = run(world, client_event(f"gemini-BeforeTool-{tool}", CWD=str(a1), FILE="src/app.py"))
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", ""), ok
    bad = run(world, client_event(f"gemini-BeforeTool-{tool}", CWD=str(a1), FILE=str(a2 / "src" / "app.py")))
    assert bad.returncode == 2 and bad.stderr.startswith("spark-git: blocked: agent a1") and "a2" in bad.stderr, bad
    src = run(world, client_event(f"gemini-BeforeTool-{tool}", CWD=str(world["code"]), FILE="src/app.py"))
    assert src.returncode == 2 and "IMPLEMENTATION" in src.stderr, src
    doc = run(world, client_event(f"gemini-BeforeTool-{tool}", CWD=str(world["code"]), FILE="README.md"))
    assert doc.returncode == 0, doc


def shell(w: dict, cwd: Path, command: str, dir_path: str | None) -> dict:
    ev = client_event("gemini-BeforeTool-run_shell_command", CWD=str(cwd), COMMAND=command, DIR=dir_path or "")
    if dir_path is None:
        del ev["tool_input"]["dir_path"]
    return ev


@pytest.mark.parametrize(("cwd", "command", "dir_path", "code"), [
    ("a1", "git commit -am x", None, 0),
    ("a1", "git commit -am x", ".", 0),
    ("a1", "git commit -am x", "{code}", 2),  # starts in the task worktree
    ("a1", "echo x > src/f.py", "../../a2/code", 2),  # relative dir_path: into a2's worktree
    ("a1", "echo x > f.txt", "{outside}", 0),
    ("code", "touch src/x.py", "{a1}", 2),  # the coordinator stays the coordinator wherever it starts
    ("code", "git reset --hard", None, 2),
])
def test_run_shell_command_starts_in_dir_path(world, cwd: str, command: str, dir_path: str | None, code: int, tmp_path: Path) -> None:
    if dir_path:
        dir_path = dir_path.replace("{code}", str(world["code"])).replace("{a1}", str(world["a1"])).replace("{outside}", str(tmp_path))
    r = run(world, shell(world, world[cwd], command, dir_path))
    assert r.returncode == code, r
    if code == 2:
        assert r.stderr.startswith("spark-git: blocked:") and r.stderr.count("\n") == 1, r


def test_session_start_is_json_additional_context(world) -> None:
    ev = client_event("gemini-SessionStart", CWD=str(world["repo"]))
    ev["session_id"] = "s1"  # the session that started t1
    r = run(world, ev, "session-start")
    assert r.returncode == 0, r
    out = json.loads(r.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "task t1" in out["hookSpecificOutput"]["additionalContext"], out
    ev["session_id"] = "gemini-stranger"  # (not the recorded session: its start would be recorded at the repo)
    stranger = run(world, ev, "session-start")
    assert (stranger.returncode, stranger.stdout) == (0, ""), stranger  # owns nothing: says nothing


def test_an_unreadable_event_is_a_warning_outside_spark_git(world, tmp_path: Path) -> None:
    plain = make_repo(tmp_path / "plain")
    r = spark(plain, "hook", "pre-tool-use", "--client", "gemini", env=world["env"], input="{nope", process=True)
    assert r.returncode == 0 and "not JSON" in r.stderr, r  # 0: the entry's wrapper takes 1 for a crash
    r = spark(world["a1"], "hook", "pre-tool-use", "--client", "gemini", env=world["env"], input="{nope", process=True)
    assert r.returncode == 2 and "blocked" in r.stderr, r
