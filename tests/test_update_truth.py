"""`update` after a conflict the coordinator resolved says what became of the approval, and why; its
audit event names the real old head; `status` never shows a gate as passed on a head it did not run
on (issue 24, defect 4)."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import git

from tests.test_update import two_tasks


def test_update_after_a_resolved_conflict_says_the_approval_is_void_and_what_to_do(tmp_path: Path) -> None:
    p1, p2 = two_tasks(tmp_path, {"src/app.py": "print('one')\n"}, {"src/app.py": "print('two')\n"})
    p1.ok("complete", p1.task)
    approved = p2.head()
    assert p2.spark("update", p2.task).returncode == 3
    assert p2.spark("update", p2.task, "--leave-conflict").returncode == 3
    (p2.wt() / "src/app.py").write_text("print('one and two')\n")
    git(p2.wt(), "add", "src/app.py")
    git(p2.wt(), "-c", "core.editor=true", "rebase", "--continue")
    new = p2.head()
    r = p2.spark("update", p2.task)  # the human-readable output
    assert r.returncode == 0, r
    assert "approval: voided" in r.stdout and "patch changed" in r.stdout, r.stdout
    # protocol full: the head is no longer the one presented, so the way on is a new round, and the
    # command that `complete` would ask for is what `update` says now
    nxt = r.stdout.split("next:")[-1].strip()
    assert nxt == f"spark-git approve {p2.task} --request-changes --why 'changed after review'", r.stdout
    (ev,) = [e for e in json.loads((p2.root / "audit-trail.json").read_text())["events"] if e.get("kind") == "updated"]
    assert ev["old_head"] == approved and ev["new_head"] == new and ev["approval"] == "voided", ev
    # status: the last build gate ran on the approved head, not on the head the conflict resolution made
    st = p2.spark("status", p2.task)
    line = [ln for ln in st.stdout.splitlines() if "gate build passed" in ln]
    assert not line or all(f"not the head {new[:12]}" in ln or "not this head" in ln for ln in line), st.stdout
    d = p2.ok("status", p2.task)["data"]["tasks"][0]["gate"]
    assert d is None or d["commit"] != new or d["result"] != "passed", d


def test_protocol_full_tasks_completed_one_after_another_land_without_update(tmp_path: Path) -> None:
    # Issue 24, defect 2 under protocol full: the presented head and the approval still hold on a moved main.
    p1, p2 = two_tasks(tmp_path, {"src/one.py": "one = 1\n"}, {"src/two.py": "two = 2\n"})
    p1.ok("complete", p1.task)
    head2 = p2.head()
    d = p2.ok("complete", p2.task)["data"]
    assert d["approved_sha"] == head2 and git(p2.repo, "rev-parse", "main^2") == head2
    assert p2.task_json()["state"] == "COMPLETE"
    p1.ok("cleanup", p1.task)
    p2.ok("cleanup", p2.task)
