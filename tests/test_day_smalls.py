"""The smaller defects of issue 24's day (item 9 and 10): each a test that failed before its fix."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures.repo import Run, commit, git, make_repo, spark, spark_argv
from fixtures.servers import bare, machine, seed

from spark_git.core.errors import BROKEN_PIPE, USAGE
from spark_git.core.layout import Layout
from spark_git.state.backends import open_store
from tests.mergekit import Task, config
from tests.ptyutil import answer_on_pty
from tests.queuekit import Queue
from tests.test_evidence import REV, at_requirements, output, refused_naming, write
from tests.test_protocol_approve import _in_synthesis


@pytest.mark.parametrize("args", [["status", "--all"], ["archive", "list"]])
def test_rich_output_into_a_closed_pipe_exits_141(repo: Path, cli: Callable[..., Run], args: list[str]) -> None:
    """`spark-git status --all | head` with the reader gone before the first line: 141, as for SIGPIPE
    (rich's console turned the broken pipe into exit 1)."""
    assert cli("start", "t1", "--agents", "a").returncode == 0
    r, w = os.pipe()
    os.close(r)  # the reader is gone before anything is written
    p = subprocess.run(spark_argv(*args), cwd=repo, stdout=w, stderr=subprocess.PIPE, text=True, timeout=120)
    os.close(w)
    assert p.returncode == BROKEN_PIPE and p.stderr == "", p


def test_directory_option_after_the_command(repo: Path, cli: Callable[..., Run], tmp_path: Path) -> None:
    """`spark-git status -C DIR` was rejected (no such option): -C is accepted anywhere, like --json."""
    assert cli("start", "t1", "--agents", "a").returncode == 0
    r = cli("--json", "status", "-C", str(repo), cwd=tmp_path)
    assert r.returncode == 0 and [t["task"] for t in json.loads(r.stdout)["data"]["tasks"]] == ["t1"], r


def test_task_name_of_a_tasks_root_file_is_refused(repo: Path, cli: Callable[..., Run]) -> None:
    """A task named `ports.json` collided with `<tasks_root>/ports.json` (exit 70 and a traceback once a
    port was allocated): now a bad name (exit 2, with a next), nothing created."""
    assert cli("start", "t1", "--agents", "a").returncode == 0
    r = cli("--json", "start", "ports.json", "--agents", "a")
    env = json.loads(r.stdout)
    assert r.returncode == USAGE and "reserved" in env["summary"] and env["next"], r
    assert not (repo.parent / "repo.tasks" / "ports.json").is_dir()
    assert cli("start", "t2", "--agents", "a").returncode == 0


def test_wrong_session_is_offered_the_lock_break(repo: Path, cli: Callable[..., Run]) -> None:
    """Another session's task: the refusal's next was empty; now the human's takeover, pasteable."""
    assert cli("start", "t1", "--agents", "a", session="s1").returncode == 0
    r = cli("--json", "abandon", "t1", "--why", "x", session="s2")
    env = json.loads(r.stdout)
    assert r.returncode == 3 and env["next"] == ["spark-git lock break t1 --why 'taking over from session s1'"], r
    r = cli("--json", "abandon", "t1", "--why", "x", session=None)
    assert json.loads(r.stdout)["next"] == ["export SPARK_SESSION_ID=s1", "spark-git lock break t1 --why 'taking over from session s1'"], r


LIGHT = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'


def test_approving_twice_records_nothing(tmp_path: Path) -> None:
    """The second `approve --changes` of the same head appended a duplicate record silently."""
    repo = make_repo(tmp_path / "r", config=LIGHT)
    assert spark(repo, "start", "t1", "--agents", "", env=_session()).returncode == 0
    assert spark(repo, "approve", "t1", "--changes", env=_session()).returncode == 0
    before = (repo.parent / "r.tasks" / "t1" / "task.json").read_text()
    r = spark(repo, "--json", "approve", "t1", "--changes", env=_session())
    env = json.loads(r.stdout)
    assert r.returncode == 3 and "already approved" in env["summary"] and env["next"] == ["spark-git complete t1"], r
    assert (repo.parent / "r.tasks" / "t1" / "task.json").read_text() == before


def _session(name: str = "s1") -> dict[str, str]:
    return {**os.environ, "SPARK_SESSION_ID": name}


def test_abandoning_a_queued_task_removes_its_queue_entry(tmp_path: Path) -> None:
    """The entry stayed behind (`queue` showed `t0 … (None)`); an ended task's entry can never land."""
    q = Queue(tmp_path, 2)
    with open_store(Layout.discover(q.repo)).mutex("queue-drain"):  # nobody drains while the test looks
        assert q.spark("t0", "complete", "t0", "--enqueue").returncode == 0
        assert q.spark("t1", "complete", "t1", "--enqueue").returncode == 0
        assert len(q.queue_refs()) == 2
        r = q.spark("t0", "abandon", "t0", "--why", "not needed")
        assert r.returncode == 0, r
        assert [ref.rsplit("-", 1)[1] for ref in q.queue_refs()] == ["t1"]
    assert "t0" not in q.spark("t1", "queue").stdout


def test_build_caches_are_not_archived_as_work(tmp_path: Path) -> None:
    """`.pytest_cache` (ignored or not), `__pycache__` and `[cleanup] caches` went onto archive refs at
    abandon; they are removed with the worktree, and real work beside them is still archived."""
    repo = make_repo(tmp_path / "r", {"README.md": "x\n", ".gitignore": ".pytest_cache/\n*.log\n"},
                     config='protocol = "light"\n[cleanup]\ncaches = ["*.egg-info"]\n')
    assert spark(repo, "start", "t1", "--agents", "a", env=_session()).returncode == 0
    wt = repo.parent / "r.tasks" / "t1" / "agents" / "a" / "code"
    for rel in (".pytest_cache/v/cache/lastfailed", "pkg/__pycache__/m.cpython-311.pyc", "pkg.egg-info/PKG-INFO"):
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        (wt / rel).write_text("cache\n")
    (wt / "notes.log").write_text("my notes\n")  # ignored, not a cache: kept
    r = spark(repo, "--json", "abandon", "t1", "--why", "done", env=_session())
    assert r.returncode == 0, r
    archived = json.loads(r.stdout)["data"]["archived"]
    files = [f for a in archived for f in a.get("files") or []]
    assert files == ["notes.log"] and not wt.exists(), archived


def test_light_protocol_shows_no_protocol_noise(tmp_path: Path) -> None:
    """Under `light` every task showed "a never reported" as a problem and suggested `advance`."""
    repo = make_repo(tmp_path / "r", config='protocol = "light"\n')
    assert spark(repo, "start", "t1", "--agents", "a", env=_session()).returncode == 0
    for args in (["status"], ["status", "t1"]):
        r = spark(repo, *args, env=_session())
        assert r.returncode == 0 and "never reported" not in r.stdout and "advance" not in r.stdout, r
    view = json.loads(spark(repo, "--json", "status", "t1", env=_session()).stdout)["data"]["tasks"][0]
    assert view["agents"][0]["flags"] == [] and view["next_states"] == [], view


def test_status_all_tells_cleaned_up_from_abandoned(tmp_path: Path) -> None:
    """`status --all` showed both as ENDED."""
    q = Queue(tmp_path, 2)
    assert q.spark("t0", "complete", "t0").returncode == 0
    assert q.spark("t0", "cleanup", "t0").returncode == 0
    assert q.spark("t1", "abandon", "t1", "--why", "not needed").returncode == 0
    out = q.spark("t0", "status", "--all").stdout
    assert re.search(r"^t0\s+CLEANUP", out, re.M) and re.search(r"^t1\s+ABANDONED", out, re.M), out
    assert "t0  cleaned up" in q.spark("t0", "status", "t0").stdout
    views = json.loads(q.spark("t0", "--json", "status", "--all").stdout)["data"]["tasks"]
    assert {v["task"]: (v["state"], v["final_state"]) for v in views} == {"t0": ("ENDED", "CLEANUP"), "t1": ("ENDED", "ABANDONED")}


def test_archive_restore_does_not_suggest_switching_the_main_worktree(tmp_path: Path) -> None:
    """The hint was `git switch <branch>`, which takes the main worktree off main; now a worktree of its own,
    and the hint, pasted, works."""
    repo = make_repo(tmp_path / "r", config='protocol = "light"\n')
    assert spark(repo, "start", "t1", "--agents", "", env=_session()).returncode == 0
    commit(repo.parent / "r.tasks" / "t1" / "code", {"f.txt": "work\n"}, "work")
    assert spark(repo, "abandon", "t1", "--why", "later", env=_session()).returncode == 0
    ref = json.loads(spark(repo, "--json", "archive", "list", env=_session()).stdout)["data"]["entries"][0]["ref"]
    env = json.loads(spark(repo, "--json", "archive", "restore", ref, "--branch", "back/t1", env=_session()).stdout)
    assert env["next"] == [f"git worktree add {tmp_path / 'r-back-t1'} back/t1"], env
    subprocess.run(shlex.split(env["next"][0]), cwd=repo, check=True, capture_output=True)
    assert (tmp_path / "r-back-t1" / "f.txt").read_text() == "work\n"
    assert git(repo, "branch", "--show-current").strip() == "main"


def test_gate_test_counts_are_words_not_a_dict(tmp_path: Path) -> None:
    """`merge` printed `tests {'passed': 1}` after a pytest gate."""
    gate = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "test_ok.py"]
    t = Task(tmp_path, ["a"], config(build=gate), files={"README.md": "x\n", ".gitignore": "__pycache__/\n"})
    t.commit("a", {"test_ok.py": "def test_ok():\n    assert True\n"}, "[a] a test")
    r = t.spark("merge", "t1", "--agent", "a")
    assert r.returncode == 0 and "tests: 1 passed" in r.stdout and "{" not in r.stdout, r


