"""SIGKILL of the draining process at each named point of a drain → `doctor --fix` and a re-run land
everything: nothing lost, no stale queue ref, scratch worktree or main-worktree lock."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.repo import git

from tests.queuekit import Queue

POINTS = ["queue-after-candidate", "queue-gate-start", "gate-final-running", "complete-before-ff", "complete-after-ff", "queue-part-recorded"]


@pytest.mark.parametrize("parallel", [1, 2])
@pytest.mark.parametrize("point", POINTS)
def test_drain_killed_then_doctor_fix_and_rerun_land_everything(tmp_path: Path, point: str, parallel: int) -> None:
    q = Queue(tmp_path, 3, parallel=parallel)
    heads = {t: git(q.repo, "rev-parse", t) for t in q.tasks}
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    r = q.spark("t0", "--json", "queue", "run", env={"SPARK_FAULT_KILL_AT": point})
    assert r.returncode == -9, r
    r = q.spark("t0", "--json", "doctor", "--fix")
    kinds = {f["kind"]: f for f in r.json["data"]["findings"]}
    assert kinds["queue-drain-killed"]["fixed"] is True, r
    assert q.scratch() == [] and not (q.root / "main" / "task.json").exists()
    r = q.spark("t1", "--json", "queue", "run")
    assert r.returncode == 0, r
    assert q.queue_refs() == [] and q.queue_log().get("candidate") is None
    for t in q.tasks:
        tj = q.task_json(t)
        assert tj["state"] == "COMPLETE" and tj.get("queued") is None, (t, tj["state"])
        assert [x["to"] for x in tj["transition_log"]].count("COMPLETE") == 1
        assert git(q.repo, "cat-file", "-t", heads[t]) == "commit"  # the approved head is kept (its branch)
    assert {f"{t}.txt" for t in q.tasks} <= q.landed_files()
    q.assert_landed_as_merges()
    outcomes = [o for o in q.queue_log()["outcomes"] if o["result"] == "landed"]
    assert sorted(o["task"] for o in outcomes) == q.tasks
    assert git(q.repo, "status", "--porcelain") == ""
    assert git(q.repo, "fsck", "--no-progress", "--no-dangling", "--connectivity-only") == ""
    assert git(q.repo, "worktree", "list", "--porcelain").count("worktree ") == 4  # main + 3 task worktrees


@pytest.mark.parametrize("repair", ["doctor", "rerun"])
def test_a_landing_killed_half_way_through_its_checkout_is_repaired(tmp_path: Path, repair: str) -> None:
    """Found by scripts/chaos (complete SIGINTed at 0.361 s): `merge --ff-only` in the main worktree was
    stopped after writing the batch's files and before moving the branch, so they were untracked there
    and the next landing refused to overwrite them. What a killed drain left: its candidate (landing
    set) and those files, byte-identical to the tip's blobs; a file of the user's own stays."""
    q = Queue(tmp_path, 2)
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    r = q.spark("t0", "--json", "queue", "run", env={"SPARK_FAULT_KILL_AT": "complete-before-ff"})
    assert r.returncode == -9, r
    tip = q.queue_log()["candidate"]["landing"]
    for t in q.tasks:  # git's half-done checkout
        (q.repo / f"{t}.txt").write_bytes(git(q.repo, "cat-file", "blob", f"{tip}:{t}.txt").encode() + b"\n")
    (q.repo / "mine.txt").write_text("the user's own\n")
    if repair == "doctor":
        r = q.spark("t0", "--json", "doctor", "--fix")
        assert {f["kind"]: f["fixed"] for f in r.json["data"]["findings"]}.get("queue-drain-killed") is True, r
        assert not (q.repo / "t0.txt").exists() or git(q.repo, "ls-files", "t0.txt") == "t0.txt"
    r = q.spark("t1", "--json", "queue", "run")
    assert r.returncode == 0, r
    assert all(q.task_json(t)["state"] == "COMPLETE" for t in q.tasks)
    assert {f"{t}.txt" for t in q.tasks} <= q.landed_files()
    assert (q.repo / "mine.txt").read_text() == "the user's own\n"
    assert git(q.repo, "status", "--porcelain") == "?? mine.txt"
