"""Codex CLI events (tests/data/client-events/codex-*.json) replayed through `spark-git hook
pre-tool-use --client codex`: every file an apply_patch adds, updates, deletes or moves (from and to)
is judged like a Write/Edit, relative to the event's cwd; Bash as for Claude Code."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.repo import make_repo, sealed_env, spark

from tests.hookutil import client_event, put_in_state, replay

PATCH = "codex-PreToolUse-apply_patch"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("codex")
    env = sealed_env(base / "home", SPARK_SESSION_ID="s1")
    repo = make_repo(base / "repo", {"README.md": "# demo\n", "src/app.py": "print('hi')\n"})
    assert spark(repo, "start", "t1", "--agents", "a1,a2", env=env).returncode == 0
    put_in_state(repo, "t1", "IMPLEMENTATION")
    t = base / "repo.tasks" / "t1"
    hook_env = {k: v for k, v in env.items() if k != "SPARK_SESSION_ID"}
    return {"repo": repo, "code": t / "code", "a1": t / "agents" / "a1" / "code", "a2": t / "agents" / "a2" / "code", "env": hook_env, "base": base}


def patched(cwd: Path, *ops: str) -> dict:
    ev = client_event(PATCH, CWD=str(cwd))
    ev["tool_input"]["command"] = "*** Begin Patch\n" + "".join(op + "\n" for op in ops) + "*** End Patch\n"
    return ev


def run(w: dict, ev: dict):
    return replay(ev, "codex", env=w["env"])


def test_the_recorded_patch_inside_the_agents_worktree_is_allowed_silently(world) -> None:
    r = run(world, client_event(PATCH, CWD=str(world["a1"])))  # add, update, delete, move: all in a1's worktree
    assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), r


@pytest.mark.parametrize("op", [
    "*** Add File: ../../a2/code/src/new.py\n+x",
    "*** Update File: ../../a2/code/src/app.py\n@@\n-print('hi')\n+print('x')",
    "*** Delete File: {a2}/src/app.py",
    "*** Update File: src/app.py\n*** Move to: {a2}/src/app.py\n@@\n-print('hi')\n+print('x')",  # moved into a2
    "*** Update File: {a2}/src/app.py\n*** Move to: src/stolen.py\n@@\n-print('hi')\n+print('x')",  # moved out of a2
])
def test_a_patch_touching_another_agents_worktree_is_blocked(world, op: str) -> None:
    ev = patched(world["a1"], "*** Add File: src/fine.py\n+ok", op.replace("{a2}", str(world["a2"])))
    r = run(world, ev)
    assert r.returncode == 2 and r.stderr.startswith("spark-git: blocked: agent a1") and "a2" in r.stderr, r


@pytest.mark.parametrize(("op", "code"), [
    ("*** Update File: {code}/src/app.py\n@@\n-a\n+b", 2),  # the task worktree
    ("*** Delete File: {code}/README.md", 2),
    ("*** Add File: {outside}/scratch.txt\n+x", 0),  # outside the repository
    ("*** Add File: .codex/hooks.json\n+{}", 2),  # switches hooks off
])
def test_an_agents_patch_elsewhere(world, op: str, code: int) -> None:
    op = op.replace("{code}", str(world["code"])).replace("{outside}", str(world["base"] / "elsewhere"))
    r = run(world, patched(world["a1"], op))
    assert r.returncode == code, r


def test_the_coordinators_patch_in_implementation(world) -> None:
    code = world["code"]
    assert run(world, patched(code, "*** Add File: docs/plan.md\n+# plan")).returncode == 0
    src = run(world, patched(code, "*** Update File: src/app.py\n@@\n-a\n+b"))
    assert src.returncode == 2 and "IMPLEMENTATION" in src.stderr, src
    into = run(world, patched(code, f"*** Add File: {world['a1']}/src/x.py\n+x"))
    assert into.returncode == 2 and "agent a1's worktree" in into.stderr, into


def test_bash_is_judged_as_for_claude(world) -> None:
    ev = client_event("codex-PreToolUse-Bash", CWD=str(world["a1"]))
    assert run(world, ev).returncode == 0  # a commit in its own worktree
    ev["tool_input"]["command"] = f"git -C {world['code']} commit -am x"
    r = run(world, ev)
    assert r.returncode == 2 and "spark-git: blocked:" in r.stderr, r


def test_apply_patch_fed_through_the_shell_is_parsed(world) -> None:
    ev = client_event("codex-PreToolUse-Bash", CWD=str(world["a1"]))
    ev["tool_input"]["command"] = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: ../../a2/code/x.py\n+x\n*** End Patch\nEOF\n"
    r = run(world, ev)
    assert r.returncode == 2 and "a2" in r.stderr, r


def test_an_unreadable_patch_blocks_in_a_live_repo_and_not_elsewhere(world, tmp_path: Path) -> None:
    ev = client_event(PATCH, CWD=str(world["a1"]))
    ev["tool_input"]["command"] = "rm -rf src"
    r = run(world, ev)
    assert r.returncode == 2 and "Begin Patch" in r.stderr, r
    plain = make_repo(tmp_path / "plain")
    ev["cwd"] = str(plain)
    outside = run(world, ev)  # not a spark-git repo: allowed with a warning (exit 0: the entry's wrapper blocks on 1)
    assert outside.returncode == 0 and "allowing" in outside.stderr, outside
    assert run(world, patched(plain, "*** Add File: x.py\n+x")).stdout == ""


def test_patch_headers_are_every_path_once() -> None:
    from spark_git.clients import patch, registry
    from spark_git.guard.calls import EDIT, SHELL, BadEvent

    text = ("noise\n*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n+*** Delete File: not-a-header\n"
            "  *** Add File: indented.py\n*** Delete File: a.py\n*** End Patch")
    assert patch.touched(text) == ("a.py", "b.py", "indented.py")
    with pytest.raises(BadEvent):
        patch.touched("*** Begin Patch\n*** Add File:   \n*** End Patch")
    c = registry.get("codex")
    argv = c.parse_event('{"cwd": "/x", "tool_name": "apply_patch", "tool_input": {"command": ["apply_patch", "*** Begin Patch\\n*** Add File: q\\n"]}}')
    assert (argv.kind, argv.paths) == (EDIT, ("q",))
    write = c.parse_event('{"cwd": "/x", "tool_name": "Write", "tool_input": {"file_path": "w.py"}}')
    assert (write.kind, write.paths) == (EDIT, ("w.py",))
    assert c.parse_event('{"cwd": "/x", "tool_name": "Bash", "tool_input": {"command": "ls"}}').kind == SHELL


def test_session_start_gives_the_session_its_task_as_context(world) -> None:
    ev = client_event("codex-SessionStart", CWD=str(world["repo"]))
    ev["session_id"] = "s1"  # the session that started t1
    r = replay(ev, "codex", "session-start", env=world["env"])
    assert r.returncode == 0 and "task t1" in r.stdout, r  # plain text on stdout: Codex adds it to the context
    ev["session_id"] = "codex-stranger"
    stranger = replay(ev, "codex", "session-start", env=world["env"])
    assert (stranger.returncode, stranger.stdout) == (0, ""), stranger  # owns nothing: says nothing


@pytest.mark.parametrize("argv", [
    ["git", "-C", "{code}", "commit", "-am", "x"],  # Codex's shell tool takes an argv list
    ["bash", "-lc", "git -C {code} commit -am x"],
    ["/bin/bash", "-lc", "cd {code} && git commit -am 'a b'"],
])
def test_an_argv_list_command_is_judged_as_the_command_it_runs(world, argv: list[str]) -> None:
    # A list joined line by line became one "command" per word: `git`, `-C`, `commit`… none of which
    # writes, so a commit into the task worktree went through.
    ev = client_event("codex-PreToolUse-Bash", CWD=str(world["a1"]))
    ev["tool_input"]["command"] = [w.replace("{code}", str(world["code"])) for w in argv]
    r = run(world, ev)
    assert r.returncode == 2 and "spark-git: blocked:" in r.stderr and "task worktree" in r.stderr, r
    ev["tool_input"]["command"] = ["git", "commit", "-am", "mine"]  # its own worktree
    assert run(world, ev).returncode == 0


def test_a_shell_workdir_is_where_the_command_starts(world) -> None:
    # Codex's shell tool runs a command in `workdir` when given, like Gemini's dir_path.
    ev = client_event("codex-PreToolUse-Bash", CWD=str(world["a1"]))
    ev["tool_input"] = {"command": ["git", "commit", "-am", "x"], "workdir": str(world["code"])}
    r = run(world, ev)
    assert r.returncode == 2 and "task worktree" in r.stderr, r
    ev["tool_input"]["workdir"] = "src"  # relative to cwd: still its own worktree
    assert run(world, ev).returncode == 0
