"""The hook keeps agents out of the user's spark-git state directory (issue 23): the approval key, the
approvers (`allowed_signers`: an agent that adds its key there signs approvals that verify) and the
verdict keys. For Gemini CLI, which spark-git gives no OS boundary, the hook is the only layer; it
reads command lines, not scripts (docs/merging.md, trust model). The coordinator is not affected."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from fixtures.repo import make_repo, sealed_env, spark

from tests.hookutil import event, hook


@pytest.fixture
def w(tmp_path: Path) -> dict:
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="owner")
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    assert spark(repo, "start", "t1", "--agents", "a1", env=env).returncode == 0
    state = Path(env["XDG_STATE_HOME"]) / "spark-git"
    state.mkdir(parents=True, exist_ok=True)  # start made it (the records key, issue 31)
    key = state / "approval_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    a1 = tmp_path / "repo.tasks/t1/agents/a1/code"
    (a1 / "k.txt").symlink_to(key)
    return {"env": env, "repo": repo, "a1": a1, "state": state, "key": key}


def _judged(w: dict, cwd: Path, tool: str, **tool_input: str) -> tuple[int, str]:
    r = hook(event(cwd, tool, **tool_input), {**w["env"], "SPARK_SESSION_ID": ""})
    return r.returncode, r.stderr


@pytest.mark.parametrize("command", [
    "cat {key}",
    "cat k.txt",  # a link in its own worktree
    "cat < {key}",
    "cat $XDG_STATE_HOME/spark-git/approval_ed25519",
    "python3 -c \"print(open('{key}').read())\"",
    "cp k.txt stolen.txt",
    "echo agent >> {state}/allowed_signers",
    "git diff --no-index {key} /dev/null",
])
def test_an_agents_command_naming_the_keys_is_blocked(w: dict, command: str) -> None:
    code, err = _judged(w, w["a1"], "Bash", command=command.format(**w))
    assert code == 2 and "may not read or write the user's spark-git state directory" in err, (command, code, err)


@pytest.mark.parametrize("tool", ["Write", "Edit"])
def test_an_agents_file_tool_writing_the_approvers_is_blocked(w: dict, tool: str) -> None:
    code, err = _judged(w, w["a1"], tool, file_path=str(w["state"] / "allowed_signers"), content="agent ssh-ed25519 AAAA\n")
    assert code == 2 and "spark-git state directory" in err, (code, err)


def test_harmless_commands_and_the_coordinator_are_not_affected(w: dict) -> None:
    assert _judged(w, w["a1"], "Bash", command="cat README.md && ls -la")[0] == 0
    assert _judged(w, w["a1"], "Write", file_path=str(w["a1"] / "notes.md"), content="x\n")[0] == 0
    task = w["repo"].parent / "repo.tasks/t1/code"  # the coordinator's session: the human's own user, outside any sandbox
    assert _judged(w, task, "Bash", command=f"cat {w['key']}")[0] == 0
