"""`spark-git agent run`: the real Claude Code started by spark-git as agent a of task t1 (its model
played by the scripted server), briefed, and heard: its final Universal Output JSON becomes a's
report with that evidence. Bad input is refused before anything starts."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.claude_agent import AgentTask, agent_task, client_env
from fixtures.modelserver.anthropic import Anthropic
from fixtures.modelserver.core import ModelServer, Say, Script, Tool, Turn, require_binary
from fixtures.repo import git, share_records_key, spark, spark_argv

SKIP = "--dangerously-skip-permissions"  # headless: no one to approve a tool call; the hook and the sandbox stand
OUTPUT = {"status": "OK", "summary": "sub() added", "artifacts": {"files_changed": ["calc.py"]}}


@pytest.fixture
def task() -> Iterator[AgentTask]:
    """Outside /dev: Claude Code's sandbox mounts its own /dev (see fixtures/claude_agent.py)."""
    for tool in ("claude", "bwrap", "socat"):
        require_binary(tool)
    d = Path(tempfile.mkdtemp(prefix="spark-agent-run-", dir="/tmp"))
    yield agent_task(d)
    shutil.rmtree(d, ignore_errors=True)


def bash(command: str) -> Tool:
    return Tool("Bash", {"command": command, "description": "scripted"})


def agent_run(t: AgentTask, turns: list[Turn], *args: str) -> tuple[dict[str, object], Script]:
    script = Script(list(turns))
    share_records_key(t.base / "state", t.env["XDG_STATE_HOME"])  # the coordinator's state dir here: the same user's records key as at start (issue 31)
    with ModelServer(Anthropic(), script) as srv:
        env = {**client_env(t, srv.url), "SPARK_SESSION_ID": "owner", "SSH_AUTH_SOCK": str(t.base / "ssh-agent.sock"),
               "XDG_STATE_HOME": str(t.base / "state")}
        r = spark(t.repo, "agent", "run", "t1", "a", "--client", "claude", "--json", *args, "--", SKIP, env=env, process=True)
    return json.loads(r.stdout), script


