"""Issue 12, "Wrong state": what a failure or a kill leaves is recorded, reported and repaired, and
nothing is recorded that did not happen."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures.repo import commit, git, make_repo, spark

CONFIG = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'


@pytest.fixture
def lrepo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config=CONFIG)


def run(repo: Path, *args: str, session: str = "s1", **kw):
    return spark(repo, *args, env={**os.environ, "SPARK_SESSION_ID": session}, **kw)


def ok(r):
    assert r.returncode == 0, r
    return r


def task_json(repo: Path, task: str = "t1") -> dict:
    return json.loads((repo.parent / "repo.tasks" / task / "task.json").read_text())


# -- 8: an unreadable status.json does not turn a landed merge into an unrecorded one --------------


def test_merge_with_an_unreadable_status_json_records_last_merge_sha(lrepo: Path) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    root = lrepo.parent / "repo.tasks/t1"
    commit(root / "agents/a1/code", {"a.txt": "a\n"}, "[a1] work")
    (root / "agents/a1/status.json").write_text("{ not json")
    r = ok(run(lrepo, "merge", "t1", "--agent", "a1", "--json"))
    sha = r.json["data"]["new_head"]
    assert git(lrepo, "rev-parse", "t1") == sha
    assert task_json(lrepo)["agents"]["a1"]["last_merge_sha"] == sha
    assert (root / "agents/a1/status.json").read_text() == "{ not json"  # the agent's file is left for doctor
    assert "status-corrupt" in [f["kind"] for f in run(lrepo, "doctor", "--json").json["data"]["findings"]]


def test_a_landing_recorded_in_notes_but_not_in_task_json_is_recorded_by_the_next_merge(lrepo: Path) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    root = lrepo.parent / "repo.tasks/t1"
    commit(root / "agents/a1/code", {"a.txt": "a\n"}, "[a1] work")
    sha = ok(run(lrepo, "merge", "t1", "--agent", "a1", "--json")).json["data"]["new_head"]
    p = root / "task.json"
    d = json.loads(p.read_text())
    d["agents"]["a1"]["last_merge_sha"] = None  # what the old failing merge left
    p.write_text(json.dumps(d))
    ok(run(lrepo, "merge", "t1", "--agent", "a1"))
    assert task_json(lrepo)["agents"]["a1"]["last_merge_sha"] == sha