def test_merge_all_dirty_refusal_lists_the_files_and_no_gate_output(tmp_path: Path) -> None:
    """`merge --all` refused a dirty agent without the file list, said "the gate printed nothing" though no
    gate ran, and its next re-ran the same refused merge."""
    t = Task(tmp_path, ["a", "b"], config(build="true"))
    (t.wt("a") / "new.txt").write_text("x\n")
    t.commit("b", {"b.txt": "b\n"}, "[b] b")
    r = t.spark("merge", "t1", "--all")
    assert r.returncode == 3 and "?? new.txt" in r.stdout and "printed nothing" not in r.stdout, r
    env = json.loads(t.spark("--json", "merge", "t1", "--agent", "a").stdout)
    assert env["next"] == [f"git -C {t.wt('a')} status --short"], env


def test_remote_start_of_another_machines_task_names_its_owner(tmp_path: Path) -> None:
    """Machine 2 starting a task machine 1 owns was told the state is corrupt ("the task worktree is
    recorded as <machine-1 path>"); it is told who owns it, with the takeover as next."""
    url = f"file://{bare(tmp_path)}"
    seed(tmp_path, url, {"README.md": "# shared\n"}, config=LIGHT)
    a, b = (machine(tmp_path, url, f"m{i}") for i in range(2))
    for m in (a, b):  # no machine name: both clones are this host, as on the day
        (m / ".git" / "spark" / "remote.toml").write_text('[sync]\nremote = "origin"\n')
    assert spark(a, "start", "t1", "--agents", "x", env=_session("sa")).returncode == 0
    r = spark(b, "--json", "start", "t1", "--agents", "x", env=_session("sb"))
    env = json.loads(r.stdout)
    assert r.returncode == 3 and "recorded as" not in env["summary"] and "owned by session sa" in env["summary"], r
    assert env["next"] == ["spark-git lock break t1 --why 'taking over from session sa'"], env
    r = spark(b, "--json", "merge", "t1", "--agent", "x", env=_session("sb"))
    assert r.returncode == 3 and "owned by session sa" in json.loads(r.stdout)["summary"], r
    assert not (tmp_path / "m1.tasks" / "t1").exists()