def test_a_headless_run_that_commits_and_answers_becomes_a_complete_report(task: AgentTask) -> None:
    a = task.worktree("a")
    env, script = agent_run(task, [
        Tool("Write", {"file_path": str(a / "calc.py"), "content": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"}),
        bash("git add -A && git commit -q -m '[a] sub()' && env | grep -E '^(SPARK_AGENT|SPARK_SESSION_ID|SSH_AUTH_SOCK|XDG_STATE_HOME)='"),
        Say(json.dumps(OUTPUT)),
    ])
    assert env["status"] == "OK", env
    d = env["data"]
    assert isinstance(d, dict) and d["outcome"] == "reported" and d["report_status"] == "COMPLETE" and d["exit_code"] == 0, d
    assert git(a, "log", "-1", "--format=%s", "task-t1-agent-a") == "[a] sub()"
    # the agent ran as itself: its own session, never the owner's; SSH_AUTH_SOCK kept from it
    said = json.dumps(script.requests)
    assert "SPARK_AGENT=a" in said and "SPARK_SESSION_ID=agent:t1:a" in said and "SSH_AUTH_SOCK=" not in said and "XDG_STATE_HOME=" not in said
    # the brief went in as the prompt
    assert "task_state" in said and "Universal Output JSON" in said
    st = json.loads((task.base / "repo.tasks/t1/agents/a/status.json").read_text())
    assert st["status"] == "COMPLETE" and st["evidence"]["output"]["summary"] == "sub() added", st
    assert st["evidence"]["files"][0]["path"] == d["evidence"]
    trail = json.loads((task.base / "repo.tasks/t1/audit-trail.json").read_text())
    runs = [e for e in trail["events"] if e.get("kind") == "agent_run"]
    assert runs and runs[-1]["client"] == "claude" and runs[-1]["exit_code"] == 0 and runs[-1]["tokens"], runs
    assert not (task.base / "repo.tasks/t1/agents/a/run.json").exists()  # the run is over


def test_an_answer_that_is_not_output_json_is_a_failed_run_with_the_last_words(task: AgentTask) -> None:
    env, _ = agent_run(task, [Say("I could not finish")])
    assert env["status"] == "FAIL", env
    d = env["data"]
    assert isinstance(d, dict) and d["outcome"] == "failed" and "I could not finish" in str(d["last_words"]), d
    assert not (task.base / "repo.tasks/t1/agents/a/status.json").exists() or \
        json.loads((task.base / "repo.tasks/t1/agents/a/status.json").read_text())["status"] != "COMPLETE"


@pytest.mark.parametrize(("args", "code", "word"), [
    (("t1", "zz", "--client", "claude"), 2, "no agent"),
    (("t9", "a", "--client", "claude"), 2, "t9"),
    (("t1", "a", "--client", "vim"), 2, "unknown client"),
    (("t1", "a", "--client", "gemini"), 3, "hooks"),  # installed, but its hooks are not: refused with the fix
])
def test_bad_input_is_refused_and_nothing_starts(task: AgentTask, args: tuple[str, ...], code: int, word: str) -> None:
    r = spark(task.repo, "agent", "run", *args, "--json", env={**task.env, "SPARK_SESSION_ID": "owner"})
    env = json.loads(r.stdout)
    assert r.returncode == code and word in env["summary"], (r.returncode, env)
    assert not list((task.base / "repo.tasks/t1/agents/a").glob("runs/*"))


def test_an_agent_may_not_run_agents(task: AgentTask) -> None:
    r = spark(task.worktree("a"), "agent", "run", "t1", "b", "--json", env={**task.env, "SPARK_SESSION_ID": "agent:t1:a"})
    assert r.returncode == 3 and "coordinator" in json.loads(r.stdout)["summary"], r


def test_status_shows_the_last_run_and_a_second_run_of_a_running_agent_is_refused(task: AgentTask) -> None:
    agent_run(task, [Say(json.dumps(OUTPUT))])
    owner = {**task.env, "SPARK_SESSION_ID": "owner"}
    a = json.loads(spark(task.repo, "status", "t1", "--json", env=owner).stdout)["data"]["tasks"][0]["agents"][0]
    assert a["run"]["state"] == "done" and a["run"]["client"] == "claude" and a["run"]["outcome"] == "reported", a
    assert "claude reported COMPLETE" in spark(task.repo, "status", "t1", env=owner).stdout
    # a live run: its record names a process that is there (this one)
    rec = task.base / "repo.tasks/t1/agents/a/run.json"
    rec.write_text(json.dumps({"task": "t1", "agent": "a", "client": "claude", "mode": "headless", "pid": os.getpid(), "started_at": "x"}))
    a = json.loads(spark(task.repo, "status", "t1", "--json", env=owner).stdout)["data"]["tasks"][0]["agents"][0]
    assert a["run"]["state"] == "running", a
    before = sorted((task.base / "repo.tasks/t1/agents/a/runs").iterdir())
    r = spark(task.repo, "agent", "run", "t1", "a", "--client", "claude", "--json", env=owner)
    assert r.returncode == 3 and "already running" in json.loads(r.stdout)["summary"], r
    assert sorted((task.base / "repo.tasks/t1/agents/a/runs").iterdir()) == before  # nothing started


def test_doctor_finds_a_run_a_crash_left_behind(task: AgentTask) -> None:
    p = subprocess.Popen(["true"])  # a pid that is gone
    p.wait()
    rec = task.base / "repo.tasks/t1/agents/a/run.json"
    rec.write_text(json.dumps({"task": "t1", "agent": "a", "client": "claude", "mode": "headless", "pid": p.pid, "started_at": "x"}))
    owner = {**task.env, "SPARK_SESSION_ID": "owner"}
    r = spark(task.repo, "doctor", "--json", env=owner)
    kinds = [f["kind"] for f in json.loads(r.stdout)["data"]["findings"]]
    assert "agent-run-left-behind" in kinds, r
    spark(task.repo, "doctor", "--fix", "--json", env=owner)
    assert not rec.exists()


@pytest.fixture
def endpoint() -> Iterator[str]:
    """A URL where something listens: `agent run` checks the model can be reached before it starts a
    client (here a stand-in that needs no model)."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        yield f"http://127.0.0.1:{srv.getsockname()[1]}"


def test_tmux_opens_the_window_and_status_shows_it_running(task: AgentTask, endpoint: str) -> None:
    require_binary("tmux")
    sock = task.base / "repo.tasks" / "tmux"  # a private tmux server (TMUX_TMPDIR), never the user's
    sock.mkdir()
    # What is tested is the window, its path and the environment the client gets, so the client is a
    # stand-in that waits on its terminal until the server is killed: the real interactive Claude Code
    # sometimes left before `list-windows` looked (it has no model to talk to here), and the window with it.
    stand_in = task.base / "bin"
    stand_in.mkdir()
    (stand_in / "claude").write_text("#!/bin/sh\nexec cat\n")
    (stand_in / "claude").chmod(0o755)
    env = {**task.env, "PATH": f"{stand_in}{os.pathsep}{task.env['PATH']}", "SPARK_SESSION_ID": "owner", "TMUX_TMPDIR": str(sock),
           "SSH_AUTH_SOCK": str(task.base / "ssh.sock"), "ANTHROPIC_BASE_URL": endpoint}
    try:
        r = spark(task.repo, "agent", "run", "t1", "a", "--client", "claude", "--tmux", "--json", env=env, process=True)
        assert r.returncode == 0, r
        assert json.loads(r.stdout)["data"]["window"] == "t1/a"
        wins = subprocess.run(["tmux", "list-windows", "-a", "-F", "#{session_name} #{window_name} #{pane_start_path}"], env=env,
                              capture_output=True, text=True, check=True).stdout
        assert f"spark-git t1/a {task.worktree('a')}" in wins, wins
        a = json.loads(spark(task.repo, "status", "t1", "--json", env=env).stdout)["data"]["tasks"][0]["agents"][0]
        assert a["run"]["state"] == "running" and a["run"]["window"] == "t1/a", a
        box = _child_of(a["run"]["pid"])  # the window's shell waits for its client (in spark-git's box), to write its exit code
        assert Path(f"/proc/{box}/cmdline").read_bytes().split(b"\0")[0].endswith(b"bwrap")
        [client] = [p for p in _descendants(box) if Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0] == b"cat"]  # the stand-in, exec'd by env -i
        environ = Path(f"/proc/{client}/environ").read_bytes().split(b"\0")  # the client's own (env -i exec'd it)
        assert b"SPARK_SESSION_ID=agent:t1:a" in environ and not any(v.startswith(b"SSH_AUTH_SOCK=") for v in environ), environ
        r2 = spark(task.repo, "agent", "run", "t1", "a", "--client", "claude", "--tmux", "--json", env=env)
        assert r2.returncode == 3 and "already running" in json.loads(r2.stdout)["summary"], r2
    finally:
        subprocess.run(["tmux", "kill-server"], env=env, capture_output=True, check=False)


def _child_of(pid: int) -> int:
    [child] = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return int(child)


def _descendants(pid: int) -> list[int]:
    kids = [int(k) for k in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return [*kids, *(d for k in kids for d in _descendants(k))]


def test_a_tmux_window_that_closes_is_told_as_it_ended_and_doctor_fix_records_it(task: AgentTask, endpoint: str) -> None:
    """The window's client exits 3 at once: status says so (not "started (exit None)"), doctor finds the
    unrecorded end, --fix records it, and status still says how it ended."""
    require_binary("tmux")
    sock = task.base / "repo.tasks" / "tmux"
    sock.mkdir()
    stand_in = task.base / "bin"
    stand_in.mkdir()
    (stand_in / "claude").write_text("#!/bin/sh\nexit 3\n")
    (stand_in / "claude").chmod(0o755)
    env = {**task.env, "PATH": f"{stand_in}{os.pathsep}{task.env['PATH']}", "SPARK_SESSION_ID": "owner", "TMUX_TMPDIR": str(sock),
           "ANTHROPIC_BASE_URL": endpoint}
    agent_dir = task.base / "repo.tasks/t1/agents/a"
    try:
        r = spark(task.repo, "agent", "run", "t1", "a", "--client", "claude", "--tmux", "--json", env=env, process=True)
        assert r.returncode == 0, r
        deadline = time.monotonic() + 30
        while not (agent_dir / "run.exit").exists():  # the window's shell writes it as the client ends
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pid = json.loads((agent_dir / "run.json").read_text())["pid"]
        while Path(f"/proc/{pid}").exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        a = json.loads(spark(task.repo, "status", "t1", "--json", env=env).stdout)["data"]["tasks"][0]["agents"][0]
        assert a["run"]["state"] == "done" and a["run"]["ended"] == "window closed, exited 3" and a["run"]["exit_code"] == 3, a
        assert "claude window closed, exited 3" in spark(task.repo, "status", "t1", env=env).stdout
        found = json.loads(spark(task.repo, "doctor", "--json", env=env).stdout)["data"]["findings"]
        assert [f["details"]["ended"] for f in found if f["kind"] == "agent-run-left-behind"] == ["window closed, exited 3"], found
        assert spark(task.repo, "doctor", "--fix", "--json", env=env).returncode == 0
        assert not (agent_dir / "run.json").exists() and not (agent_dir / "run.exit").exists()
        a = json.loads(spark(task.repo, "status", "t1", "--json", env=env).stdout)["data"]["tasks"][0]["agents"][0]
        assert a["run"]["ended"] == "window closed, exited 3" and a["run"]["outcome"] == "ended", a
    finally:
        subprocess.run(["tmux", "kill-server"], env=env, capture_output=True, check=False)


def test_all_runs_three_agents_in_parallel_and_shows_each_outcome(task: AgentTask) -> None:
    cfg = task.repo / ".spark-git.toml"
    cfg.write_text(cfg.read_text() + "[agents]\nparallel = 3\n")
    git(task.repo, "commit", "-q", "-am", "three at once", env=task.env)  # the config in effect is the committed one
    owner = {**task.env, "SPARK_SESSION_ID": "owner"}
    assert spark(task.repo, "agent", "add", "t1", "c", "--why", "a third hand", "--json", env=owner).returncode == 0
    script = Script([Say(json.dumps(OUTPUT))] * 3)  # one answer per agent, whoever asks first
    with ModelServer(Anthropic(), script) as srv:
        env = {**client_env(task, srv.url), "SPARK_SESSION_ID": "owner"}
        r = spark(task.repo, "agent", "run", "t1", "--all", "--client", "claude", "--json", "--", SKIP, env=env, process=True)
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["data_schema"] == "agent run --all", r
    d = out["data"]
    assert d["parallel"] == 3 and [(x["agent"], x["state"], x["report_status"]) for x in d["runs"]] == [
        ("a", "reported", "COMPLETE"), ("b", "reported", "COMPLETE"), ("c", "reported", "COMPLETE")], d
    assert out["next"][0] == "spark-git merge t1 --all"
    # in parallel: every run started before any ended (the audit trail's end times and durations)
    from datetime import datetime
    trail = json.loads((task.base / "repo.tasks/t1/audit-trail.json").read_text())
    spans = [(datetime.fromisoformat(e["at"].replace("Z", "+00:00")).timestamp() - e["duration_s"],
              datetime.fromisoformat(e["at"].replace("Z", "+00:00")).timestamp()) for e in trail["events"] if e.get("kind") == "agent_run"]
    assert len(spans) == 3 and max(s for s, _ in spans) < min(e for _, e in spans), spans


def test_a_run_whose_model_tries_to_leave_its_worktree_is_blocked(task: AgentTask) -> None:
    b = task.worktree("b")
    env, script = agent_run(task, [
        Tool("Write", {"file_path": str(b / "x.py"), "content": "x = 1\n"}),
        bash(f"printf 'echo x > {b}/y.py' > s.sh && sh s.sh"),  # a script: the hook does not read it, the sandbox stands
        Say(json.dumps(OUTPUT)),
    ])
    assert not (b / "x.py").exists() and not (b / "y.py").exists()
    results = [c for req in script.requests for m in req["body"].get("messages", []) if isinstance(m.get("content"), list)
               for c in m["content"] if isinstance(c, dict) and c.get("type") == "tool_result"]
    texts = json.dumps(results)
    assert "spark-git: blocked" in texts and "Read-only file system" in texts, texts[-2000:]
    assert env["data"]["outcome"] == "reported"  # the agent's answer still counts: it did not get out


def test_the_light_protocol_end_to_end_driven_by_agent_run_all(task: AgentTask) -> None:
    cfg = task.repo / ".spark-git.toml"
    cfg.write_text(cfg.read_text() + "[agents]\nparallel = 1\n")  # one script, turns in order: one agent at a time
    git(task.repo, "commit", "-q", "-am", "one agent at a time", env=task.env)  # complete lands on a clean main
    owner = {**task.env, "SPARK_SESSION_ID": "owner"}
    work = bash('echo "$SPARK_AGENT" > "$SPARK_AGENT.txt" && git add -A && git commit -q -m "[$SPARK_AGENT] its part"')
    script = Script([work, Say(json.dumps(OUTPUT)), work, Say(json.dumps(OUTPUT))])
    with ModelServer(Anthropic(), script) as srv:
        env = {**client_env(task, srv.url), "SPARK_SESSION_ID": "owner"}
        r = spark(task.repo, "agent", "run", "t1", "--all", "--client", "claude", "--json", "--", SKIP, env=env, process=True)
    assert r.returncode == 0, r
    # the coordinator's steps with this process's HOME: the approval's signing key lives there, where the
    # contract checker (fixtures/hints.py, in this process) verifies the approval `complete` needs
    owner = {**{k: v for k, v in owner.items() if k != "XDG_STATE_HOME"}, "HOME": os.environ["HOME"]}
    if "XDG_STATE_HOME" in os.environ:
        owner["XDG_STATE_HOME"] = os.environ["XDG_STATE_HOME"]
    share_records_key(Path(owner.get("XDG_STATE_HOME") or Path(os.environ["HOME"]) / ".local" / "state"), task.env["XDG_STATE_HOME"])  # issue 31
    for args in (("merge", "t1", "--all"), ("approve", "t1", "--changes"), ("complete", "t1"), ("cleanup", "t1")):
        step = spark(task.repo, *args, "--json", env=owner, input="t1\n")
        assert step.returncode == 0, (args, step.stdout)
    assert {"a.txt", "b.txt"} <= set(git(task.repo, "ls-tree", "--name-only", "main").split())
    assert not (task.base / "repo.tasks/t1/code").exists()


def _agent_processes(worktree: Path) -> list[int]:
    """Processes whose environment names the agent's worktree (SPARK_WORKTREE): its client and what
    the client started (this test's only: other tests' agents have other worktrees)."""
    out = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"SPARK_WORKTREE={worktree}".encode() in env.read_bytes().split(b"\0"):
                out.append(int(env.parent.name))
        except OSError:
            continue
    return out


def test_ctrl_c_stops_the_client_it_started(task: AgentTask) -> None:
    import signal

    marker = task.worktree("a") / "started"
    script = Script([bash(f"touch {marker} && sleep 300"), Say(json.dumps(OUTPUT))])
    with ModelServer(Anthropic(), script) as srv:
        env = {**client_env(task, srv.url), "SPARK_SESSION_ID": "owner"}

        p = subprocess.Popen(spark_argv("agent", "run", "t1", "a", "--client", "claude", "--json", "--", SKIP), cwd=task.repo, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not marker.exists():  # the client is in its tool call: the sleep
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.05)
        assert _agent_processes(task.worktree("a"))
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=60)
    assert p.returncode == 130, p.returncode
    assert _agent_processes(task.worktree("a")) == []  # the client, its shell and the sleep: all gone
    assert not (task.base / "repo.tasks/t1/agents/a/run.json").exists()
    # told as it is: interrupted (the client may well have exited 0 on its own Ctrl-C)
    trail = json.loads((task.base / "repo.tasks/t1/audit-trail.json").read_text())
    [run] = [e for e in trail["events"] if e.get("kind") == "agent_run"]
    assert run["outcome"] == "interrupted" and run["ended"] == "interrupted", run
    owner = {**task.env, "SPARK_SESSION_ID": "owner"}
    assert "claude interrupted" in spark(task.repo, "status", "t1", env=owner).stdout


def test_the_brief_and_the_session_start_carry_the_same_facts(task: AgentTask) -> None:
    """One function builds both (clients/checkpoint.py agent_lines): who the agent is, its worktree and
    branch, its goal from task.md, how it commits and reports."""
    md = task.base / "repo.tasks/t1/task.md"
    md.write_text("# t1\n\n## Objective\n\n> add sub() to calc\n")
    owner = {**task.env, "SPARK_SESSION_ID": "owner"}
    brief = json.loads(spark(task.repo, "brief", "t1", "--agent", "a", "--json", env=owner).stdout)["data"]
    ev = {"session_id": "c-1", "cwd": str(task.worktree("a")), "hook_event_name": "SessionStart", "source": "startup"}
    r = spark(task.worktree("a"), "hook", "session-start", input=json.dumps(ev), env={**task.env, "SPARK_SESSION_ID": "agent:t1:a"}, process=True)
    assert r.stdout.strip().splitlines() == brief["instructions"], (r.stdout, brief["instructions"])
    assert "- your goal (task.md): add sub() to calc" in brief["instructions"]
    assert brief["task"]["goal"] == "add sub() to calc"


def test_all_in_a_state_that_asks_for_no_agent_is_refused_and_nothing_starts(task: AgentTask) -> None:
    cfg = task.repo / ".spark-git.toml"
    cfg.write_text(cfg.read_text().replace('protocol = "light"', 'protocol = "full"'))  # t1 is in INIT: no agent's turn
    git(task.repo, "commit", "-q", "-am", "full protocol", env=task.env)  # the config in effect is the committed one
    r = spark(task.repo, "agent", "run", "t1", "--all", "--client", "claude", "--json", env={**task.env, "SPARK_SESSION_ID": "owner"})
    out = json.loads(r.stdout)
    assert r.returncode == 3 and "asks no agent" in out["summary"] and out["next"] == ["spark-git status t1"], out
    assert not list((task.base / "repo.tasks/t1/agents").glob("*/runs"))
