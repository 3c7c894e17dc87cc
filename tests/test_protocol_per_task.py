"""Issue 24 defect 7: the protocol is fixed when a task starts (task.json's `protocol`), so a config
change affects new tasks only; `status` says when a task's protocol is not the config's."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fixtures.repo import commit, git, make_repo, spark

from tests.test_cleanup import CONFIG, completed_task


def run(repo: Path, *args: str):
    return spark(repo, *args, env={**os.environ, "SPARK_SESSION_ID": "s1"})


def test_a_task_keeps_the_protocol_it_started_with(tmp_path: Path) -> None:
    """Failed before the fix: after the switch to full, cleanup of the task completed under light was
    refused for agent reports that light never asked for."""
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config=CONFIG)
    root = completed_task(repo)
    assert json.loads((root / "task.json").read_text())["protocol"] == "light"
    ok = run(repo, "start", "t2", "--agents", "a1")
    assert ok.returncode == 0, ok
    commit(repo, {".spark-git.toml": CONFIG.replace('"light"', '"full"')}, "config: protocol full")  # applies from now on
    r = run(repo, "status", "--json")
    assert any("task t2 runs under protocol light" in w and "now says full" in w for w in r.json["data"]["warnings"]), r.json
    t2 = next(t for t in r.json["data"]["tasks"] if t["task"] == "t2")
    assert t2["protocol"] == "light", t2
    r = run(repo, "cleanup", "t1", "--json")
    assert r.returncode == 0, r
    assert run(repo, "start", "t3", "--agents", "a1").returncode == 0
    assert json.loads((tmp_path / "repo.tasks" / "t3" / "task.json").read_text())["protocol"] == "full"
    assert git(repo, "status", "--porcelain") == ""


def test_a_task_json_without_protocol_reads_as_the_config(tmp_path: Path) -> None:
    """task.json from before the field: the config's protocol, as before (docs/decisions.md)."""
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config=CONFIG)
    assert run(repo, "start", "t1", "--agents", "a1").returncode == 0
    tj = tmp_path / "repo.tasks" / "t1" / "task.json"
    data = json.loads(tj.read_text())
    del data["protocol"]
    tj.write_text(json.dumps(data))
    r = run(repo, "status", "t1", "--json")
    assert r.returncode == 0 and r.json["data"]["tasks"][0]["protocol"] == "light", r
    assert not any("runs under protocol" in w for w in r.json["data"]["warnings"]), r.json


def test_the_walk_rules_are_fixed_at_start_too(tmp_path: Path) -> None:
    """[rules] requirements_min_bytes raised on main after the task started does not apply to it.
    Failed before the fix: the task's 3-byte reports no longer counted."""
    from tests.protokit import FULL_CONFIG, P
    from tests.test_protocol_rules import to_requirements
    from tests.test_update import REV, UPA, UPT

    p = P(tmp_path, config=FULL_CONFIG + "[rules]\nrequirements_min_bytes = 2\n")
    assert p.task_json()["rules"]["requirements_min_bytes"] == 2
    commit(p.repo, {".spark-git.toml": FULL_CONFIG + "[rules]\nrequirements_min_bytes = 5000\n"}, "stricter rules")
    to_requirements(p)
    for a in (REV, UPA, UPT):
        p.requirements(a, "ok\n")
        p.report(a)
    assert p.go()["to"] == "SYNTHESIS"