def test_output_not_meeting_the_definition_of_done_is_not_complete(tmp_path: Path) -> None:
    """A COMPLETE report whose 004 evidence says `"gates": {"meets_definition_of_done": false}` counted."""
    p = at_requirements(tmp_path)
    bad = {**output("OK"), "gates": {"meets_definition_of_done": False}}
    p.report(REV, "COMPLETE", "--evidence", write(p, "bad.json", bad))
    refused_naming(p, "gates.meets_definition_of_done is false")
    p.report(REV, "COMPLETE", "--evidence", write(p, "good.json", output("OK")))
    p.go("SYNTHESIS")
    assert p.state() == "SYNTHESIS"


def test_plan_approval_screen_shows_the_plan(tmp_path: Path) -> None:
    """The full protocol's plan approval asked for the task name without showing task.md."""
    p = _in_synthesis(tmp_path)
    plan = (p.repo.parent / "repo.tasks" / p.task / "task.md").read_text()
    line = next(ln for ln in plan.splitlines() if ln.startswith("#"))
    rc, out = answer_on_pty(p.repo, ["approve", p.task, "--plan"], b"t1\n")
    assert rc == 0 and line in out and out.index(line) < out.index("Approve the plan"), out


def test_status_row_shows_an_eviction_from_the_queue(tmp_path: Path) -> None:
    """The one-line-per-task `status` did not show that the queue had given a task back."""
    q = Queue(tmp_path, 1, culprit=0)
    assert q.spark("t0", "complete", "t0").returncode != 0
    row = next(ln for ln in q.spark("t0", "status").stdout.splitlines() if ln.startswith("t0 "))
    assert "evicted from the queue (failed)" in row, row


