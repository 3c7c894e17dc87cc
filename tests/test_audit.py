"""`spark-git audit`: the timeline and the protocol smells."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import commit

from tests.protokit import P

CFG = """[approval]
allow_non_interactive = true
"""


def test_timeline_is_ordered_and_clean_task_has_no_smells(tmp_path: Path) -> None:
    p = P(tmp_path, config=CFG)
    p.ok("classify", p.task, "--files", "README.md")
    p.go()
    p.report("docs-updater", "WORKING")
    d = p.ok("audit", p.task)["data"]
    kinds = [(e["kind"], e["text"]) for e in d["timeline"]]
    ats = [e["at"] for e in d["timeline"]]
    assert ats == sorted(ats)
    assert ("state_transitions", "INIT → CLASSIFIED  (spark-git advance)") in kinds
    assert any(k == "agent_invocations" and t.startswith("docs-updater reports WORKING in CLASSIFIED") for k, t in kinds)
    assert any(k == "events" and t.startswith("classified ") for k, t in kinds)
    assert d["smells"] == [] and d["state"] == "CLASSIFIED"
    r = p.spark("audit", p.task)
    assert r.returncode == 0 and "INIT → CLASSIFIED" in r.stdout and "0 smells" in r.stdout


def test_smells_unattributed_single_commit_and_stale_review(tmp_path: Path) -> None:
    p = P(tmp_path, agents="code-reviewer", config=CFG)
    p.report("code-reviewer", "COMPLETE", "--decision", "APPROVED")
    reviewed = p.head()
    sha = commit(p.wt(), {"src/app.py": "print('all of it')\n"}, "wip")  # straight on the task branch, no agent
    smells = p.ok("audit", p.task)["data"]["smells"]
    assert smells == [
        f"commit {sha[:12]} on the task branch is not attributed to any agent",
        f"a single unattributed commit ({sha[:12]}) carries the whole task",
        f"reviewer code-reviewer's APPROVED is for {reviewed[:12]}, older than the task head {sha[:12]} it would approve",
    ]
    sha2 = commit(p.wt(), {"docs.md": "x\n"}, "[code-reviewer] docs")
    smells = p.ok("audit", p.task)["data"]["smells"]
    assert f"commit {sha[:12]} on the task branch is not attributed to any agent" in smells
    assert not any("single unattributed" in s for s in smells)
    assert not any(sha2[:12] in s and "not attributed" in s for s in smells)
    r = p.spark("audit", p.task)
    assert "smell: a single" not in r.stdout and "smell: commit" in r.stdout


def test_smells_states_skipped_by_hand_editing(tmp_path: Path) -> None:
    p = P(tmp_path, config=CFG)
    path = p.root / "task.json"
    tf = json.loads(path.read_text())
    # 1. state edited alone: the log cannot explain it
    path.write_text(json.dumps({**tf, "state": "IMPLEMENTATION"}))
    smells = p.ok("audit", p.task)["data"]["smells"]
    assert smells == ["task.json was edited by hand: state is IMPLEMENTATION but the last recorded transition leads to INIT"]
    # 2. state and a legal-looking log forged together: it breaks the hash chain, and the audit trail never saw it
    log = tf["transition_log"] + [{"from": "INIT", "to": "CLASSIFIED", "at": "2026-11-22T00:00:01.000000Z", "evidence": {}}]
    path.write_text(json.dumps({**tf, "state": "CLASSIFIED", "transition_log": log}))
    smells = p.ok("audit", p.task)["data"]["smells"]
    assert smells == ["task.json was edited by hand: transition_log entry 1 (INIT → CLASSIFIED at 2026-11-22T00:00:01.000000Z) does not fit the hash chain: it was written or edited by hand",
                      "transition INIT → CLASSIFIED at 2026-11-22T00:00:01.000000Z is in task.json but not in the audit trail (state skipped by hand-editing?)"]
