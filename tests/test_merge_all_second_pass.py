"""`merge --all` gives every refused agent a second pass once others have landed: join order is not
dependency order. A refusal that the second pass cures is worded as a matter of merge order; one
that persists says so too."""

from __future__ import annotations

from pathlib import Path

from fixtures.repo import git

from tests.mergekit import PY, Task, config

# The tests need the code: fails when test_feature.py is there without feature.py; also fails on BROKEN.
GATE = [PY, "-c", "import os, sys; sys.exit(1 if os.path.exists('BROKEN') or (os.path.exists('test_feature.py') and not os.path.exists('feature.py')) else 0)"]


def test_the_test_writer_lands_on_the_second_pass_after_the_code(tmp_path: Path) -> None:
    t = Task(tmp_path, ["tester", "coder"], config(build=GATE))
    t.commit("tester", {"test_feature.py": "def test_it(): pass\n"}, "[tester] tests for the feature")
    t.commit("coder", {"feature.py": "X = 1\n"}, "[coder] the feature")
    r = t.spark("--json", "merge", t.task, "--all")
    assert r.returncode == 0, r
    d = r.json["data"]
    assert d["refused"] == []
    assert [(m["agent"], len(m["landed"]), m["second_pass"]) for m in d["merged"]] == [("coder", 1, False), ("tester", 1, True)]
    tester = d["merged"][1]
    assert tester["landed_after"] == ["coder"] and "gate 'build' failed" in tester["first_refusal"]
    assert r.json["summary"] == "merged 2 agent(s) into t1 (1 on the second pass), 0 with nothing new"
    assert git(t.repo, "ls-tree", "--name-only", t.head(), "feature.py", "test_feature.py").split() == ["feature.py", "test_feature.py"]
    h = t.spark("merge", t.task, "--all")  # again: both landed, nothing left to do
    assert h.returncode == 0 and "nothing new" in h.stdout, h


def test_human_output_says_landed_on_the_second_pass(tmp_path: Path) -> None:
    t = Task(tmp_path, ["tester", "coder"], config(build=GATE))
    t.commit("tester", {"test_feature.py": "def test_it(): pass\n"}, "[tester] tests for the feature")
    t.commit("coder", {"feature.py": "X = 1\n"}, "[coder] the feature")
    r = t.spark("merge", t.task, "--all")
    assert r.returncode == 0, r
    assert "  ✓ tester: 1 commit(s) — landed on the second pass, after coder" in r.stdout.splitlines(), r.stdout
    assert any(ln.startswith("    first pass (merge order): tester was not merged into t1: gate 'build' failed") for ln in r.stdout.splitlines()), r.stdout


def test_a_refusal_that_persists_is_not_blamed_on_order(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1", "a2"], config(build=GATE))
    t.commit("a1", {"BROKEN": "x\n"}, "[a1] breaks the build")
    t.commit("a2", {"two.txt": "2\n"}, "[a2] two")
    r = t.spark("--json", "merge", t.task, "--all")
    assert r.returncode == 1, r
    (refused,) = r.json["data"]["refused"]
    assert refused["agent"] == "a1" and refused["passes"] == 2
    runs = [b["agent"] for b in t.audit()["build_verifications"] if b["ran"]]
    assert runs == ["a1", "a2", "a1"]  # a1 again after a2 landed: its branch was rebased, a new tree
    h = t.spark("merge", t.task, "--all")  # nothing landed after a1's attempt now: no second pass
    assert h.returncode == 1
    assert [b["agent"] for b in t.audit()["build_verifications"] if b["ran"]] == ["a1", "a2", "a1", "a1"]
    (line,) = [ln for ln in h.stdout.splitlines() if ln.startswith("  ✗ a1: ")]
    assert "second pass" not in line


def test_refused_on_both_passes_is_worded_so(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1", "a2"], config(build=GATE))
    t.commit("a1", {"BROKEN": "x\n"}, "[a1] breaks the build")
    t.commit("a2", {"two.txt": "2\n"}, "[a2] two")
    r = t.spark("merge", t.task, "--all")
    assert r.returncode == 1, r
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("  ✗ a1: ")]
    assert line.endswith("(refused again on the second pass, after the others landed: not a matter of merge order)"), line
