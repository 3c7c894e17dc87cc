"""`spark-git hook pre-tool-use` with Claude-Code-shaped JSON on stdin: exit 0 allows, exit 2 blocks
with a one-line reason on stderr."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixtures.repo import commit, git, make_repo, sealed_env, spark

from tests.hookutil import event, hook, put_in_state


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("hooks")
    env = sealed_env(base / "home", SPARK_SESSION_ID="s1")
    repo = make_repo(base / "repo", {"README.md": "# demo\n", "src/app.py": "print('hi')\n"})
    for t in ("t1", "t2"):
        r = spark(repo, "start", t, "--agents", "a1,a2", env=env)
        assert r.returncode == 0, r
    put_in_state(repo, "t1", "IMPLEMENTATION")
    st = spark(repo, "status", "t1", "--json", env=env)  # the hand-edit check accepts the helper's log
    assert st.returncode == 0 and st.json["data"]["tasks"][0]["state"] == "IMPLEMENTATION" and st.json["data"]["tasks"][0]["problem"] is None, st
    root = base / "repo.tasks"
    hook_env = {k: v for k, v in env.items() if k != "SPARK_SESSION_ID"}
    return {"repo": repo, "root": root, "env": hook_env, "base": base}


def paths(w: dict, task: str = "t1") -> tuple[Path, Path, Path, Path]:
    t = w["root"] / task
    return t, t / "code", t / "agents" / "a1" / "code", t / "agents" / "a2" / "code"


def check(r, code: int, *words: str) -> None:
    assert r.returncode == code, r
    if code == 2:
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("spark-git: blocked:"), r  # one line
        for w in words:
            assert w in r.stderr, r
    else:
        assert r.stderr == "", r


def test_agent_writes_in_its_own_worktree(world) -> None:
    _, _, a1, _ = paths(world)
    check(hook(event(a1, "Write", file_path="src/new.py", content="x"), world["env"]), 0)
    check(hook(event(a1 / "src", "Edit", file_path=str(a1 / "src" / "app.py"), old_string="a", new_string="b"), world["env"]), 0)


def test_agent_writes_its_own_status_and_requirements(world) -> None:
    t, _, a1, _ = paths(world)
    check(hook(event(a1, "Write", file_path=str(t / "agents" / "a1" / "status.json")), world["env"]), 0)
    check(hook(event(a1, "Write", file_path=str(t / "t1-a1-requirements.md")), world["env"]), 0)


def test_agent_blocked_in_other_agents_worktree(world) -> None:
    _, _, a1, a2 = paths(world)
    r = hook(event(a1, "Write", file_path=str(a2 / "src" / "app.py")), world["env"])
    check(r, 2, "agent a1", "agent a2's worktree")


def test_agent_blocked_from_other_agents_report_task_worktree_and_task_md(world) -> None:
    t, code, a1, _ = paths(world)
    for target in (t / "agents" / "a2" / "status.json", t / "t1-a2-requirements.md", code / "src" / "app.py", t / "task.md", world["repo"] / "README.md"):
        check(hook(event(a1, "MultiEdit", file_path=str(target), edits="[]"), world["env"]), 2, "may write only in its own worktree")


def test_dotdot_escape_is_resolved_and_blocked(world) -> None:
    _, _, a1, _ = paths(world)
    r = hook(event(a1 / "src", "Write", file_path="../../../a2/code/src/evil.py"), world["env"])
    check(r, 2, "agent a2's worktree", str(paths(world)[3] / "src" / "evil.py"))


def test_symlink_into_other_worktree_is_blocked(world) -> None:
    _, _, a1, a2 = paths(world)
    link = a1 / "innocent"
    if not link.is_symlink():
        os.symlink(a2 / "src", link)
    r = hook(event(a1, "Write", file_path="innocent/evil.py"), world["env"])
    check(r, 2, "agent a2's worktree")
    r = hook(event(a1, "NotebookEdit", notebook_path="innocent/nb.ipynb", new_source="x"), world["env"])
    check(r, 2, "agent a2's worktree")


def test_coordinator_source_in_task_worktree_blocked_during_implementation(world) -> None:
    _, code, _, _ = paths(world)
    r = hook(event(code, "Edit", file_path="src/app.py", old_string="hi", new_string="ho"), world["env"])
    check(r, 2, "IMPLEMENTATION", "spark-git merge t1 --agent")
    # also from the main worktree
    r = hook(event(world["repo"], "Write", file_path=str(code / "src" / "new.py")), world["env"])
    check(r, 2, "IMPLEMENTATION")


def test_coordinator_may_edit_task_md_and_docs_during_implementation(world) -> None:
    t, code, _, _ = paths(world)
    for target in (t / "task.md", code / "docs" / "design.txt", code / "NOTES.md"):
        r = hook(event(code, "Write", file_path=str(target)), world["env"])
        check(r, 0)
        assert r.stdout.startswith("spark-git: allowed:") and r.stdout.count("\n") == 1


def test_coordinator_may_write_task_worktree_outside_implementation(world) -> None:
    _, code2, _, _ = paths(world, "t2")  # t2 is in INIT
    check(hook(event(code2, "Write", file_path="src/app.py"), world["env"]), 0)


def test_coordinator_blocked_in_any_agent_worktree(world) -> None:
    _, code, a1, _ = paths(world)
    _, _, a1_t2, _ = paths(world, "t2")
    check(hook(event(code, "Write", file_path=str(a1 / "x.py")), world["env"]), 2, "agent a1's worktree")
    check(hook(event(world["repo"], "Write", file_path=str(a1_t2 / "x.md")), world["env"]), 2, "agent a1's worktree of task t2")


def test_main_worktree_needs_the_main_lock(world) -> None:
    repo = world["repo"]
    ev = event(repo, "Write", session="claude-main", file_path="src/app.py")
    check(hook(ev, world["env"]), 2, "main lock", "spark-git lock main")
    r = spark(repo, "lock", "main", env={**world["env"], "SPARK_SESSION_ID": "claude-main"})
    assert r.returncode == 0, r
    try:
        check(hook(ev, world["env"]), 0)  # session_id from the JSON
        check(hook(event(repo, "Write", session="other", file_path="x.py"), {**world["env"], "SPARK_SESSION_ID": "claude-main"}), 0)  # or from the env
        check(hook(event(repo, "Write", session="other", file_path="x.py"), world["env"]), 2, "main lock")
    finally:
        assert spark(repo, "unlock", "main", env={**world["env"], "SPARK_SESSION_ID": "claude-main"}).returncode == 0


@pytest.mark.parametrize(
    "where, command, words",
    [
        ("code", "git merge task-t1-agent-a1", ["spark-git merge t1"]),
        ("code", "cd src && git status && git merge --ff-only task-t1-agent-a2", ["spark-git merge t1"]),
        ("code", "git rebase main", ["spark-git merge t1"]),
        ("code", "git reset --hard HEAD~1", ["spark-git abandon t1"]),
        ("code", "git push origin t1", ["spark-git complete t1"]),
        ("main", "git merge t1", ["spark-git complete"]),
        ("main", "GIT_EDITOR=true git -c x.y=z pull", ["spark-git complete"]),
        ("a1", "git push origin HEAD:main", ["spark-git complete"]),
        ("a1", "git push --force origin task-x:t1", ["spark-git complete"]),
        ("a1", "git rebase a1-base t1", ["spark-git sync"]),
        ("a1", "git -C ../../../code merge task-t1-agent-a1", ["spark-git merge t1"]),
        ("main", "git worktree remove --force ../repo.tasks/t1/agents/a2/code", ["spark-git cleanup t1", "spark-git abandon t1"]),
        ("a1", "rm -rf ../../../../repo.tasks", ["spark-git cleanup", "spark-git abandon"]),
        ("main", "ls; rm -rf ../repo.tasks/t2", ["spark-git cleanup"]),
        ("main", "rm ../repo.tasks/t1/task.json", ["spark-git cleanup"]),
        ("main", "git branch -D t2", ["spark-git abandon"]),
        ("a1", "git update-ref refs/heads/main HEAD", ["spark-git complete"]),
    ],
)
def test_bash_commands_that_bypass_the_gates_are_blocked(world, where: str, command: str, words: list[str]) -> None:
    _, code, a1, _ = paths(world)
    cwd = {"code": code, "main": world["repo"], "a1": a1}[where]
    check(hook(event(cwd, "Bash", command=command, description="x"), world["env"]), 2, *words)


@pytest.mark.parametrize(
    "where, command",
    [
        ("a1", "git merge task-t1-agent-a2"),  # an agent moving its own branch
        ("a1", "git rebase t1"),
        ("a1", "git reset --hard HEAD"),
        ("a1", "git push origin task-t1-agent-a1"),
        ("code", "git status && git log --oneline -5 && pytest -q"),
        ("code", "git merge --abort"),
        ("main", "rm -rf build/ && ls ../repo.tasks/t1"),
        ("a1", "rm src/old.py"),
        ("main", "echo 'git merge t1'"),
    ],
)
def test_ordinary_commands_are_allowed(world, where: str, command: str) -> None:
    _, code, a1, _ = paths(world)
    cwd = {"code": code, "main": world["repo"], "a1": a1}[where]
    check(hook(event(cwd, "Bash", command=command), world["env"]), 0)


def test_other_tools_are_allowed(world) -> None:
    _, _, a1, a2 = paths(world)
    check(hook(event(a1, "Read", file_path=str(a2 / "src" / "app.py")), world["env"]), 0)


def test_unrelated_repo_and_no_repo_are_untouched(world) -> None:
    other = make_repo(world["base"] / "other")
    commit(other, {"x.py": "1\n"}, "x")
    for ev in (
        event(other, "Write", file_path="x.py"),
        event(other, "Bash", command="git merge main && git push origin main && rm -rf ."),
        event(world["base"], "Write", file_path="anything.py"),
        event(world["base"], "Bash", command="rm -rf repo.tasks-not-really"),
    ):
        r = hook(ev, world["env"])
        assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), r


def test_nothing_changes_when_a_write_is_blocked(world) -> None:
    t, _code, a1, a2 = paths(world)
    before = (t / "task.json").read_bytes(), git(world["repo"], "for-each-ref"), git(a2, "status", "--porcelain")
    check(hook(event(a1, "Write", file_path=str(a2 / "evil.py")), world["env"]), 2)
    assert not (a2 / "evil.py").exists()
    assert ((t / "task.json").read_bytes(), git(world["repo"], "for-each-ref"), git(a2, "status", "--porcelain")) == before


def test_bad_stdin_outside_a_live_repo_is_allowed_with_a_warning(world) -> None:
    r = spark(None, "hook", "pre-tool-use", input="{not json", env=world["env"], process=True)
    assert r.returncode == 0 and "not JSON" in r.stdout and "allowing" in r.stdout, r  # exit 1 would block: onFailure


def test_fast_path_imports_nothing_heavy(world) -> None:
    import subprocess
    import sys

    code = (
        "import sys, io, json; sys.argv=['spark-git','hook','pre-tool-use']; "
        f"sys.stdin=io.StringIO(json.dumps({event(paths(world)[2], 'Write', file_path='x.py')!r})); "
        "from spark_git.__main__ import main; rc=main(); "
        "heavy=[m for m in ('typer','pydantic','git','rich','filelock') if m in sys.modules]; print(rc, heavy)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=world["env"])
    assert r.stdout.strip().endswith("0 []"), r


def test_standing_outside_the_repo_does_not_dodge_the_rules(world) -> None:
    t, _code, _, a2 = paths(world)
    # from the task directory (no git worktree there) and from an unrelated directory
    for cwd in (t, world["base"]):
        check(hook(event(cwd, "Write", file_path=str(a2 / "x.py")), world["env"]), 2, "agent a2's worktree")
    check(hook(event(t, "Write", file_path="code/src/app.py"), world["env"]), 2, "IMPLEMENTATION")
    check(hook(event(t, "Bash", command="rm -rf agents/a2"), world["env"]), 2, "spark-git cleanup")
    check(hook(event(t, "Write", file_path="task.md"), world["env"]), 0)


def test_a_repo_whose_tasks_all_ended_is_untouched(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    env = {**os.environ, "SPARK_SESSION_ID": "s1"}
    assert spark(repo, "start", "t1", env=env).returncode == 0
    blocked = hook(event(repo, "Write", file_path="README.md"))
    assert blocked.returncode == 2 and "main lock" in blocked.stderr  # while a task is live
    assert spark(repo, "abandon", "t1", "--why", "done", env=env).returncode == 0
    assert (tmp_path / "repo.tasks" / "t1").is_dir()  # the audit trail stays
    for ev in (event(repo, "Write", file_path="README.md"), event(repo, "Bash", command="git merge t1")):
        r = hook(ev)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), r


def test_configured_tasks_root_is_honoured(tmp_path: Path) -> None:
    """The fast path reads tasks_root from .spark-git.toml (or pyproject.toml) itself."""
    for name, text in ((".spark-git.toml", 'tasks_root = "../elsewhere"\n'), ("pyproject.toml", '[tool.spark-git]\ntasks_root = "../elsewhere"\n')):
        repo = make_repo(tmp_path / name / "repo", {"README.md": "x\n", name: text})
        env = {**os.environ, "SPARK_SESSION_ID": "s1"}
        assert spark(repo, "start", "t1", "--agents", "a1,a2", env=env).returncode == 0
        root = tmp_path / name / "elsewhere" / "t1"
        check(hook(event(root / "agents" / "a1" / "code", "Write", file_path=str(root / "agents" / "a2" / "code" / "x.py"))), 2, "agent a2's worktree")
        check(hook(event(root / "agents" / "a1" / "code", "Write", file_path="x.py")), 0)
