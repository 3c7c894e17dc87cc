"""Remote mode over a bare repository on file:// (fixtures/servers.py): clones play the machines.
A task started on one machine is held there for every other; an expired lease shows stale, `lock
break --why` takes it over and the old holder is refused with the reason; notes written at once
from 3 machines all reach the remote; two machines landing at once keep the remote base linear and
lose nothing; a writer SIGKILLed mid-push leaves the old or the new state; no remote = exit 3."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.repo import commit, git, spark
from fixtures.servers import bare, fetch_remote_ref, machine, remote_refs, seed

from spark_git.core.layout import Layout
from spark_git.state.backends import open_store
from spark_git.state.remote import RemoteStore

LIGHT = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'


@pytest.fixture(params=["refs", "branch"])
def where(request: pytest.FixtureRequest) -> str:
    """Where the remote keeps the state: its own refs, or (on a host taking branches only) one branch."""
    return str(request.param)


def _shared(tmp: Path, n: int, lease_s: float | None = None, config: str = LIGHT, where: str = "refs") -> list[Path]:
    url = f"file://{bare(tmp, branches_only=where == 'branch')}"
    seed(tmp, url, {"README.md": "# shared\n"}, config=config)
    branch = "spark/state" if where == "branch" else None
    return [machine(tmp, url, f"m{i}", lease_s=lease_s, state_branch=branch) for i in range(n)]


def _run(m: Path, session: str, *args: str, **kw: Any) -> Any:
    return spark(m, "--json", *args, env={**os.environ, "SPARK_SESSION_ID": session}, **kw)


def test_off_by_default_and_switched_per_clone(tmp_path: Path) -> None:
    repo = tmp_path / "plain"
    git(tmp_path, "init", "--quiet", "-b", "main", str(repo))
    assert not isinstance(open_store(Layout.discover(repo)), RemoteStore)
    a, = _shared(tmp_path, 1)
    assert isinstance(open_store(Layout.discover(a)), RemoteStore)
    r = spark(a, "--json", "remote", "disable")
    assert r.returncode == 0 and r.json["data"]["enabled"] is False, r
    assert not isinstance(open_store(Layout.discover(a)), RemoteStore)
    r = spark(a, "--json", "remote", "enable", "origin", "--machine", "laptop")
    assert r.returncode == 0 and r.json["data"]["machine"] == "laptop", r


def test_a_task_held_on_one_machine_is_held_for_every_other(tmp_path: Path, where: str) -> None:
    a, b = _shared(tmp_path, 2, where=where)
    assert _run(a, "sa", "start", "t1", "--agents", "x").returncode == 0
    heads = remote_refs(b, "refs/heads/t1", "refs/heads/task-t1-agent-x", "refs/spark/tasks/t1")
    assert len(heads.splitlines()) == 3  # lock and branches moved together
    if where == "branch":  # the host refuses refs/spark/*: the lock is in the state branch's table
        assert git(b, "ls-remote", "origin", "refs/spark/*") == "" and git(b, "ls-remote", "origin", "refs/heads/spark/state")
    assert _run(a, "sa", "start", "t2", "--agents", "").returncode == 0
    commit(tmp_path / "m0.tasks" / "t2" / "code", {"w.txt": "w\n"}, "work")
    git(a, "push", "--quiet", "origin", "t2")  # somebody's work on t2's branch
    assert _run(a, "sa", "abandon", "t2", "--why", "not needed").returncode == 0
    ended = remote_refs(b, "refs/spark/ended/t2/*", "refs/spark/tasks/t2", "refs/heads/t2").splitlines()
    assert [ln.split("\t")[1].split("/")[2] for ln in ended] == ["t2", "ended"]  # the record kept, the lock gone, the pushed branch kept
    archived = remote_refs(b, "refs/spark/archive/t2/*").splitlines()  # its unmerged branch archived on the remote: never deleted there
    assert len(archived) == 1 and archived[0].split("\t")[0] == remote_refs(b, "refs/heads/t2").split("\t")[0], archived
    assert _run(a, "sa", "start", "t3", "--agents", "").returncode == 0
    assert _run(a, "sa", "abandon", "t3", "--why", "not needed").returncode == 0
    assert git(b, "ls-remote", "origin", "refs/heads/t3") == ""  # still at the base start pushed: removed
    r = _run(b, "sb", "start", "t1", "--agents", "x")
    assert r.returncode == 3, r
    r = spark(b, "--json", "remote", "status")
    assert [(t["task"], t["machine"], t["session"], t["stale"], t["mine"]) for t in r.json["data"]["tasks"]] == [("t1", "m0", "sa", False, False)]
    before = remote_refs(b)
    r = spark(b, "--json", "doctor", "--fix")  # reports the other machine's task, repairs nothing of it
    assert r.returncode == 0 and [(f["where"], f["kind"], f["fixed"]) for f in r.json["data"]["findings"]] == [("t1", "remote-other-machine", False)], r
    assert remote_refs(b) == before and not (tmp_path / "m1.tasks" / "t1").exists()


def test_expired_lease_shows_stale_lock_break_takes_over_old_holder_refused_with_reason(tmp_path: Path, where: str) -> None:
    a, b = _shared(tmp_path, 2, lease_s=0.001, where=where)  # expired as soon as written: no waiting in the test
    assert _run(a, "sa", "start", "t1", "--agents", "").returncode == 0
    r = spark(b, "--json", "status")  # the plain status of another machine shows the stale lease
    assert [(t["task"], t["machine"], t["stale"]) for t in r.json["data"]["remote"]["tasks"]] == [("t1", "m0", True)], r
    assert "STALE" in spark(b, "status").stdout
    assert [f["kind"] for f in spark(b, "--json", "doctor").json["data"]["findings"]] == ["remote-lease-stale"]
    r = spark(b, "--json", "remote", "status")
    assert r.json["data"]["tasks"][0]["stale"] is True and r.json["next"] == ["spark-git lock break t1 --why REASON"], r
    r = _run(b, "sb", "lock", "break", "t1", "--why", "m0 went offline")
    assert r.returncode == 0, r
    r = _run(a, "sa", "heartbeat", "t1")
    assert r.returncode == 3 and "m0 went offline" in r.json["summary"] and "'m1'" in r.json["summary"], r
    commit(tmp_path / "m0.tasks" / "t1" / "code", {"x.txt": "x\n"}, "work")
    before = (remote_refs(a), (tmp_path / "m0.tasks" / "t1" / "task.json").read_bytes())
    r = _run(a, "sa", "approve", "t1", "--changes")
    assert r.returncode == 3 and "m0 went offline" in r.json["summary"], r
    assert (remote_refs(a), (tmp_path / "m0.tasks" / "t1" / "task.json").read_bytes()) == before  # the refusal changed nothing
    problem = spark(a, "--json", "status").json["data"]["tasks"][0]["problem"]
    assert "machine m1" in problem and "m0 went offline" in problem
    r = spark(a, "--json", "doctor", "--fix")  # the old holder's doctor keeps its worktrees (unpushed work) and the new holder's lock
    assert r.returncode == 0 and remote_refs(a) == before[0] and (tmp_path / "m0.tasks" / "t1" / "code").is_dir(), r
    r = _run(b, "sb", "start", "t1")  # the new holder resumes here: its own worktrees, the remote's branches
    assert r.returncode == 0 and (tmp_path / "m1.tasks" / "t1" / "code").is_dir(), r
    lock = fetch_remote_ref(a, "refs/spark/tasks/t1", "refs/test/t1")
    subjects = git(a, "log", "--format=%s", lock).splitlines()
    assert "spark-git lock break t1: m0 went offline" in subjects  # the history is the transition log
    assert subjects[-1] == "spark-git start t1"


def _notes_writer(clone: str, sha: str, who: str, n: int, barrier: Any) -> None:
    store = open_store(Layout.discover(Path(clone)))
    barrier.wait()
    for i in range(n):
        store.add_notes([(sha, {"kind": "test", "who": who, "i": i})])


def test_notes_written_at_once_from_3_machines_all_reach_the_remote(tmp_path: Path, where: str) -> None:
    clones = _shared(tmp_path, 3, where=where)
    sha = git(clones[0], "rev-parse", "HEAD")
    ctx = mp.get_context("fork")
    writers = [(str(c), f"{c.name}-{w}") for c in clones for w in range(3)]
    barrier = ctx.Barrier(len(writers))
    procs = [ctx.Process(target=_notes_writer, args=(c, sha, who, 4, barrier)) for c, who in writers]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * len(procs)
    fetch_remote_ref(clones[0], "refs/notes/spark", "refs/notes/test-remote")  # the remote's notes, not m0's
    lines = [json.loads(ln) for ln in git(clones[0], "notes", "--ref=refs/notes/test-remote", "show", sha).splitlines() if ln.strip()]
    assert sorted((x["who"], x["i"]) for x in lines) == sorted((who, i) for _, who in writers for i in range(4))


def test_two_machines_landing_at_once_base_linear_everything_lands(tmp_path: Path, where: str) -> None:
    a, b = _shared(tmp_path, 2, where=where)
    for m, t in ((a, "ta"), (b, "tb")):
        assert _run(m, f"s-{t}", "start", t, "--agents", "").returncode == 0
        commit(m.parent / f"{m.name}.tasks" / t / "code", {f"{t}.txt": f"{t}\n"}, f"{t}: work")
        assert _run(m, f"s-{t}", "approve", t, "--changes").returncode == 0
    procs = [subprocess.Popen([sys.executable, "-m", "spark_git", "--json", "complete", t], cwd=m, env={**os.environ, "SPARK_SESSION_ID": f"s-{t}"},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for m, t in ((a, "ta"), (b, "tb"))]
    outs = [(p.communicate(timeout=300), p.returncode) for p in procs]
    assert [rc for _, rc in outs] == [0, 0], outs  # the later landing waits for the other machine's, then lands on it
    git(a, "fetch", "--quiet", "origin")
    assert set(git(a, "ls-tree", "--name-only", "origin/main").split()) >= {"ta.txt", "tb.txt"}
    assert not {"ta: work", "tb: work"} & set(git(a, "log", "--first-parent", "--format=%s", "origin/main").splitlines())  # one merge per task
    assert remote_refs(a, "refs/spark/queue/*") == ""


_KILLED_WRITER = r"""
import os, sys
from pathlib import Path
from spark_git.core.layout import Layout
from spark_git.state.backends import open_store
store = open_store(Layout.discover(Path(sys.argv[1])))
tf = store.read_task("t1")
for i in range(10_000):
    tf.title = f"write {i}"
    store.write_task(tf)
    os.write(1, b".")
