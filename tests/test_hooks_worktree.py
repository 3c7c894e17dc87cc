"""Claude Code's WorktreeCreate / WorktreeRemove (tests/data/client-events/claude-Worktree*.json)
replayed through `spark-git hook worktree-create|worktree-remove`: a session of a task gets a spark-git
agent worktree of that task; removal archives uncommitted work first."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fixtures.repo import git, make_repo, sealed_env, spark

from spark_git.core.paths import NAME_RE
from tests.hookutil import client_event, event, hook, put_in_state, replay


@pytest.fixture
def world(tmp_path: Path) -> dict:
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n", "src/app.py": "print('hi')\n"})
    assert spark(repo, "start", "t1", "--agents", "a1", env=env).returncode == 0
    put_in_state(repo, "t1", "IMPLEMENTATION")
    t = tmp_path / "repo.tasks" / "t1"
    hook_env = {k: v for k, v in env.items() if k != "SPARK_SESSION_ID"}
    return {"repo": repo, "root": tmp_path / "repo.tasks", "t": t, "code": t / "code", "a1": t / "agents" / "a1" / "code", "env": hook_env}


def create(w: dict, cwd: Path, name: str, session: str = "s1"):
    return replay(client_event("claude-WorktreeCreate", CWD=str(cwd), NAME=name, SESSION=session), "claude", "worktree-create", env=w["env"])


def remove(w: dict, path: Path, session: str = "s1"):
    ev = client_event("claude-WorktreeRemove", CWD=str(w["repo"]), PATH=str(path), SESSION=session)
    return replay(ev, "claude", "worktree-remove", env=w["env"])


def task_json(w: dict) -> dict:
    return json.loads((w["t"] / "task.json").read_text())


def test_the_coordinators_worktree_is_an_agent_worktree_of_its_task(world) -> None:
    r = create(world, world["code"], "Feature X")  # `claude -w "Feature X"` in the task worktree
    want = world["t"] / "agents" / "feature-x" / "code"
    assert r.returncode == 0 and r.stdout == f"{want}\n", r
    assert git(want, "rev-parse", "--abbrev-ref", "HEAD").strip() == "task-t1-agent-feature-x"
    tf = task_json(world)
    assert tf["agents"]["feature-x"]["worktree"] == str(want)
    assert tf["agent_additions"][-1]["why"] == "created by claude for Feature X"
    added = [e for e in json.loads((world["t"] / "audit-trail.json").read_text())["events"] if e["kind"] == "agent_added"]
    assert [(e["agent"], e["session_id"]) for e in added] == [("feature-x", "s1")]  # recorded as added by the session
    again = create(world, world["code"], "Feature X")
    assert again.returncode == 0 and again.stdout == r.stdout  # the same name: the same worktree
    # The same session (a worktree-isolated subagent, EnterWorktree) now writes there as that agent.
    # Both launched in the task worktree (CLAUDE_PROJECT_DIR): the coordinator, unless the worktree was made for it.
    launched = {**world["env"], "CLAUDE_PROJECT_DIR": str(world["code"])}
    ok = hook(event(want, "Write", session="s1", file_path="src/sub.py"), launched)
    assert ok.returncode == 0 and "agent feature-x" in ok.stdout, ok
    other = hook(event(want, "Write", session="someone-else", file_path="src/sub.py"), launched)
    assert other.returncode == 2 and "agent feature-x's worktree" in other.stderr, other


def test_an_agent_sessions_subagent_gets_a_worktree_of_the_same_task(world) -> None:
    r = create(world, world["a1"], "agent-0f3c9a2b", session="agent-a1-session")
    want = world["t"] / "agents" / "agent-0f3c9a2b" / "code"
    assert r.returncode == 0 and r.stdout == f"{want}\n", r
    assert "agent-0f3c9a2b" in task_json(world)["agents"]
    # The subagent keeps its parent's session: in its own worktree it is agent-0f3c9a2b, not a1.
    launched = {**world["env"], "CLAUDE_PROJECT_DIR": str(world["a1"])}
    ok = hook(event(want, "Write", session="agent-a1-session", file_path="src/sub.py"), launched)
    assert ok.returncode == 0 and "agent agent-0f3c9a2b" in ok.stdout, ok
    back = hook(event(world["a1"], "Write", session="agent-a1-session", file_path="src/own.py"), launched)
    assert back.returncode == 0 and "agent a1 " in back.stdout, back


def test_outside_any_task_a_plain_worktree_under_the_tasks_root(tmp_path: Path) -> None:
    env = sealed_env(tmp_path / "home")
    repo = make_repo(tmp_path / "repo")
    ev = client_event("claude-WorktreeCreate", CWD=str(repo), NAME="scratch", SESSION="lonely")
    r = replay(ev, "claude", "worktree-create", env=env)
    want = tmp_path / "repo.tasks" / ".worktrees" / "scratch"
    assert r.returncode == 0 and r.stdout == f"{want}\n" and "not in a spark-git task" in r.stderr, r
    assert git(want, "rev-parse", "--abbrev-ref", "HEAD").strip() == "worktree-scratch"
    (want / "notes.txt").write_text("draft\n")
    gone = replay(client_event("claude-WorktreeRemove", CWD=str(repo), PATH=str(want), SESSION="lonely"), "claude", "worktree-remove", env=env)
    assert gone.returncode == 0 and not want.exists(), gone
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/spark/archive/").split()
    assert len(refs) == 1 and git(repo, "show", f"{refs[0]}:notes.txt") == "draft"
    # Not in any task's name: the archive made no task directory (it was `<root>/worktrees/`, with an
    # audit trail that `status` counted as an ended task and a later task `worktrees` inherited).
    assert sorted(p.name for p in (tmp_path / "repo.tasks").iterdir()) == [".worktrees"]
    assert not re.match(NAME_RE, refs[0].split("/")[3]), refs
    listed = spark(repo, "--json", "archive", "list", env=env).json["data"]["entries"]
    assert [e["ref"] for e in listed] == refs


def test_removal_archives_uncommitted_work_and_keeps_the_agents_worktree_until_cleanup(world) -> None:
    path = Path(create(world, world["code"], "wip").stdout.strip())
    (path / "src" / "app.py").write_text("print('changed')\n")
    (path / "new.txt").write_text("untracked\n")
    r = remove(world, path)
    assert r.returncode == 0 and "archived uncommitted work" in r.stderr and "spark-git cleanup t1" in r.stderr, r
    ref = next(x for x in git(world["repo"], "for-each-ref", "--format=%(refname)", "refs/spark/archive/t1/").split() if "wip" in x)
    assert git(world["repo"], "show", f"{ref}:new.txt") == "untracked"
    assert git(world["repo"], "show", f"{ref}:src/app.py") == "print('changed')"
    assert path.is_dir()  # an agent's worktree stays until the task ends: its commits still land with merge
    ev = json.loads((world["t"] / "audit-trail.json").read_text())
    assert "worktree_remove_deferred" in json.dumps(ev)


def test_removing_what_spark_git_did_not_make_is_refused(world) -> None:
    before = (world["t"] / "task.json").read_bytes()
    r = remove(world, world["code"])  # the task worktree
    assert r.returncode == 2 and "will not remove" in r.stderr, r
    assert world["code"].is_dir() and (world["t"] / "task.json").read_bytes() == before


def test_naming_another_agents_worktree_does_not_make_the_session_that_agent(world) -> None:
    # Agent a1's EnterWorktree("a2") (or the coordinator's) returned a2's worktree and claimed it for
    # the session: a1 then wrote in a2's worktree as a2. An existing worktree is handed out, but it
    # is judged as before: by where the session was launched.
    a2 = world["t"] / "agents" / "a2" / "code"
    assert spark(world["repo"], "agent", "add", "t1", "a2", "--why", "second", env={**world["env"], "SPARK_SESSION_ID": "s1"}).returncode == 0
    for launched, session in ((world["a1"], "agent-a1-session"), (world["code"], "s1")):
        env = {**world["env"], "CLAUDE_PROJECT_DIR": str(launched)}
        r = replay(client_event("claude-WorktreeCreate", CWD=str(launched), NAME="a2", SESSION=session), "claude", "worktree-create", env=env)
        assert r.returncode == 0 and r.stdout == f"{a2}\n", r
        w = hook(event(a2, "Write", session=session, file_path="src/app.py"), env)
        assert w.returncode == 2 and "agent a2's worktree" in w.stderr, (session, w)
    # The worktree made for a session stays that session's (the same name again: the same claim).
    mine = Path(create(world, world["a1"], "helper", session="agent-a1-session").stdout.strip())
    env = {**world["env"], "CLAUDE_PROJECT_DIR": str(world["a1"])}
    assert create(world, world["a1"], "helper", session="agent-a1-session").stdout.strip() == str(mine)
    assert hook(event(mine, "Write", session="agent-a1-session", file_path="x.py"), env).returncode == 0
    # Another session naming it gets the path, not its identity.
    other = create(world, world["code"], "helper", session="s1")
    assert other.stdout.strip() == str(mine)
    code_env = {**world["env"], "CLAUDE_PROJECT_DIR": str(world["code"])}
    assert hook(event(mine, "Write", session="s1", file_path="x.py"), code_env).returncode == 2
    assert hook(event(mine, "Write", session="agent-a1-session", file_path="x.py"), env).returncode == 0


def test_a_claim_does_not_outlive_its_task(world) -> None:
    # A worktree made for session s1 in task t1; t1 abandoned, then started again with an agent of
    # that name: the new agent's worktree was still claimed for s1, so s1 wrote there as that agent.
    made = Path(create(world, world["code"], "helper").stdout.strip())
    launched = {**world["env"], "CLAUDE_PROJECT_DIR": str(world["code"])}
    assert hook(event(made, "Write", session="s1", file_path="x.py"), launched).returncode == 0
    owner = {**world["env"], "SPARK_SESSION_ID": "s1"}
    assert spark(world["repo"], "abandon", "t1", "--why", "again", env=owner).returncode == 0
    assert spark(world["repo"], "start", "t1", "--agents", "helper", env=owner).returncode == 0
    assert made.is_dir()
    w = hook(event(made, "Write", session="s1", file_path="x.py"), launched)
    assert w.returncode == 2 and "agent helper's worktree" in w.stderr, w
