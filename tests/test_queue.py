"""The merge queue with real processes: 8 `complete`s at once land in one batch gated once; a culprit
among 8 is bisected out and sent back to IMPLEMENTATION with its log; a base moved under a batch
gets nothing landed on the stale base."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.repo import commit, git

from spark_git.core.layout import Layout
from spark_git.state.backends import open_store
from tests.queuekit import PYTEST_CULPRIT, PYTEST_GATE, Queue, gate_cmd, read_line, start_racers


def test_eight_completes_at_once_one_drains_all_land_in_one_gate_run(tmp_path: Path) -> None:
    q = Queue(tmp_path, 8)
    base = git(q.repo, "rev-parse", "main")
    store = open_store(Layout.discover(q.repo))
    with store.mutex("queue-drain"):  # held by the test: every racer enqueues, then waits
        procs = start_racers(q, [(t, ["complete", t]) for t in q.tasks])
        for p in procs:
            assert "waiting for the outcome" in read_line(p)
        assert len(q.queue_refs()) == 8
    results = [(*p.communicate(timeout=300), p.returncode) for p in procs]
    assert [rc for _, _, rc in results] == [0] * 8, results
    log = q.queue_log()
    assert log["gate_runs"] == 1
    drainers = {o["drained_by"] for o in log["outcomes"]}
    assert len(drainers) == 1 and all(o["result"] == "landed" and len(o["batch"]) == 8 for o in log["outcomes"])
    assert {f"{t}.txt" for t in q.tasks} <= q.landed_files()
    q.assert_landed_as_merges()
    assert git(q.repo, "rev-list", "--count", "--first-parent", f"{base}..main") == "8"
    assert q.queue_refs() == [] and q.scratch() == []
    for t in q.tasks:
        tj = q.task_json(t)
        assert tj["state"] == "COMPLETE" and tj.get("queued") is None
        assert sorted(tj["transition_log"][-1]["evidence"]["batch"]) == q.tasks
    assert git(q.repo, "status", "--porcelain") == ""


def test_a_culprit_among_eight_is_bisected_out_seven_land(tmp_path: Path) -> None:
    q = Queue(tmp_path, 8, culprit=5, final=PYTEST_GATE, files=PYTEST_CULPRIT)
    for t in q.tasks:
        r = q.spark(t, "--json", "complete", t, "--no-wait")
        assert r.returncode == 0 and r.json["data"]["result"] == "queued", r
        assert q.task_json(t)["queued"]["ref"] == r.json["data"]["queue_ref"]
    r = q.spark("t0", "--json", "queue", "run", process=True)
    assert r.returncode == 0, r
    outcomes = {o["task"]: o for o in r.json["data"]["outcomes"]}
    assert outcomes["t5"]["result"] == "failed" and [t for t, o in outcomes.items() if o["result"] == "landed"] == [t for t in q.tasks if t != "t5"]
    log = q.queue_log()
    assert log["gate_runs"] <= 5, log["gate_runs"]
    tj = q.task_json("t5")
    assert tj["state"] == "IMPLEMENTATION" and tj.get("queued") is None
    back = tj["transition_log"][-1]
    assert back["to"] == "IMPLEMENTATION" and Path(back["evidence"]["gate_log"]).is_file()
    assert back["evidence"]["failed_tests"] == ["test_gate.py::test_no_bad_file"] == outcomes["t5"]["failed_tests"], back
    assert "bad.txt" not in q.landed_files() and {f"t{i}.txt" for i in range(8) if i != 5} <= q.landed_files()
    q.assert_landed_as_merges()
    assert q.queue_refs() == [] and q.scratch() == []
    assert all(q.task_json(t)["state"] == "COMPLETE" for t in q.tasks if t != "t5")
    # the culprit's own `complete` (had it waited) exits 1 with the log: ask the queue again
    r = q.spark("t5", "--json", "queue")
    assert any(o["task"] == "t5" and o["result"] == "failed" and o["gate_log"] for o in r.json["data"]["recent"])


def test_base_moved_during_the_gate_nothing_lands_on_the_stale_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first gate run commits on main in the main worktree (someone landed by hand meanwhile).
    # The gate stands in for that someone: it runs unsandboxed (a sandboxed gate cannot touch main).
    monkeypatch.setenv("SPARK_BWRAP", "")
    marker = tmp_path / "moved"
    script = (f"import os, subprocess, sys; m = {str(marker)!r}\n"
              "if not os.path.exists(m):\n"
              "    open(m, 'w').close()\n"
              f"    r = {str(tmp_path / 'repo')!r}\n"
              "    open(os.path.join(r, 'by-hand.txt'), 'w').write('hand\\n')\n"
              "    subprocess.run(['git', '-C', r, 'add', 'by-hand.txt'], check=True)\n"
              "    subprocess.run(['git', '-C', r, 'commit', '-qm', 'by hand'], check=True)\n")
    q = Queue(tmp_path, 3, final=gate_cmd(script))
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    r = q.spark("t0", "--json", "queue", "run")
    assert r.returncode == 0, r
    by_hand = git(q.repo, "log", "--format=%H", "--grep=by hand", "main")
    assert by_hand, "the commit by hand is on main"
    assert q.queue_log()["gate_runs"] == 2  # the stale candidate was gated, not landed; rebuilt and gated again
    for o in r.json["data"]["outcomes"]:
        assert o["result"] == "landed" and o["old_base"] == by_hand
    assert git(q.repo, "merge-base", "--is-ancestor", by_hand, "main", check=False) == ""
    q.assert_landed_as_merges()
    assert {"by-hand.txt", "t0.txt", "t1.txt", "t2.txt"} <= q.landed_files()
    assert git(q.repo, "status", "--porcelain") == ""


def test_a_conflicting_task_is_evicted_with_its_files_and_its_complete_exits_3(tmp_path: Path) -> None:
    q = Queue(tmp_path, 2)
    for t in q.tasks:  # both also write shared.txt, differently
        commit(q.root / t / "code", {"shared.txt": f"{t}\n"}, f"{t}: shared")
        assert q.spark(t, "approve", t, "--changes").returncode == 0
    assert q.spark("t0", "complete", "t0", "--no-wait").returncode == 0
    r = q.spark("t1", "--json", "complete", "t1")  # drains: t0 lands, t1 conflicts with it
    assert r.returncode == 3, r
    assert r.json["data"]["files"] == ["shared.txt"] and "conflicts" in r.json["summary"]
    assert q.task_json("t0")["state"] == "COMPLETE" and q.task_json("t1").get("queued") is None
    assert q.task_json("t1")["state"] != "COMPLETE" and q.queue_refs() == []
    assert (q.repo / "shared.txt").read_text() == "t0\n"
    assert q.queue_log()["gate_runs"] == 1  # the conflict was found without a worktree, before any gate


def test_a_task_changed_after_it_was_queued_does_not_land(tmp_path: Path) -> None:
    q = Queue(tmp_path, 2)
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    commit(q.root / "t1" / "code", {"late.txt": "late\n"}, "t1: a commit after the approval")
    r = q.spark("t0", "--json", "queue", "run")
    assert r.returncode == 0, r
    got = {o["task"]: o for o in r.json["data"]["outcomes"]}
    assert got["t0"]["result"] == "landed" and got["t1"]["result"] == "blocked" and "moved since it was queued" in got["t1"]["reason"]
    assert "late.txt" not in q.landed_files() and q.queue_refs() == []
