"""An agent's identity is its own (issue 22 item 2, issue 23 item 5): `spark-git env T --agent A` gives
agent A a session that is not the owner's; coordinator commands refuse an agent (by its environment,
its working directory, or those of a process it runs under) with exit 3; `report`, `sync` and `env`
take an agent only for itself. Real processes wherever the environment is what is tested."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.repo import commit, git, make_repo, spark

from spark_git.core import caller
from tests.hookutil import run_cli

CONFIG = 'protocol = "light"\n[ports]\nstart = 45800\nend = 45899\n'
PY = sys.executable


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    repo = make_repo(tmp_path / "repo", config=CONFIG)
    assert run_cli(repo, "start", "t1", "--agents", "a,b", session="owner-1").returncode == 0
    root = tmp_path / "repo.tasks" / "t1"
    return {"repo": repo, "task_wt": root / "code", "a": root / "agents" / "a" / "code", "b": root / "agents" / "b" / "code"}


def _bash(script: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`script` in a real bash whose `spark-git` is this checkout's (a function: no install needed)."""
    prelude = f'spark-git() {{ {PY} -m spark_git "$@"; }}\n'
    e = {k: v for k, v in os.environ.items() if not k.startswith("SPARK_")}
    e.update(env or {})
    return subprocess.run(["bash", "-c", prelude + script], cwd=cwd, capture_output=True, text=True, env=e, timeout=120)


