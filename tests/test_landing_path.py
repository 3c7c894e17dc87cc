"""Landing is one path (issue 24): every `complete` goes through the queue, which rebuilds a task on a
moved base when its patch applies unchanged; a landed task (batched or not) can always be cleaned up;
main's first-parent history holds one gated merge commit per task."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import commit, git

from tests.queuekit import Queue


def _snapshot(q: Queue, task: str) -> dict:
    return json.loads((q.root / task / "audit-snapshot.json").read_text())


def test_tasks_landed_by_one_batch_can_each_be_cleaned_up(tmp_path: Path) -> None:
    # Defect 1: B's task branch pointed at its approved commit, not in main: cleanup → complete → update → dead end.
    q = Queue(tmp_path, 2)
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    r = q.spark("t0", "--json", "queue", "run")
    assert r.returncode == 0 and [o["result"] for o in r.json["data"]["outcomes"]] == ["landed", "landed"], r
    for t in q.tasks:
        r = q.spark(t, "--json", "cleanup", t)
        assert r.returncode == 0, r
        assert r.json["data"]["kept_branches"] == [] and t in r.json["data"]["deleted_branches"], r.json["data"]
        assert _snapshot(q, t)["final_state"] == "CLEANUP" and _snapshot(q, t)["landed"] is True
    assert git(q.repo, "for-each-ref", "refs/heads/") .count("refs/heads/") == 1  # main only


def test_complete_after_main_moved_lands_without_update_and_keeps_the_approval(tmp_path: Path) -> None:
    # Defect 2: complete refused as soon as main moved ("main moved → update"); each task needed a manual update.
    q = Queue(tmp_path, 3)
    for t in q.tasks:  # one after another, each waiting for its own landing
        r = q.spark(t, "--json", "complete", t)
        assert r.returncode == 0 and r.json["data"]["result"] == "landed", r
        tj = q.task_json(t)
        assert tj["state"] == "COMPLETE" and tj["checkpoint"]["approved"] is True
    assert {f"{t}.txt" for t in q.tasks} <= q.landed_files()
    assert q.queue_log()["gate_runs"] == 3
    for t in q.tasks:
        assert q.spark(t, "cleanup", t).returncode == 0


def test_complete_whose_patch_no_longer_applies_returns_to_the_human_with_the_next_command(tmp_path: Path) -> None:
    q = Queue(tmp_path, 2)
    for t in q.tasks:  # both write shared.txt, differently
        commit(q.root / t / "code", {"shared.txt": f"{t}\n"}, f"{t}: shared")
        assert q.spark(t, "approve", t, "--changes").returncode == 0
    assert q.spark("t0", "complete", "t0").returncode == 0
    before = git(q.repo, "rev-parse", "main")
    r = q.spark("t1", "--json", "complete", "t1")
    assert r.returncode == 3, r
    assert "shared.txt" in r.json["summary"] and r.json["next"] == ["spark-git update t1"], r.json
    assert git(q.repo, "rev-parse", "main") == before and q.task_json("t1")["state"] != "COMPLETE"
    assert q.task_json("t1").get("queued") is None and q.queue_refs() == []


def test_a_patch_that_changes_when_rebuilt_on_the_moved_main_is_not_landed(tmp_path: Path) -> None:
    # t1's hunk applies on the new main (t0 edited a neighbouring line), but the diff's context differs:
    # the approved patch is not what would land, so the human sees it again.
    lines = "".join(f"line{i}\n" for i in range(1, 8))
    q = Queue(tmp_path, 2, files={"f.txt": lines})
    commit(q.root / "t0" / "code", {"f.txt": lines.replace("line3\n", "line3 by t0\n")}, "t0: line 3")
    commit(q.root / "t1" / "code", {"f.txt": lines.replace("line5\n", "line5 by t1\n")}, "t1: line 5")
    for t in q.tasks:
        assert q.spark(t, "approve", t, "--changes").returncode == 0
    assert q.spark("t0", "complete", "t0").returncode == 0
    before = git(q.repo, "rev-parse", "main")
    r = q.spark("t1", "--json", "complete", "t1")
    assert r.returncode == 3, r
    assert "patch" in r.json["summary"] and r.json["next"] == ["spark-git update t1"], r.json
    assert git(q.repo, "rev-parse", "main") == before


def test_complete_again_on_a_landed_task_says_it_has_landed_and_lands_nothing(tmp_path: Path) -> None:
    # Issue 24, item 9: re-running `complete` said "main moved → update", and update "nothing to update".
    q = Queue(tmp_path, 2)
    for t in q.tasks:
        assert q.spark(t, "complete", t).returncode == 0
    main = git(q.repo, "rev-parse", "main")
    r = q.spark("t0", "--json", "complete", "t0")
    assert r.returncode == 0 and r.json["data"]["already_landed"] is True and r.json["next"] == ["spark-git cleanup t0"], r
    assert r.json["data"]["landed_commit"] == git(q.repo, "rev-parse", "main~1")
    r = q.spark("t0", "complete", "t0")
    assert "landed already" in r.stdout, r.stdout
    assert git(q.repo, "rev-parse", "main") == main and q.queue_refs() == []


def test_status_shows_that_the_queue_gave_the_head_back_and_the_way_on(tmp_path: Path) -> None:
    # Issue 24, item 10: status did not show that a task was evicted from the queue.
    q = Queue(tmp_path, 2)
    for t in q.tasks:
        commit(q.root / t / "code", {"shared.txt": f"{t}\n"}, f"{t}: shared")
        assert q.spark(t, "approve", t, "--changes").returncode == 0
    assert q.spark("t0", "complete", "t0").returncode == 0
    assert q.spark("t1", "complete", "t1").returncode == 3
    d = q.spark("t1", "--json", "status", "t1").json["data"]["tasks"][0]
    assert d["given_back"]["result"] == "blocked" and "shared.txt" in d["given_back"]["reason"], d
    assert d["given_back"]["next"] == ["spark-git update t1"]
    assert q.spark("t1", "--json", "status", "t1").json["next"][0] == "spark-git update t1"  # the JSON's next as the text's (issue 32)
    out = q.spark("t1", "status", "t1").stdout
    assert "the merge queue gave this head back" in out and "→ spark-git update t1" in out, out


def test_a_task_whose_head_is_in_main_already_lands_no_empty_merge(tmp_path: Path) -> None:
    q = Queue(tmp_path, 1)
    git(q.repo, "merge", "-q", "--ff-only", "t0")  # landed by hand, outside spark-git
    before = git(q.repo, "rev-parse", "main")
    r = q.spark("t0", "--json", "complete", "t0")
    assert r.returncode == 3 and "nothing to land" in r.json["summary"], r
    assert git(q.repo, "rev-parse", "main") == before and q.task_json("t0")["state"] != "COMPLETE"


def test_a_task_changed_after_it_was_queued_is_given_back_with_the_approval_as_next(tmp_path: Path) -> None:
    q = Queue(tmp_path, 1)
    assert q.spark("t0", "complete", "t0", "--no-wait").returncode == 0
    commit(q.root / "t0" / "code", {"late.txt": "late\n"}, "t0: after the approval")
    r = q.spark("t0", "--json", "queue", "run")
    (o,) = r.json["data"]["outcomes"]
    assert o["result"] == "blocked" and o["next"] == ["spark-git approve t0 --changes"], o