"""


def test_a_writer_sigkilled_mid_push_leaves_the_old_or_the_new_state(tmp_path: Path, where: str) -> None:
    a, = _shared(tmp_path, 1, where=where)
    assert _run(a, "sa", "start", "t1", "--agents", "").returncode == 0
    for n in range(1, 6):
        p = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(a)], stdout=subprocess.PIPE)
        assert p.stdout is not None and p.stdout.read(n) == b"." * n  # n writes pushed; the next one is under way
        p.send_signal(signal.SIGKILL)
        p.wait()
        lock = fetch_remote_ref(a, "refs/spark/tasks/t1", "refs/test/t1")
        title = json.loads(git(a, "show", f"{lock}:task.json"))["title"]
        assert title in (f"write {n - 1}", f"write {n}"), title
        git(tmp_path / "shared.git", "fsck", "--no-dangling")


def test_unreachable_remote_is_exit_3_saying_so_never_local_state(tmp_path: Path, where: str) -> None:
    a, = _shared(tmp_path, 1, where=where)
    assert _run(a, "sa", "start", "t1", "--agents", "").returncode == 0
    git(a, "remote", "set-url", "origin", f"file://{tmp_path / 'gone.git'}")
    before = (tmp_path / "m0.tasks" / "t1" / "task.json").read_bytes()
    for args in (["start", "t2", "--agents", ""], ["status"], ["status", "t1"], ["queue"], ["heartbeat", "t1"], ["remote", "status"],
                 ["approve", "t1", "--changes"], ["complete", "t1"]):  # reads refuse too: no answer from local state
        r = _run(a, "sa", *args)
        assert r.returncode == 3 and "unreachable" in r.json["summary"], (args, r)
    assert not (tmp_path / "m0.tasks" / "t2" / "task.json").exists()
    assert (tmp_path / "m0.tasks" / "t1" / "task.json").read_bytes() == before


@pytest.mark.parametrize("command", [["remote", "status"], ["heartbeat", "t1"]])
def test_remote_commands_refuse_in_local_mode(repo: Path, command: list[str]) -> None:
    r = spark(repo, "--json", *command)
    assert r.returncode == 2 and "remote mode is off" in r.json["summary"], r


def test_a_verdict_recorded_on_one_machine_is_seen_on_another(tmp_path: Path, where: str) -> None:
    a, b = _shared(tmp_path, 2, where=where)
    tree = git(a, "rev-parse", "HEAD^{tree}")
    open_store(Layout.discover(a)).add_verdict(tree, {"gate": "final", "passed": True})
    assert open_store(Layout.discover(b)).verdicts(tree) == [{"gate": "final", "passed": True}]


def test_switching_modes_with_a_live_task_is_refused(tmp_path: Path) -> None:
    a, = _shared(tmp_path, 1)
    assert _run(a, "sa", "start", "t1", "--agents", "").returncode == 0
    r = spark(a, "--json", "remote", "disable")
    assert r.returncode == 3 and "t1" in r.json["summary"], r
    git(a, "remote", "rename", "origin", "elsewhere")
    r = _run(a, "sa", "heartbeat", "t1")
    assert r.returncode == 3 and "no remote 'origin'" in r.json["summary"] and r.json["next"] == [], r


def test_a_host_taking_branches_only_is_used_through_a_state_branch(tmp_path: Path) -> None:
    url = f"file://{bare(tmp_path, branches_only=True)}"
    seed(tmp_path, url, {"README.md": "# shared\n"}, config=LIGHT)
    m = tmp_path / "m"
    git(tmp_path, "clone", "--quiet", url, str(m))
    r = spark(m, "--json", "remote", "check")
    assert r.returncode == 0, r
    assert r.json["data"] | {"url": None} == {"remote": "origin", "url": None, "custom_refs": False, "notes_refs": False, "atomic": True,
                                            "needs_state_branch": True}
    assert r.json["next"] == ["spark-git remote enable origin --state-branch spark/state"]
    assert git(m, "ls-remote", "origin", "refs/heads/spark-check/*") == ""  # the probes are gone
    r = spark(m, "--json", "remote", "enable", "origin", "--state-branch", "spark/state")  # the hint, as given
    assert r.returncode == 0 and r.json["data"]["state_branch"] == "spark/state", r
    assert _run(m, "sa", "start", "t1", "--agents", "x").returncode == 0
    assert remote_refs(m, "refs/spark/tasks/*") and git(m, "ls-remote", "origin", "refs/heads/task-t1-agent-x")
    r = spark(m, "--json", "remote", "enable", "origin", "--state-branch", "bad..name")
    assert r.returncode == 2 and "not a valid branch name" in r.json["summary"], r
