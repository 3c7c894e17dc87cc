"""A landing's audit entries (its commits and the `merged` event) go into the trail in one write
(issue 31, the bench_merge budget): all of them or none, in order, under the audit mutex."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.repo import make_repo

from spark_git.core.layout import Layout
from spark_git.state import audit
from tests.mergekit import Task, config


def test_entries_are_appended_in_order_in_one_write(tmp_path: Path) -> None:
    layout = Layout.discover(make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config='protocol = "light"\n'))
    layout.task_dir("t1").mkdir(parents=True)
    audit.record_many(layout, "t1", [("commits", {"sha": "a"}), ("commits", {"sha": "b"}), audit.event_entry("merged", "s1", commits=2)], "s1")
    trail = json.loads(layout.audit_trail("t1").read_text())
    assert [c["sha"] for c in trail["commits"]] == ["a", "b"]
    assert trail["events"][-1]["kind"] == "merged" and trail["events"][-1]["session_id"] == "s1"
    assert trail["events"][-1]["at"] == trail["commits"][0]["at"]  # one write: one time


def test_an_unknown_section_writes_nothing(tmp_path: Path) -> None:
    layout = Layout.discover(make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config='protocol = "light"\n'))
    layout.task_dir("t1").mkdir(parents=True)
    with pytest.raises(ValueError, match="unknown audit section"):
        audit.record_many(layout, "t1", [("commits", {"sha": "a"}), ("nonsense", {})], "s1")
    assert not layout.audit_trail("t1").exists()


def test_a_merge_records_its_commits_and_the_event_together(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build="true"))
    t.commit("a1", {"one.py": "x = 1\n"}, "[a1] one")
    t.commit("a1", {"two.py": "y = 2\n"}, "[a1] two")
    r = t.merge("a1")
    assert r.returncode == 0, r
    trail = t.audit()
    merged = [e for e in trail["events"] if e["kind"] == "merged"]
    assert len(merged) == 1 and merged[0]["commits"] == 2 and merged[0]["agent"] == "a1"
    landed = [c for c in trail["commits"] if c["agent"] == "a1"]
    assert [c["message"] for c in landed] == ["[a1] one", "[a1] two"]
    assert {c["at"] for c in landed} == {merged[0]["at"]}