def test_status_names_tasks_that_would_conflict_when_both_land(tmp_path: Path) -> None:
    """The radar looked only inside one task: two tasks changing the same lines went unflagged."""
    repo = make_repo(tmp_path / "r", {"f.txt": "base\n", "g.txt": "g\n"}, config='protocol = "light"\n')
    for t, agents in (("t1", "a"), ("t2", ""), ("t3", "")):
        assert spark(repo, "start", t, "--agents", agents, env=_session()).returncode == 0
    root = repo.parent / "r.tasks"
    commit(root / "t1" / "agents" / "a" / "code", {"f.txt": "one\n"}, "[a] one")  # unmerged agent work counts
    commit(root / "t2" / "code", {"f.txt": "two\n"}, "two")
    commit(root / "t3" / "code", {"g.txt": "three\n"}, "three")  # another file: no conflict
    r = spark(repo, "status", env=_session())
    assert "tasks t1 and t2 would conflict when both land: f.txt" in r.stdout and "t3 would" not in r.stdout, r
    d = json.loads(spark(repo, "--json", "status", env=_session()).stdout)["data"]
    assert d["cross_conflicts"] == [{"task": "t1", "other": "t2", "files": ["f.txt"]}], d


@pytest.mark.parametrize(("args", "nxt"), [
    (["merge", "t1", "--agent", "zz"], ["spark-git status t1"]),  # unknown agent
    (["report", "t1", "--agent", "zz", "--status", "COMPLETE"], ["spark-git status t1"]),
    (["status", "Bad_Name"], ["spark-git status"]),  # bad names
])
def test_refusals_have_a_pasteable_next(repo: Path, cli: Callable[..., Run], args: list[str], nxt: list[str]) -> None:
    """These refusals had an empty `next`."""
    assert cli("start", "t1", "--agents", "a").returncode == 0
    r = cli("--json", *args)
    env = json.loads(r.stdout)
    assert r.returncode in (2, 3) and env["next"] == nxt, r


def test_no_terminal_refusal_has_the_humans_command_as_next(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", config='protocol = "light"\n')
    assert spark(repo, "start", "t1", "--agents", "", env=_session()).returncode == 0
    r = spark(repo, "--json", "approve", "t1", "--changes", env=_session())
    env = json.loads(r.stdout)
    assert r.returncode == 3 and "terminal" in env["summary"] and env["next"] == ["spark-git approve t1 --changes"], r


def test_a_config_error_has_a_pasteable_next(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", config='protocol = "lite"\n')
    r = spark(repo, "--json", "status", env=_session())
    env = json.loads(r.stdout)
    assert r.returncode == USAGE and env["next"] == ["spark-git schema config"], r
    assert spark(repo, "schema", "config").returncode == 0


def test_a_read_only_repository_is_a_clear_error(tmp_path: Path) -> None:
    """`start` in a read-only repository exited 70 with a traceback; now exit 2, the path named, nothing created.
    The read-only mount is bubblewrap's (the suite may run as root, whom file modes do not stop)."""
    if shutil.which("bwrap") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("bwrap is required in CI")
        pytest.skip("bwrap (bubblewrap) is not installed: no read-only mount without it")
    repo = make_repo(tmp_path / "r", config='protocol = "light"\n')
    before = git(repo, "for-each-ref")
    argv = ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(tmp_path), str(tmp_path), "--chdir", str(repo), *spark_argv("start", "t1", "--agents", "a")]
    p = subprocess.run(argv, capture_output=True, text=True, env=_session(), timeout=120)
    assert p.returncode == USAGE and "Read-only file system" in p.stderr and "Traceback" not in p.stderr, p
    assert git(repo, "for-each-ref") == before and not (tmp_path / "r.tasks").exists()
