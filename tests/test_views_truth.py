"""Views tell only what happened (issue 33 item 4): with no gate configured, `merge` and `complete`
run none, and no view says one passed — `log`, `audit`, `status` and the approval screen say "not run
(none configured)" (the notes keep `passed: true`, read as "nothing to check"; they said "gate final
passed" before)."""

from __future__ import annotations

import os
from pathlib import Path

from fixtures.repo import commit, make_repo, spark

LIGHT = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'


def test_a_gate_that_did_not_run_is_never_shown_as_passed(tmp_path: Path) -> None:
    env = {**os.environ, "SPARK_SESSION_ID": "s1"}
    repo = make_repo(tmp_path / "r", {"app.py": "x = 1\n"}, config=LIGHT)
    assert spark(repo, "start", "t1", "--agents", "a", env=env).returncode == 0
    commit(tmp_path / "r.tasks" / "t1" / "agents" / "a" / "code", {"app.py": "x = 2\n"}, "[a] two")
    assert spark(repo, "merge", "t1", "--agent", "a", env=env).returncode == 0
    approved = spark(repo, "approve", "t1", "--changes", env=env)  # the approval screen, then the approval
    assert approved.returncode == 0, approved
    assert spark(repo, "complete", "t1", env=env).returncode == 0
    shown = {v: spark(repo, v, "t1", env=env).stdout for v in ("log", "audit")}
    shown["status"] = spark(repo, "status", "t1", "--all", env=env).stdout
    shown["approval screen"] = approved.stdout + approved.stderr
    for view, text in shown.items():
        assert "passed" not in text.replace("not run", ""), (view, text)
    assert "gate build not run (none configured)" in shown["log"], shown["log"]
    assert "not run (none configured)" in shown["audit"], shown["audit"]