def _envelope(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def test_env_gives_the_agent_its_own_session_never_the_owners(world: dict[str, Path]) -> None:
    for shell in ("bash", "json", "fish"):
        r = run_cli(world["repo"], "env", "t1", "--agent", "a", "--shell", shell, session=None)
        assert r.returncode == 0, r
        assert "owner-1" not in r.stdout and caller.agent_session("t1", "a") in r.stdout
    assert caller.agent_of(caller.agent_session("t1", "a")) == ("t1", "a")
    assert caller.agent_of("owner-1") is None and caller.agent_of("agent:t1") is None


def test_the_documented_eval_makes_an_agent_that_cannot_merge(world: dict[str, Path]) -> None:
    """Fails before: the env carried the owner's session, and the agent's merge landed."""
    commit(world["a"], {"a.txt": "a\n"}, "[a] work")
    before = git(world["repo"], "rev-parse", "refs/heads/t1")
    for where in (world["a"], world["repo"]):  # in its worktree, and after a `cd` out of it
        r = _bash(f'eval "$(spark-git env t1 --agent a)" && cd {where} && spark-git --json merge t1 --agent a', world["a"])
        assert r.returncode == 3, r
        env = _envelope(r.stdout)
        assert env["status"] == "BLOCKED" and "coordinator" in env["summary"] and "agent a of task t1" in env["summary"]
        assert env["next"][0] == "spark-git report t1 --agent a --status COMPLETE"
    assert git(world["repo"], "rev-parse", "refs/heads/t1") == before


def test_an_agent_cannot_turn_the_env_output_into_the_owners_identity(world: dict[str, Path]) -> None:
    """The task worktree's env (which carries the owner's session) and another agent's are refused
    to an agent; the owner's session passed by hand does not help while the agent's marks remain."""
    set_up = 'eval "$(spark-git env t1 --agent a)" && '
    for ask in ("spark-git --json env t1", "spark-git --json env t1 --agent b"):
        r = _bash(set_up + ask, world["a"])
        assert r.returncode == 3 and "owner-1" not in r.stdout, r
        assert _envelope(r.stdout)["next"] == ["spark-git env t1 --agent a"]
    r = _bash(set_up + f"cd {world['repo']} && spark-git --json merge t1 --agent a --session owner-1", world["a"])
    assert r.returncode == 3 and "SPARK_AGENT=a" in _envelope(r.stdout)["summary"], r
    assert _bash(set_up + "spark-git env t1 --agent a", world["a"]).returncode == 0


def test_a_process_the_agent_runs_under_keeps_it_an_agent(world: dict[str, Path]) -> None:
    """The client was started with the agent's environment (or in its worktree): unsetting the
    variables and `cd`-ing out inside it changes nothing (Linux /proc)."""
    if not Path("/proc/self/environ").exists():
        pytest.skip("no /proc: ancestors cannot be read on this platform")
    agent_env = json.loads(run_cli(world["repo"], "env", "t1", "--agent", "a", "--shell", "json", session=None).stdout)
    shed = f"unset SPARK_AGENT SPARK_TASK; cd {world['repo']} && SPARK_SESSION_ID=owner-1 spark-git --json merge t1 --agent a"
    # `; exit $?`: the outer bash stays a process (the client), not exec'd into the inner one
    r = _bash(f"bash -c {json.dumps(shed)}; exit $?", world["repo"], env=agent_env)
    assert r.returncode == 3, r
    assert "was started with SPARK_AGENT=a" in _envelope(r.stdout)["summary"]
    r = _bash(f"bash -c {json.dumps(shed)}; exit $?", world["a"], env={"SPARK_SESSION_ID": "owner-1"})  # launched in a's worktree
    assert r.returncode == 3, r
    assert "runs in agent a's worktree" in _envelope(r.stdout)["summary"]


def test_an_agent_worktree_as_working_directory_is_an_agent(world: dict[str, Path]) -> None:
    owner = {"SPARK_SESSION_ID": "owner-1"}
    r = spark(world["a"], "--json", "advance", "t1", env={**os.environ, **owner})
    assert r.returncode == 3 and "working directory is in agent a's worktree" in r.json["summary"], r
    r = spark(world["a"], "--json", "-C", str(world["repo"]), "lock", "main", env={**os.environ, **owner}, process=True)
    assert r.returncode == 3, r  # -C elsewhere: the process still stands in a's worktree
    assert spark(world["repo"], "--json", "lock", "main", env={**os.environ, **owner}).returncode == 0
    assert spark(world["repo"], "--json", "-C", str(world["a"]), "status", "t1", env={**os.environ, **owner}).returncode == 0


# The coordinator's commands by command family (cli module); each refused to agent a, nothing changed.
COORDINATOR_CALLS = {
    "tasks": [["start", "t2"], ["agent", "add", "t1", "c", "--why", "x"], ["agent", "run", "t1", "b"]],
    "mainlock": [["lock", "main"], ["unlock", "main"], ["lock", "break", "t1", "--why", "x"]],
    "merge": [["merge", "t1", "--agent", "a"], ["merge", "t1", "--all"], ["update", "t1"], ["approve", "t1", "--changes"], ["complete", "t1"],
              ["accept", "t1", "--why", "x"]],
    "queue": [["queue", "run"]],
    "protocol": [["advance", "t1"], ["classify", "t1", "--risk", "LOW", "--why", "x"]],
    "cleanup": [["cleanup", "t1"], ["abandon", "t1", "--why", "x"], ["archive", "restore", "refs/spark/archive/x"]],
    "hooks": [["hooks", "install"], ["hooks", "uninstall"], ["init"]],
    "remote": [["remote", "enable", "origin"], ["remote", "disable"]],
}


def test_the_calls_cover_every_coordinator_command() -> None:
    named = {" ".join(w for w in call[:2] if w not in ("t1", "t2")) for calls in COORDINATOR_CALLS.values() for call in calls}
    assert named == caller.COORDINATOR


@pytest.mark.parametrize("family", sorted(COORDINATOR_CALLS))
def test_coordinator_commands_refuse_an_agent(world: dict[str, Path], family: str) -> None:
    """Fails before: with `env --agent a`'s variables (the owner's session then), each was accepted."""
    agent = json.loads(run_cli(world["repo"], "env", "t1", "--agent", "a", "--shell", "json", session=None).stdout)
    tasks = world["repo"].parent / "repo.tasks"
    before = {p: p.read_bytes() for p in sorted(tasks.rglob("*.json"))}
    refs = git(world["repo"], "for-each-ref")
    for call in COORDINATOR_CALLS[family]:
        r = run_cli(world["repo"], "--json", *call, session=None, env=agent)
        assert r.returncode == 3, (call, r)
        assert r.json["data"]["agents"] == ["t1/a"] and r.json["next"][0].startswith("spark-git report t1 --agent a"), call
    assert {p: p.read_bytes() for p in sorted(tasks.rglob("*.json"))} == before
    assert git(world["repo"], "for-each-ref") == refs


def test_every_guarded_name_is_a_command() -> None:
    import typer

    from spark_git.cli.root import load

    def names(cmd: object, path: list[str]) -> list[str]:
        subs = getattr(cmd, "commands", None)
        return [n for k, c in subs.items() for n in names(c, [*path, k])] if subs else [" ".join(path)]

    known = set(names(typer.main.get_command(load(None)), []))
    assert known >= caller.COORDINATOR | caller.SELF_ONLY


def test_report_is_accepted_from_the_agent_it_names_or_the_coordinator(world: dict[str, Path]) -> None:
    """Fails before: the agent's own session was refused (not the owner), the owner's was accepted
    for any agent."""
    a_env = {"SPARK_AGENT": "a", "SPARK_TASK": "t1", "SPARK_SESSION_ID": caller.agent_session("t1", "a")}
    r = run_cli(world["a"], "--json", "report", "t1", "--agent", "a", "--status", "WORKING", session=None, env=a_env)
    assert r.returncode == 0, r
    r = run_cli(world["a"], "--json", "report", "t1", "--agent", "b", "--status", "COMPLETE", session=None, env=a_env)
    assert r.returncode == 3 and "only for itself" in r.json["summary"] and r.json["next"] == ["spark-git report t1 --agent a --status WORKING"], r
    # the agent's session from a neutral place still speaks only for that agent
    r = run_cli(world["repo"], "--json", "report", "t1", "--agent", "b", "--status", "COMPLETE", session=caller.agent_session("t1", "a"))
    assert r.returncode == 3, r
    status = world["repo"].parent / "repo.tasks" / "t1" / "agents"
    assert json.loads((status / "b" / "status.json").read_text())["status"] == "NEW"
    assert json.loads((status / "a" / "status.json").read_text())["status"] == "WORKING"
    trail = json.loads((world["repo"].parent / "repo.tasks" / "t1" / "audit-trail.json").read_text())
    assert trail["agent_invocations"][-1]["session_id"] == "agent:t1:a"
    r = run_cli(world["repo"], "--json", "report", "t1", "--agent", "b", "--status", "COMPLETE", session="owner-1")
    assert r.returncode == 0, r


def test_sync_is_the_agents_own(world: dict[str, Path]) -> None:
    commit(world["task_wt"], {"base.txt": "x\n"}, "task moved")
    a_env = {"SPARK_AGENT": "a", "SPARK_TASK": "t1", "SPARK_SESSION_ID": caller.agent_session("t1", "a")}
    r = run_cli(world["a"], "--json", "sync", "t1", "--agent", "a", session=None, env=a_env)
    assert r.returncode == 0 and r.json["data"]["rebased"], r
    assert run_cli(world["a"], "--json", "sync", "t1", "--agent", "b", session=None, env=a_env).returncode == 3
    assert run_cli(world["repo"], "--json", "sync", "t1", "--agent", "b", session="owner-1").returncode == 0


@pytest.mark.parametrize("client", ["claude", "codex", "gemini"])
def test_session_start_tells_an_agent_who_it_is_never_the_owners_tasks(world: dict[str, Path], client: str) -> None:
    """Fails before: with the owner's session in the environment (what `env --agent` gave), the
    agent's session start listed the owner's task and told it to `cd` into the task worktree."""
    ev = {"session_id": "client-1", "cwd": str(world["a"]), "hook_event_name": "SessionStart", "source": "startup"}
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARK_")}
    for launched, extra in ((world["a"], {"SPARK_SESSION_ID": "owner-1"}),  # in its worktree, the owner's session exported
                            (world["repo"], {"SPARK_AGENT": "a", "SPARK_TASK": "t1", "SPARK_SESSION_ID": caller.agent_session("t1", "a")})):
        r = spark(launched, "hook", "session-start", "--client", client, input=json.dumps({**ev, "cwd": str(launched), "session_id": f"c-{launched.name}"}),
                  env={**env, **extra}, process=True)
        assert r.returncode == 0, r
        text = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"] if client == "gemini" else r.stdout
        assert "you are agent a (role other) of task t1" in text and "not the coordinator" in text
        assert f"your worktree: {world['a']} (branch task-t1-agent-a)" in text
        assert "spark-git report t1 --agent a --status COMPLETE" in text and '"[a] what changed"' in text
        assert "owns" not in text and str(world["task_wt"]) not in text and "spark-git merge" not in text
    r = spark(world["a"], "--json", "hook", "session-start", input=json.dumps(ev), env={**env, "SPARK_SESSION_ID": "owner-1"}, process=True)
    d = r.json["data"]
    assert d["tasks"] == [] and d["agent"]["agent"] == "a" and d["agent"]["branch"] == "task-t1-agent-a", r
    # the coordinator's own session start is unchanged: its task, every worktree
    r = spark(world["repo"], "hook", "session-start", input=json.dumps({**ev, "cwd": str(world["repo"]), "session_id": "coord"}),
              env={**env, "SPARK_SESSION_ID": "owner-1"}, process=True)
    assert "owns 1 task(s)" in r.stdout and f"agent a: {world['a']}" in r.stdout, r


@pytest.mark.usefixtures("unboxed")  # the probes log to a file outside the repository; the box would only refuse them more
def test_gates_and_setup_run_as_the_agent_or_the_gate_never_as_the_owner(tmp_path: Path) -> None:
    """The agents' code runs in gates and set-up commands: there it is refused the coordinator's
    commands even when it names the owner's session. Fails before: they ran with the owner's session."""
    log = tmp_path / "log"
    probe = (f"echo $SPARK_SESSION_ID >> {log}; {PY} -m spark_git --json merge t1 --agent b --session owner-1 > /dev/null; echo merge $? >> {log};"
             f" {PY} -m spark_git --json report t1 --agent b --status COMPLETE --session owner-1 > /dev/null; echo report $? >> {log}")
    # final differs from build (`; true`): a verdict of the same command on this tree would be reused
    cfg = (f'protocol = "light"\n[worktree]\nsetup = [["sh", "-c", "echo setup $SPARK_SESSION_ID >> {log}"]]\n'
           f"[gates]\nbuild = {json.dumps(['sh', '-c', probe])}\nfinal = {json.dumps(['sh', '-c', probe + '; true'])}\n[approval]\nallow_non_interactive = true\n")
    repo = make_repo(tmp_path / "repo", config=cfg)
    r = run_cli(repo, "--json", "start", "t1", "--agents", "a,b", session="owner-1")
    assert r.returncode == 0 and log.exists(), r
    assert sorted(log.read_text().splitlines()) == ["setup agent:t1:a", "setup agent:t1:b", "setup gate:t1"]
    log.unlink()
    commit(tmp_path / "repo.tasks" / "t1" / "agents" / "a" / "code", {"a.txt": "a\n"}, "[a] work")
    assert run_cli(repo, "--json", "merge", "t1", "--agent", "a", session="owner-1").returncode == 0
    # the setup commands run again in the gate's clean checkout before the gate, with the same identity
    assert log.read_text().splitlines() == ["setup agent:t1:a", "agent:t1:a", "merge 3", "report 3"]
    log.unlink()
    assert run_cli(repo, "--json", "approve", "t1", "--changes", session="owner-1").returncode == 0
    r = run_cli(repo, "--json", "complete", "t1", session="owner-1")
    assert r.returncode == 0, r
    assert [ln for ln in log.read_text().splitlines() if not ln.startswith("setup ")] == ["gate:t1", "merge 3", "report 3"]


def test_the_hook_judges_a_session_started_with_an_agents_environment_as_that_agent(world: dict[str, Path]) -> None:
    """Launched in the main worktree with `env --agent a`'s variables: a's worktree is its own, the
    main worktree and b's are not. Fails before: it was judged as the coordinator (a's worktree blocked)."""
    from tests.hookutil import event, hook

    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARK_")}
    env.update(json.loads(run_cli(world["repo"], "env", "t1", "--agent", "a", "--shell", "json", session=None).stdout))
    spark(world["repo"], "hook", "session-start", input=json.dumps({"session_id": "c1", "cwd": str(world["repo"])}), env=env, process=True)
    assert hook(event(world["repo"], "Write", session="c1", file_path=str(world["a"] / "x.py")), env).returncode == 0
    for elsewhere in (world["repo"] / "x.py", world["b"] / "x.py"):
        r = hook(event(world["repo"], "Write", session="c1", file_path=str(elsewhere)), env)
        assert r.returncode == 2, (elsewhere, r)


def test_an_agent_session_given_as_an_option_is_an_agent(world: dict[str, Path]) -> None:
    """No agent session ever owns a task or the main lock, however it is given."""
    for call in (["start", "t9"], ["lock", "main"], ["merge", "t1", "--agent", "a"]):
        r = run_cli(world["repo"], "--json", *call, "--session", caller.agent_session("t1", "a"), session=None)
        assert r.returncode == 3 and "--session gives the agent session" in r.json["summary"], (call, r)
    assert not (world["repo"].parent / "repo.tasks" / "t9").exists()


def test_an_agent_of_another_repository_is_the_coordinator_here(world: dict[str, Path], tmp_path: Path) -> None:
    """Agent a of this repo runs another repo's tests (which start tasks there): its marks name this
    repo's worktrees, so the other repo does not take it for an agent."""
    other = make_repo(tmp_path / "other")
    agent_env = json.loads(run_cli(world["repo"], "env", "t1", "--agent", "a", "--shell", "json", session=None).stdout)
    r = _bash(f"cd {other} && SPARK_SESSION_ID=o1 spark-git --json start t2 --agents x; exit $?", world["a"], env={**agent_env, "SPARK_SESSION_ID": "o1"})
    assert r.returncode == 0, r
    r = _bash(f"cd {world['repo']} && spark-git --json merge t1 --agent a --session owner-1; exit $?", world["a"], env=agent_env)
    assert r.returncode == 3, r


def test_a_worktree_made_by_the_worktree_hook_is_an_agents_place(world: dict[str, Path]) -> None:
    """A worktree-isolated subagent of the coordinator's Claude Code session shares its environment
    (the owner's session exported): standing in the worktree `hook worktree-create` made, it is that
    agent, refused the coordinator's commands. Fails before: the merge was accepted."""
    from tests.hookutil import client_event, replay

    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARK_")}
    r = replay(client_event("claude-WorktreeCreate", CWD=str(world["repo"]), NAME="helper", SESSION="coord"), "claude", "worktree-create",
               env={**env, "SPARK_SESSION_ID": "owner-1"})
    assert r.returncode == 0, r
    sub = Path(r.stdout.strip())
    assert sub == world["repo"].parent / "repo.tasks" / "t1" / "agents" / "helper" / "code"
    r = spark(sub, "--json", "merge", "t1", "--agent", "helper", env={**env, "SPARK_SESSION_ID": "owner-1"}, process=True)
    assert r.returncode == 3 and "agent helper of task t1" in r.json["summary"], r
    r = spark(sub, "--json", "report", "t1", "--agent", "helper", "--status", "WORKING", env={**env, "SPARK_SESSION_ID": "owner-1"})
    assert r.returncode == 0, r  # its own report: the owner's session is accepted for any agent
