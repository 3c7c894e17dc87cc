"""Worktree provisioning: ignored files copied into each new worktree (never through a symlink that
leaves the repo), setup commands with logs, a failure keeps the worktree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from fixtures.repo import git, make_repo, spark_argv, write

from tests.hookutil import run_cli
from tests.prockit import read_fifo, wait_gone, with_marker


@pytest.fixture
def cli_in():
    return run_cli


def _repo(tmp_path: Path, setup: str = "[]") -> Path:
    repo = make_repo(
        tmp_path / "repo",
        {
            "README.md": "# demo\n",
            ".gitignore": ".env\n*.local\nsecrets/\nscratch.txt\n",
            ".worktreeinclude": "# copied into new worktrees\n.env\n*.local\nsecrets/\n",
        },
        config=f"[worktree]\ninclude = [\"extra.cfg\"]\nsetup = {setup}\n[ports]\nstart = 45300\nend = 45399\n",
    )
    write(repo / ".gitignore", ".env\n*.local\nsecrets/\nscratch.txt\nextra.cfg\n.claude/settings.local.json\n")
    write(repo / ".claude" / "settings.local.json", '{"hooks": {}}\n')
    git(repo, "commit", "-qam", "ignore extra.cfg")
    write(repo / ".env", "API_KEY=abc\n")
    write(repo / "conf.local", "debug=1\n")
    write(repo / "extra.cfg", "from config\n")
    write(repo / "secrets" / "token", "t0k3n\n")
    write(repo / "scratch.txt", "ignored but not included\n")
    write(tmp_path / "outside" / "passwords", "root:hunter2\n")
    os.symlink(tmp_path / "outside" / "passwords", repo / "stolen.local")  # points out of the repo
    os.symlink(tmp_path / "outside", repo / "secrets" / "outdir")  # a directory out of the repo
    os.symlink("../.env", repo / "secrets" / "env-link")  # stays inside the repo
    return repo


def test_ignored_included_files_appear_in_every_new_worktree(tmp_path: Path, cli_in) -> None:
    repo = _repo(tmp_path)
    r = cli_in(repo, "start", "t1", "--agents", "a1,a2", "--json")
    assert r.returncode == 0, r
    root = tmp_path / "repo.tasks" / "t1"
    r2 = cli_in(repo, "agent", "add", "t1", "a3", "--why", "later", "--json")
    assert r2.returncode == 0, r2
    wts = [root / "code", root / "agents" / "a1" / "code", root / "agents" / "a2" / "code", root / "agents" / "a3" / "code"]
    for wt in wts:
        assert (wt / ".env").read_bytes() == b"API_KEY=abc\n"
        assert (wt / "conf.local").read_text() == "debug=1\n"
        assert (wt / "extra.cfg").read_text() == "from config\n"  # pattern from the config
        assert (wt / ".claude" / "settings.local.json").read_text() == '{"hooks": {}}\n'  # always, when ignored
        assert (wt / "secrets" / "token").read_text() == "t0k3n\n"
        assert not (wt / "scratch.txt").exists()  # ignored but not named
        assert not (wt / "stolen.local").exists() and not (wt / "stolen.local").is_symlink()
        assert not (wt / "secrets" / "outdir").exists() and not (wt / "secrets" / "outdir").is_symlink()
        assert os.readlink(wt / "secrets" / "env-link") == "../.env"  # inside the repo: kept as a link
        assert git(wt, "status", "--porcelain") == ""  # copies are ignored files: the tree stays clean
    reps = r.json["data"]["provisioning"] + r2.json["data"]["provisioning"]
    assert [p["worktree"] for p in reps] == [str(w) for w in wts]
    for p in reps:
        assert sorted(p["skipped_symlinks"]) == ["secrets/outdir", "stolen.local"]
        assert sorted(p["copied"]) == [".claude/settings.local.json", ".env", "conf.local", "extra.cfg", "secrets/env-link", "secrets/token"]


def test_failing_setup_keeps_the_worktree_and_a_log(tmp_path: Path, cli_in) -> None:
    setup = json.dumps(["printenv SPARK_TASK SPARK_AGENT SPARK_PORT > setup-env.out; env | grep -c '^GIT_DIR=' >> setup-env.out; true",
                        ["sh", "-c", "echo installing deps; echo broken >&2; exit 7"], "echo never"])
    repo = _repo(tmp_path, setup)
    r = cli_in(repo, "start", "t1", "--agents", "a1", "--json", env={"GIT_DIR": str(tmp_path / "elsewhere")})
    assert r.returncode == 1, r
    env = r.json
    assert env["status"] == "FAIL" and "setup failed" in env["summary"] and "worktree is kept" in env["summary"]
    root = tmp_path / "repo.tasks" / "t1"
    lock = json.loads((root / "task.json").read_text())
    assert lock["provisioning"] == "done" and lock["session_id"] == "s1"
    for rep, wt, agent in zip(env["data"]["provisioning"], [root / "code", root / "agents" / "a1" / "code"], ["", "a1"], strict=True):
        assert wt.is_dir() and git(wt, "rev-parse", "HEAD") == git(repo, "rev-parse", "main")
        failed = rep["failed"]
        assert failed["exit_code"] == 7 and failed["command"] == ["sh", "-c", "echo installing deps; echo broken >&2; exit 7"]
        log = Path(failed["log"])
        assert log.parent == root / "logs"
        assert "installing deps\nbroken\n" in log.read_text()
        assert failed["log"] in env["summary"]
        assert [s["exit_code"] for s in rep["setup"]] == [0, 7]  # stopped after the failure
        port = (wt / "setup-env.out").read_text().split("\n")
        assert port[0] == "t1" and port[1] == agent and 45300 <= int(port[2]) <= 45399 and port[3] == "0"
    assert env["next"] == [f"cd {root / 'code'}", "spark-git classify t1", "spark-git status t1"]  # the log is in the summary; next holds the loop's step


def test_no_setup_skips_commands_but_copies_files(tmp_path: Path, cli_in) -> None:
    repo = _repo(tmp_path, json.dumps(["touch ran-setup"]))
    r = cli_in(repo, "start", "t1", "--agents", "a1", "--no-setup", "--json")
    assert r.returncode == 0, r
    root = tmp_path / "repo.tasks" / "t1"
    assert (root / "code" / ".env").is_file() and not (root / "code" / "ran-setup").exists()
    assert all(p["setup_skipped"] and p["setup"] == [] for p in r.json["data"]["provisioning"])
    r = cli_in(repo, "agent", "add", "t1", "a2", "--why", "x", "--no-setup")
    assert r.returncode == 0 and not (root / "agents" / "a2" / "code" / "ran-setup").exists()
    r = cli_in(repo, "agent", "add", "t1", "a3", "--why", "x")
    assert r.returncode == 0 and (root / "agents" / "a3" / "code" / "ran-setup").exists()


def test_setup_command_dies_with_a_killed_start(tmp_path: Path) -> None:
    # The setup command's child is not its first process: only the watchdog (group kill) reaches it.
    fifo = tmp_path / "pid.fifo"
    os.mkfifo(fifo)
    repo = _repo(tmp_path, json.dumps([f"sleep 300 & echo $! > {fifo}; wait"]))
    start = subprocess.Popen(spark_argv("start", "t1", "--agents", "a1", "--json"), cwd=repo, env=dict(os.environ, SPARK_SESSION_ID="s1"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        child = int(read_fifo(fifo))  # setup is running once it writes
    except AssertionError:
        start.kill()
        raise AssertionError(start.communicate(timeout=60)) from None
    start.kill()
    start.communicate(timeout=60)
    assert wait_gone(child), f"setup child {child} outlived the killed start"


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["KILL", "TERM"])
def test_a_daemon_a_setup_command_started_dies_with_a_killed_start(tmp_path: Path, sig: signal.Signals) -> None:
    """`setsid` takes the daemon out of the setup's group, and spark-git (its subreaper) is gone: the
    watchdog finds it by the run's token in its environment. SIGTERM runs no cleanup either."""
    fifo, marker = tmp_path / "pids.fifo", f"spark-setup-daemon-{uuid.uuid4().hex}"
    os.mkfifo(fifo)
    repo = _repo(tmp_path, json.dumps([f"setsid sh -c 'sleep 300 & echo \"$$ $!\" > \"$1\"; wait' {marker} {fifo} & wait"]))
    start = subprocess.Popen(spark_argv("start", "t1", "--agents", "a1", "--json"), cwd=repo, env=dict(os.environ, SPARK_SESSION_ID="s1"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        daemon, child = (int(p) for p in read_fifo(fifo).split())  # the daemon is up once it writes
    except AssertionError:
        start.kill()
        raise AssertionError(start.communicate(timeout=60)) from None
    assert os.getsid(daemon) == daemon  # it really left the setup's session
    start.send_signal(sig)
    start.communicate(timeout=60)
    assert wait_gone(daemon) and wait_gone(child), f"the daemon {daemon} or its child {child} outlived the killed start"
    assert with_marker(marker) == []


def test_setup_past_the_timeout_is_killed_and_reported(tmp_path: Path, cli_in) -> None:
    marker = f"spark-setup-{uuid.uuid4().hex}"
    repo = _repo(tmp_path, json.dumps([f"sh -c 'sleep 300; :' {marker} & wait"]))
    with open(repo / ".spark-git.toml", "a") as f:
        f.write("[gates]\ntimeout_s = 1\n")
    git(repo, "commit", "-qam", "timeout")  # the committed config is the one read
    r = cli_in(repo, "start", "t1", "--agents", "a1", "--json")
    assert r.returncode == 1 and "timed out" in r.json["summary"], r
    failed = r.json["data"]["provisioning"][0]["failed"]
    assert failed["exit_code"] is None and "killed after 1s (gates.timeout_s)" in Path(failed["log"]).read_text()
    assert with_marker(marker) == []
