"""Gates: command gates (failure, timeout and daemons killed, missing command, no gate, pytest counts),
the registry of gate kinds, the evidence entry."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest
from fixtures.repo import git, make_repo, spark_argv, write

from spark_git.core.errors import Blocked
from spark_git.core.git import Git
from spark_git.gates import attribution, evidence
from spark_git.gates import command as gates
from spark_git.gates.registry import GATES
from tests.mergekit import PY, Task, config
from tests.prockit import daemon_gate, read_fifo, running, wait_gone, with_marker


def test_failing_gate_keeps_branch_and_logs_output(tmp_path: Path) -> None:
    gate = [PY, "-c", "import sys; print('compiling...'); print('ERROR: 2 tests broke', file=sys.stderr); sys.exit(4)"]
    t = Task(tmp_path, ["a1"], config(build=gate))
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    old = t.head()
    r = t.merge("a1")
    assert r.returncode == 1, r
    assert t.head() == old and git(t.wt(), "rev-parse", "HEAD") == old
    log = Path(r.json["data"]["log_path"])
    assert log.parent == t.root / "logs" and log.name.endswith("-build.log")
    text = log.read_text()
    assert "compiling..." in text and "ERROR: 2 tests broke" in text
    assert r.json["data"]["exit_code"] == 4
    bv = t.audit()["build_verifications"][-1]
    assert bv["result"] == "failed" and bv["exit_code"] == 4 and bv["log_path"] == str(log)
    assert "last_merge_sha" not in t.task_json()["agents"]["a1"] or t.task_json()["agents"]["a1"]["last_merge_sha"] is None


@pytest.mark.usefixtures("unboxed")
def test_gate_past_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    # The timeout is wall-clock: under load it can fire before the gate has started its child. Such a
    # run proves less, so it is repeated with a longer timeout; whatever a run got to, nothing of it
    # may be left running when merge returns (spark-git reaps the group before it answers).
    marker = f"spark-gate-child-{uuid.uuid4().hex}"
    gate = f"sh -c 'sleep 300; :' {marker} & echo started child $!; wait"
    for timeout in (1, 4, 16, 64):
        t = Task(tmp_path / f"timeout-{timeout}", ["a1"], config(build=gate, timeout=timeout))
        t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
        old = t.head()
        r = t.merge("a1", process=True)  # gates killed: a real spark-git process
        assert r.returncode == 1, r
        assert r.json["data"]["timed_out"] is True and "timed out" in r.json["summary"]
        assert t.head() == old
        assert with_marker(marker) == [], "gate child still running"
        log = Path(r.json["data"]["log_path"]).read_text()
        output = log.split("\n", 2)[2]  # after the two header lines, which quote the command
        if "started child" in output:
            assert not running(int(output.split("started child ")[1].split()[0]))
            return
    raise AssertionError("the gate never got to start its child, even with a 64 s timeout")


@pytest.mark.usefixtures("unboxed")
def test_gate_that_daemonizes_leaves_nothing_running(tmp_path: Path) -> None:
    # `setsid` takes the daemon out of the gate's process group; spark-git, its subreaper, still kills it.
    fifo, marker = tmp_path / "pids.fifo", f"spark-gate-daemon-{uuid.uuid4().hex}"
    os.mkfifo(fifo)
    t = Task(tmp_path, ["a1"], config(build=daemon_gate(fifo, marker)))
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    r = t.merge("a1", process=True)  # spark-git is the subreaper: a real process
    assert r.returncode == 0, r
    daemon, child = (int(p) for p in Path(f"{fifo}.pids").read_text().split())
    assert with_marker(marker) == [] and not running(daemon) and not running(child)


def test_missing_gate_command_is_a_clear_fail(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=["no-such-gate-command-xyz", "--check"]))
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    old = t.head()
    r = t.merge("a1")
    assert r.returncode == 1, r
    assert "cannot run 'no-such-gate-command-xyz'" in r.json["summary"] and r.json["data"]["log_path"]
    assert t.head() == old
    t2 = Task(tmp_path / "shell", ["a1"], config(build="no-such-gate-command-xyz"))
    t2.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    r = t2.merge("a1")
    assert r.returncode == 1 and r.json["data"]["exit_code"] == 127, r


def test_no_gate_configured_merges_and_records_that_none_ran(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config())
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    r = t.merge("a1")
    assert r.returncode == 0, r
    assert r.json["data"]["gate"]["ran"] is False and r.json["data"]["gate"]["command"] is None
    assert t.audit()["build_verifications"][-1]["ran"] is False


def test_pytest_gate_records_test_counts(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=[PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "checks"]),
             files={"checks/test_x.py": "def test_a():\n    pass\n\ndef test_b():\n    pass\n", "README.md": "r\n", ".gitignore": "__pycache__/\n"})
    t.commit("a1", {"checks/test_y.py": "import pytest\n\n@pytest.mark.skip(reason='demo')\ndef test_c():\n    pass\n"}, "[a1] more checks")
    r = t.merge("a1")
    assert r.returncode == 0, r
    assert r.json["data"]["gate"]["tests"] == {"passed": 2, "skipped": 1}
    assert t.audit()["build_verifications"][-1]["tests"] == {"passed": 2, "skipped": 1}


def test_pytest_summary_parsing() -> None:
    out = "....F\n=========== 3 passed, 1 failed, 2 errors, 1 skipped, 5 warnings in 0.12s ===========\n"
    assert gates.pytest_counts(out) == {"passed": 3, "failed": 1, "errors": 2, "skipped": 1, "warnings": 5}
    assert gates.pytest_counts("4 passed in 0.01s\n") == {"passed": 4}
    assert gates.pytest_counts("no summary here\n") is None
    assert gates.is_pytest("python -m pytest -q") and gates.is_pytest(["/usr/bin/pytest"]) and not gates.is_pytest("make test")


def test_stamp_message_adds_prefix_and_trailers_once() -> None:
    assert attribution.stamp_message("fix bug\n", "a1", "t") == "[a1] fix bug\n\nSpark-Agent: a1\nSpark-Task: t\n"
    body = "fix bug\n\nlong text\n\nSigned-off-by: X <x@y>\n"
    assert attribution.stamp_message(body, "a1", "t") == "[a1] fix bug\n\nlong text\n\nSigned-off-by: X <x@y>\nSpark-Agent: a1\nSpark-Task: t\n"
    stamped = attribution.stamp_message("fix bug\n", "a1", "t")
    assert attribution.stamp_message(stamped, "a1", "t") == stamped


def test_gate_that_leaves_files_is_refused_until_they_are_ignored(tmp_path: Path) -> None:
    # pytest writes __pycache__ next to the tests it imports: untracked files the next merge would trip on
    t = Task(tmp_path, ["a1"], config(build=[PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "checks"]),
             files={"checks/test_x.py": "def test_a():\n    pass\n", "README.md": "r\n"})
    base = t.head()
    t.commit("a1", {"checks/test_y.py": "def test_b():\n    pass\n"}, "[a1] more checks")
    r = t.merge("a1")
    assert r.returncode == 1 and r.json["status"] == "FAIL", r
    assert r.json["summary"] == f"the build gate left changes in {t.root.parent / '.gates' / 't1' / 'build'}; nothing was merged"  # its clean checkout
    assert "?? checks/__pycache__/test_x.cpython" in " ".join(r.json["data"]["files"])
    assert ".gitignore" in r.json["data"]["hint"]
    assert t.head() == base
    t.commit("a1", {".gitignore": "__pycache__/\n"}, "[a1] ignore bytecode")
    r = t.merge("a1")
    assert r.returncode == 0 and len(r.json["data"]["landed"]) == 2, r


@pytest.mark.usefixtures("unboxed")
def test_sigkill_of_spark_git_mid_gate_leaves_nothing_running(tmp_path: Path) -> None:
    # The gate starts a grandchild and tells us its pid through a FIFO; then spark-git is SIGKILLed.
    fifo = tmp_path / "pid.fifo"
    os.mkfifo(fifo)
    gate = f"sleep 300 & echo $! > {fifo}; wait"
    t = Task(tmp_path, ["a1"], config(build=gate, timeout=600))
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    old = t.head()
    env = dict(os.environ, SPARK_SESSION_ID="s1")
    proc = subprocess.Popen(spark_argv("merge", "t1", "--agent", "a1", "--json"), cwd=t.repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        grandchild = int(read_fifo(fifo))  # the gate is running once it writes
    except AssertionError:
        proc.kill()
        raise AssertionError(proc.communicate(timeout=60)) from None
    proc.kill()
    proc.communicate(timeout=60)
    # The grandchild is not the gate's first process: PDEATHSIG misses it, the watchdog must not.
    assert wait_gone(grandchild), f"gate grandchild {grandchild} outlived the killed spark-git"
    assert t.head() == old
    d = t.spark("--json", "doctor")
    assert d.returncode == 0 and d.json["data"]["broken"] == 0, d


def test_registry_builds_each_gate_kind(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "r\n"})
    wt, head = Git(repo), git(repo, "rev-parse", "HEAD")
    assert set(GATES) == {"clean", "attribution"}  # the command gates are configured commands, not kinds
    assert GATES["clean"](what="the task worktree").check(wt, "t1") is None
    write(repo / "stray.txt", "x\n")
    with pytest.raises(Blocked, match=r"^the task worktree is not clean: 1 modified"):
        GATES["clean"](what="the task worktree").check(wt, "t1")
    messages = {head: "[a1] fine\n", "b" * 40: "no prefix\n"}
    assert GATES["attribution"](agent="a1", branch="b1", messages=messages, mode="add").check(wt, "t1") is None
    with pytest.raises(Blocked, match=r"^1 commit\(s\) on b1 are not attributed to a1$") as e:
        GATES["attribution"](agent="a1", branch="b1", messages=messages).check(wt, "t1")
    assert e.value.details == {"commits": ["bbbbbbbbbbbb no prefix"]}
    ev = gates.run("build", [PY, "-c", "print('ok')"], repo, tmp_path / "logs", 60)
    assert ev is not None and ev.passed and ev.exit_code == 0 and ev.commit == head and ev.worktree == str(repo)
    e2 = evidence.entry(ev, "s1", agent="a1")
    assert list(e2) == ["gate", "command", "result", "ran", "exit_code", "timed_out", "duration_s", "tree", "commit",
                        "log_path", "tests", "session_id", "agent"]
    assert "timed_out" not in evidence.entry(ev, "s1", omit=("timed_out",), by="advance")


def test_a_new_gate_kind_is_one_class_plus_one_registry_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The merge asks the registry for its pre-merge checks: registering a kind is all it takes for
    every merge to run it (here: no file may be named `forbidden.txt`), and its refusal changes nothing."""
    from dataclasses import dataclass
    from typing import ClassVar

    from spark_git.gates.base import Gate, MergeSubject

    @dataclass(frozen=True)
    class NoForbiddenFile:
        name: ClassVar[str] = "no-forbidden-file"

        @classmethod
        def for_merge(cls, subject: MergeSubject) -> list[tuple[Gate, Git]]:
            return [(cls(), subject.agent_wt)]

        def check(self, git: Git, task: str | None) -> None:
            if (git.cwd / "forbidden.txt").exists():
                raise Blocked("forbidden.txt must not land", task=task)

    monkeypatch.setitem(GATES, NoForbiddenFile.name, NoForbiddenFile)
    t = Task(tmp_path, ["a1"], config())
    t.commit("a1", {"forbidden.txt": "x\n"}, "[a1] add it")
    before = (t.head(), t.head("a1"))
    r = t.merge("a1", process=False)  # the registered class lives in this process
    assert r.returncode == 3 and r.json["summary"] == "forbidden.txt must not land", r
    assert (t.head(), t.head("a1")) == before
    monkeypatch.delitem(GATES, NoForbiddenFile.name)
    assert t.merge("a1").returncode == 0
