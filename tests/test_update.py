"""`spark-git update`: tasks landing one after another on a moving main, approvals bound to the patch."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fixtures.repo import Run, git, spark

from tests.protokit import P

REV, UPA, UPT = "architecture-reviewer", "architecture-updater", "test-updater"


def walk_to_awaiting(p: P, files: dict[str, str]) -> str:
    """classify HIGH → … → AWAITING_USER_APPROVAL with `files` committed by the updater; the head presented."""
    p.ok("classify", p.task, "--risk", "HIGH", "--why", "test")
    p.go(), p.go()
    for a in (REV, UPA, UPT):
        p.requirements(a)
        p.report(a)
    p.go()
    p.plans([REV, UPA, UPT])
    p.ok("approve", p.task, "--plan")
    p.go()
    p.commit(UPA, files, "the change")
    p.ok("merge", p.task, "--agent", UPA)
    for a in (UPA, UPT):
        p.report(a, "COMPLETE", "--work-remaining", "none")
    p.report(REV, "COMPLETE", "--decision", "APPROVED")
    assert p.go()["to"] == "VALIDATION"
    assert p.go()["to"] == "REVIEW"
    assert p.go()["to"] == "AWAITING_USER_APPROVAL"
    return p.head()


def two_tasks(tmp_path: Path, f1: dict[str, str], f2: dict[str, str]) -> tuple[P, P]:
    files = {"README.md": "# demo\n", "src/app.py": "print('hi')\n", ".gitignore": "*.flag\n",
             "lines.txt": "".join(f"{i}\n" for i in range(1, 11))}
    p1 = P(tmp_path, task="t1", files=files)
    p2 = P(tmp_path, task="t2", repo=p1.repo)
    walk_to_awaiting(p1, f1)
    walk_to_awaiting(p2, f2)
    p1.ok("approve", p1.task, "--changes")
    p2.ok("approve", p2.task, "--changes")
    return p1, p2


def test_two_tasks_land_one_after_another_without_a_new_approval(tmp_path: Path) -> None:
    p1, p2 = two_tasks(tmp_path, {"src/one.py": "one = 1\n"}, {"src/two.py": "two = 2\n"})
    p1.ok("complete", p1.task)
    old2 = p2.head()  # `complete` would land it as it is (tests/test_landing_path.py); `update` first, by choice
    d = p2.ok("update", p2.task)["data"]
    assert d["rebased"] and d["approval"] == "kept" and d["old_head"] == old2 and d["new_patch_id"] == d["old_patch_id"]
    new2 = p2.head()
    assert new2 != old2 and git(p2.repo, "merge-base", "--is-ancestor", "main", new2) == ""
    # agents with no unmerged work follow the task head; the old head is archived
    moved = {a["agent"]: a["moved"] for a in d["agents"]}
    assert moved == {REV: True, UPA: True, UPT: True}, d["agents"]
    assert git(p2.repo, "rev-parse", f"task-t2-agent-{UPA}") == new2
    assert git(p2.repo, "rev-parse", d["archive_ref"]) == old2
    # notes followed the rewrite (notes.rewriteRef set by start)
    note = git(p2.repo, "notes", "--ref=refs/notes/spark", "show", new2)
    assert '"kind": "attribution"' in note or '"kind":"attribution"' in note, note
    tf = p2.task_json()
    carried = [h for h in tf["checkpoint_history"] if h["decision"] == "carried"]
    assert carried and carried[-1]["from"] == old2 and carried[-1]["to"] == new2 and carried[-1]["patch_id"] == d["new_patch_id"]
    trail = json.loads((p2.root / "audit-trail.json").read_text())
    assert any(e.get("kind") == "updated" and e.get("new_head") == new2 for e in trail["events"]), trail["events"][-3:]
    # the reviewers' approvals and the presentation hold by patch: no new approval, no new review
    p2.ok("complete", p2.task)
    assert git(p2.repo, "rev-parse", "main^2") == new2
    assert git(p2.repo, "rev-list", "--first-parent", "--no-merges", "main").split() == [git(p2.repo, "rev-list", "--max-parents=0", "main")]


def test_an_update_that_changes_the_patch_voids_the_approval(tmp_path: Path) -> None:
    # main changes line 3; t2 changes line 5: the rebase is clean but t2's diff context changes
    lines = "".join(f"{i}\n" for i in range(1, 11))
    p1, p2 = two_tasks(tmp_path, {"lines.txt": lines.replace("3\n", "three\n")}, {"lines.txt": lines.replace("5\n", "five\n")})
    p1.ok("complete", p1.task)
    d = p2.ok("update", p2.task)["data"]
    assert d["rebased"] and d["approval"] == "voided" and d["new_patch_id"] != d["old_patch_id"]
    assert p2.task_json()["checkpoint_history"][-1]["decision"] == "voided"
    r = p2.spark("--json", "complete", p2.task)
    assert r.returncode == 3, r
    assert f"spark-git approve {p2.task} --changes" in r.json["next"], r.json
    # the way back: the human requests changes; the reviewers review again; it lands
    p2.ok("approve", p2.task, "--request-changes", "--why", "the patch changed in the update")
    assert p2.state() == "IMPLEMENTATION"
    r = p2.advance("VALIDATION")
    assert r.returncode == 3 and "new review" in r.stdout, r
    p2.report(REV, "COMPLETE", "--decision", "APPROVED")
    for a in (UPA, UPT):
        p2.report(a, "COMPLETE", "--work-remaining", "none")
    for to in ("VALIDATION", "REVIEW", "AWAITING_USER_APPROVAL"):
        assert p2.go()["to"] == to
    p2.ok("approve", p2.task, "--changes")
    p2.ok("complete", p2.task)
    assert git(p2.repo, "rev-parse", "main^2") == p2.head()


def test_a_conflict_changes_nothing_and_leave_conflict_leaves_the_rebase(tmp_path: Path) -> None:
    p1, p2 = two_tasks(tmp_path, {"src/app.py": "print('one')\n"}, {"src/app.py": "print('two')\n"})
    p1.ok("complete", p1.task)
    before = p2.snapshot()
    refs = git(p2.repo, "for-each-ref")
    r = p2.spark("--json", "update", p2.task)
    assert r.returncode == 3, r
    assert r.json["data"]["conflicts"] == ["src/app.py"] and r.json["next"] == [f"spark-git update {p2.task} --leave-conflict"]
    assert p2.snapshot() == before and git(p2.repo, "for-each-ref") == refs
    assert git(p2.wt(), "status", "--porcelain") == ""
    r = p2.spark("--json", "update", p2.task, "--leave-conflict")
    assert r.returncode == 3 and r.json["data"]["conflicts"] == ["src/app.py"], r
    (p2.wt() / "src/app.py").write_text("print('one and two')\n")
    git(p2.wt(), "add", "src/app.py")
    git(p2.wt(), "-c", "core.editor=true", "rebase", "--continue")
    d = p2.ok("update", p2.task)["data"]
    assert not d["rebased"] and {a["agent"]: a["moved"] for a in d["agents"]} == {REV: True, UPA: True, UPT: True}
    assert d["approval"] == "voided" and p2.task_json()["checkpoint_history"][-1]["decision"] == "voided"
    assert p2.ok("update", p2.task)["data"]["approval"] == "none"  # voided once
    r = p2.spark("--json", "complete", p2.task)
    assert r.returncode == 3 and f"spark-git approve {p2.task} --changes" in r.json["next"], r


def test_agents_with_unmerged_work_are_left_alone(tmp_path: Path) -> None:
    p1, p2 = two_tasks(tmp_path, {"src/one.py": "one = 1\n"}, {"src/two.py": "two = 2\n"})
    p1.ok("complete", p1.task)
    mine = p2.commit(UPT, {"tests/test_two.py": "def test(): pass\n"}, "unmerged")
    d = p2.ok("update", p2.task)["data"]
    left = {a["agent"]: a for a in d["agents"]}[UPT]
    assert not left["moved"] and "unmerged" in left["why_not"]
    assert git(p2.repo, "rev-parse", f"task-t2-agent-{UPT}") == mine
    st = p2.ok("status", p2.task)["data"]
    agents = {a["name"]: a for t in st["tasks"] for a in t["agents"]}
    assert agents[UPT]["behind"] and agents[UPT]["behind"] > 0


def test_an_update_killed_while_rebasing_is_undone_by_the_next(tmp_path: Path) -> None:
    p1, p2 = two_tasks(tmp_path, {"src/app.py": "print('one')\n"}, {"src/app.py": "print('two')\n"})
    p1.ok("complete", p1.task)
    old, before = p2.head(), p2.snapshot()
    env_kill = {"SPARK_FAULT_KILL_AT": "update-rebase-returned"}
    r = _spark_env(p2, env_kill, "--json", "update", p2.task)
    assert r.returncode == -9, r
    assert (p2.root / ".spark-update-rebase").exists() and p2.head() == old and p2.snapshot() == before
    r = p2.spark("--json", "update", p2.task)  # aborts the killed one's rebase, then meets the conflict itself
    assert r.returncode == 3 and r.json["data"]["conflicts"] == ["src/app.py"], r
    assert not (p2.root / ".spark-update-rebase").exists() and p2.head() == old
    assert git(p2.wt(), "status", "--porcelain") == "" and p2.snapshot() == before


def test_an_update_killed_after_its_rebase_is_finished_by_the_next(tmp_path: Path) -> None:
    p1, p2 = two_tasks(tmp_path, {"src/one.py": "one = 1\n"}, {"src/two.py": "two = 2\n"})
    p1.ok("complete", p1.task)
    old = p2.head()
    r = _spark_env(p2, {"SPARK_FAULT_KILL_AT": "update-after-rebase"}, "--json", "update", p2.task)
    assert r.returncode == -9, r
    new = p2.head()
    assert new != old and git(p2.repo, "rev-parse", f"task-t2-agent-{UPA}") != new
    # the rewrite is not recorded yet, but the merged work is on the branch (rebased): doctor says so
    kinds = [f["kind"] for f in p2.ok("doctor", p2.task)["data"]["findings"]]
    assert "last-merge-not-in-task-branch" not in kinds, kinds
    d = p2.ok("update", p2.task)["data"]
    assert not d["rebased"] and d["approval"] == "kept" and all(a["moved"] for a in d["agents"]), d
    p2.ok("complete", p2.task)
    assert git(p2.repo, "rev-parse", "main^2") == new


def _spark_env(p: P, extra: dict[str, str], *args: str) -> Run:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_SESSION_ID"} | {"SPARK_SESSION_ID": "s1"} | extra
    return spark(p.repo, *args, env=env)


def test_doctor_sees_merges_an_update_rebased_as_kept_not_lost(tmp_path: Path) -> None:
    """Found by scripts/chaos: after `update`, every agent's last_merge_sha is a pre-update commit, and
    doctor reported the task branch as "rewritten" although spark-git rewrote it and archived the old head."""
    p1, p2 = two_tasks(tmp_path, {"src/one.py": "one = 1\n"}, {"src/two.py": "two = 2\n"})
    p1.ok("complete", p1.task)
    p2.ok("update", p2.task)
    kinds = [f["kind"] for f in p2.ok("doctor", p2.task)["data"]["findings"]]
    assert "last-merge-not-in-task-branch" not in kinds, kinds
    # a hand rewrite (no archive of the old head) is still reported
    git(p2.repo, "update-ref", "refs/heads/t2", "main")
    r = p2.spark("--json", "doctor", p2.task)
    assert "last-merge-not-in-task-branch" in [f["kind"] for f in r.json["data"]["findings"]], r.json


def test_status_and_audit_judge_a_review_by_its_patch_after_an_update(tmp_path: Path) -> None:
    """The reviewer approved the pre-update head; `update` kept the patch, so the approval holds (as the
    guards say) and neither `status` nor `audit` calls it stale."""
    p1, p2 = two_tasks(tmp_path, {"src/one.py": "one = 1\n"}, {"src/two.py": "two = 2\n"})
    p1.ok("complete", p1.task)
    p2.ok("update", p2.task)
    agents = {a["name"]: a for t in p2.ok("status", p2.task)["data"]["tasks"] for a in t["agents"]}
    assert not [f for f in agents[REV]["flags"] if "stale" in f], agents[REV]
    smells = p2.ok("audit", p2.task)["data"]["smells"]
    assert not [s for s in smells if REV in s], smells
