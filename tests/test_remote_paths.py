"""Remote mode, two machines whose tasks roots differ (issue 27): worktree paths are machine-local
facts. The machine that takes a task over works it through its whole life at the paths its own
layout derives; it never sees, acts on or calls corrupt the other machine's paths in the shared
task.json."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fixtures.repo import commit, git, spark
from fixtures.servers import bare, fetch_remote_ref, machine, seed

from spark_git.core.layout import Layout
from spark_git.state.backends import open_store

LIGHT = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'


def _run(m: Path, session: str, *args: str, rc: int = 0, **kw: Any) -> Any:
    r = spark(m, "--json", *args, env={**os.environ, "SPARK_SESSION_ID": session}, **kw)
    assert r.returncode == rc, r
    return r


def test_a_task_taken_over_lives_at_the_new_machines_paths(tmp_path: Path) -> None:
    url = f"file://{bare(tmp_path)}"
    seed(tmp_path, url, {"README.md": "# shared\n"}, config=LIGHT)
    a = machine(tmp_path, url, "m0", lease_s=0.001)  # expired as soon as written: taken over without waiting
    (tmp_path / "elsewhere" / "deeper").mkdir(parents=True)
    b = machine(tmp_path / "elsewhere" / "deeper", url, "m1")
    a_root, b_root = tmp_path / "m0.tasks", tmp_path / "elsewhere" / "deeper" / "m1.tasks"
    _run(a, "sa", "start", "t1", "--agents", "x")
    _run(b, "sb", "lock", "break", "t1", "--why", "m0 went offline")
    _run(b, "sb", "start", "t1")  # resumes the provisioning here

    shown = [
        _run(b, "sb", "status", "t1").stdout,
        _run(b, "sb", "brief", "t1", "--agent", "x").stdout,
        _run(b, "sb", "hooks", "check", rc=1).stdout,  # no hooks installed: fails, but on this machine's worktrees
        _run(b, "sb", "hook", "session-start", input=json.dumps({"session_id": "sb", "cwd": str(b)})).stdout,
        _run(b, "sb", "doctor").stdout,
    ]
    st = json.loads(shown[0])["data"]["tasks"][0]
    assert st["worktree"] == str(b_root / "t1" / "code") and st["agents"][0]["worktree"] == str(b_root / "t1" / "agents" / "x" / "code"), st
    assert st.get("problem") is None and json.loads(shown[4])["data"]["findings"] == [], shown
    assert not [s for s in shown if str(a_root) in s], "the other machine's paths reached this one"

    commit(b_root / "t1" / "agents" / "x" / "code", {"feature.txt": "from m1\n"}, "[x] feature")
    _run(b, "sb", "merge", "t1", "--agent", "x")
    _run(b, "sb", "approve", "t1", "--changes")
    done = _run(b, "sb", "complete", "t1").json["data"]
    assert done["landed_commit"], done
    _run(b, "sb", "cleanup", "t1")
    assert not (b_root / "t1" / "code").exists() and (a_root / "t1" / "code").is_dir()  # the old holder's copy is its own to end



def test_another_machines_task_is_read_at_this_machines_paths(tmp_path: Path) -> None:
    """Every task locked on the remote (`remote status`, doctor) as this clone reads it: the worktree
    paths its own layout derives, not the holder's."""
    url = f"file://{bare(tmp_path)}"
    seed(tmp_path, url, {"README.md": "# shared\n"}, config=LIGHT)
    a = machine(tmp_path, url, "m0")
    (tmp_path / "elsewhere").mkdir()
    b = machine(tmp_path / "elsewhere", url, "m1")
    _run(a, "sa", "start", "t1", "--agents", "x")
    shared = json.loads(git(b, "show", fetch_remote_ref(b, "refs/spark/tasks/t1", "refs/test/t1") + ":task.json"))
    assert shared["worktree"] == str(tmp_path / "m0.tasks" / "t1" / "code")  # the holder's fact, kept on disk as it was
    layout = Layout.discover(b)
    remote = open_store(layout).remote
    assert remote is not None
    tf, lease = remote.remote_tasks()["t1"]
    assert lease.machine == "m0" and tf is not None
    assert (tf.worktree, tf.agents["x"].worktree) == (str(layout.task_worktree("t1")), str(layout.agent_worktree("t1", "x")))
