"""Bad input to commands (issue 12, "Bad input"): a clear refusal with its exit code, nothing changed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from fixtures.repo import commit, git, snapshot, spark, spark_argv

from tests.mergekit import PY, Task, config

ENV = {"SPARK_SESSION_ID": "s1"}


def run(repo: Path, *args: str):
    return spark(repo, *args, env={**os.environ, **ENV})


def test_archive_restore_to_a_full_ref_is_refused(repo: Path) -> None:
    assert run(repo, "start", "t1", "--agents", "a1").returncode == 0
    commit(repo.parent / "repo.tasks/t1/agents/a1/code", {"x.txt": "x\n"}, "[a1] x")
    assert run(repo, "abandon", "t1", "--why", "test").returncode == 0
    ref = run(repo, "archive", "list", "--json").json["data"]["entries"][0]["ref"]
    before = snapshot(repo)
    for bad in ("refs/tags/v9", "refs/heads/v9", "refs/spark/x"):
        r = run(repo, "archive", "restore", ref, "--branch", bad, "--json")
        assert r.returncode == 2 and "full ref name" in r.json["summary"], r
    assert snapshot(repo) == before and git(repo, "tag", "--list") == ""


def _state(repo: Path) -> dict[str, object]:
    root = repo.parent / "repo.tasks" / "t1"
    return {**snapshot(repo), "task.json": (root / "task.json").read_bytes()}


@pytest.mark.parametrize("cmd", [["abandon", "t1", "--why", "x"], ["cleanup", "t1", "--abandon"]])
def test_locked_worktree_is_not_removed_without_force(repo: Path, cmd: list[str]) -> None:
    assert run(repo, "start", "t1", "--agents", "a1").returncode == 0
    wt = repo.parent / "repo.tasks/t1/agents/a1/code"
    git(repo, "worktree", "lock", "--reason", "on a removable disk", str(wt))
    before = _state(repo)
    r = run(repo, *cmd, "--json")
    assert r.returncode == 3 and "git worktree lock" in r.json["summary"], r
    assert any("on a removable disk" in x for x in r.json["data"]["locked"]), r
    assert _state(repo) == before and wt.is_dir()
    r = run(repo, *cmd, "--force", "--json")
    assert r.returncode == 0, r
    assert not wt.exists()
    trail = json.loads((repo.parent / "repo.tasks/t1/audit-trail.json").read_text())
    assert "on a removable disk" in json.dumps(trail)


def test_doctor_without_proc_reports_git_locks_and_keeps_them(repo: Path, cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from spark_git.ops.ending.doctor import repo as doctor_repo

    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    monkeypatch.setattr(doctor_repo, "PROC", tmp_path / "no-proc")
    r = cli("doctor", "--fix", "--json")
    assert lock.exists(), r
    kinds = {f["kind"]: f for f in r.json["data"]["findings"]}
    assert "git-lock-unknown" in kinds and not kinds["git-lock-unknown"]["fixed"], r
    assert "git-lock-stale" not in kinds


@pytest.mark.usefixtures("unboxed")
def test_ctrl_c_under_json_prints_one_envelope(tmp_path: Path) -> None:
    fifo = tmp_path / "gate-started"
    os.mkfifo(fifo)
    # The gate says it runs (the open blocks until the test reads), then waits to be killed.
    gate = [PY, "-c", f"open({str(fifo)!r}, 'w').write('go'); import time; time.sleep(600)"]
    t = Task(tmp_path, ["a1"], config(build=gate))
    work = t.commit("a1", {"a.txt": "a\n"}, "[a1] a")
    task_head = t.head()
    env = {**os.environ, **ENV}
    p = subprocess.Popen(spark_argv("--json", "merge", "t1", "--agent", "a1"), cwd=t.repo, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert fifo.read_text() == "go"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (out, err)
    env_ = json.loads(out)  # exactly one JSON document
    assert env_["status"] == "FAIL" and "interrupted" in env_["summary"] and env_["next"] == ["spark-git doctor"], out
    assert t.head() == task_head  # nothing landed; the agent's commit is still reachable
    assert git(t.repo, "for-each-ref", f"--contains={work}", "--format=%(refname)") != ""


@pytest.mark.parametrize("json_mode", [True, False])
def test_ctrl_c_before_the_command_runs_still_exits_130(tmp_path: Path, json_mode: bool) -> None:
    """Found by scripts/chaos: Ctrl-C while the command's module was loading hit click's own handler
    ("Aborted!", exit 1, no envelope). The process interrupts itself at exactly that point."""
    script = ("import os, signal, sys\n"
              "import spark_git.cli.root as root\n"
              "real = root.load\n"
              "def load(name):\n"
              "    os.kill(os.getpid(), signal.SIGINT)\n"
              "    return real(name)\n"
              "root.load = load\n"
              "from spark_git.__main__ import main\n"
              f"sys.exit(main({['--json', 'status'] if json_mode else ['status']!r}))\n")
    r = subprocess.run([PY, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 130, r
    if json_mode:
        env_ = json.loads(r.stdout)
        assert env_["status"] == "FAIL" and env_["next"] == ["spark-git doctor"] and "interrupted" in env_["data"]["error"], r.stdout
    else:
        assert r.stdout == "" and "interrupted (Ctrl-C)" in r.stderr and "Aborted" not in r.stderr, r
