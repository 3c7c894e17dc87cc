"""protocol = "light": merge and complete without the state ceremony (gates and the human's change
approval still apply); states are still recorded and the log stays consistent."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import git

from tests.protokit import P

LIGHT = """protocol = "light"
[approval]
allow_non_interactive = true
"""


def test_light_protocol_merges_and_completes_from_any_state(tmp_path: Path) -> None:
    p = P(tmp_path, agents="code-updater", config=LIGHT)
    p.commit("code-updater", {"src/app.py": "print('light')\n"}, "change")
    p.ok("merge", p.task, "--agent", "code-updater")  # in INIT: fine under light
    r = p.spark("--json", "complete", p.task)
    assert r.returncode == 3 and any("not approved the changes" in u for u in r.json["data"]["unmet"])  # the human still approves
    p.ok("approve", p.task, "--changes")
    p.ok("complete", p.task)
    assert git(p.repo, "rev-parse", "main^2") == p.head()
    tf = p.task_json()
    last = tf["transition_log"][-1]
    assert (tf["state"], last["from"], last["to"], last["protocol"]) == ("COMPLETE", "INIT", "COMPLETE", "light")
    assert p.ok("audit", p.task)["data"]["smells"] == []  # recorded by a command: not a hand edit
    assert p.ok("status", p.task)["data"]["tasks"][0]["problem"] is None


def test_light_advance_records_and_lists_waived_conditions(tmp_path: Path) -> None:
    p = P(tmp_path, config=LIGHT)
    d = p.go()
    assert d["to"] == "CLASSIFIED" and d["protocol"] == "light"
    assert any("risk level and agent set are not decided" in w for w in d["waived"])
    trail = json.loads((p.root / "audit-trail.json").read_text())
    assert trail["state_transitions"][-1]["evidence"]["waived"] == d["waived"]
    r = p.advance("REVIEW")  # the legal table still holds
    assert r.returncode == 3 and r.json["data"]["legal_next_states"] == ["REQUIREMENTS"]
    r = p.advance("NOPE")
    assert r.returncode == 2 and "unknown state 'NOPE'" in r.json["summary"]
    r = p.advance(session="s2")  # and so does the lock
    assert r.returncode == 3 and any("held by session s1" in u for u in r.json["data"]["unmet"])
