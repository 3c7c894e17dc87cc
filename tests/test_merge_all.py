"""`spark-git merge <task> --all`: every agent in one process, each through its own gates; one
agent's refusal does not stop the others, and the exit code is that of the first refusal."""

from __future__ import annotations

from pathlib import Path

from fixtures.repo import git

from tests.mergekit import PY, Task, config, reachable_from_refs

# Fails when the worktree holds a file named BROKEN.
GATE = [PY, "-c", "import os, sys; sys.exit(4 if os.path.exists('BROKEN') else 0)"]


def test_all_lands_every_agent_with_one_gate_run_each(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1", "a2", "a3"], config(build=GATE))
    base = t.head()
    t.commit("a1", {"one.txt": "1\n"}, "[a1] one")
    t.commit("a2", {"two.txt": "2\n"}, "[a2] two")
    r = t.spark("--json", "merge", t.task, "--all")
    assert r.returncode == 0, r
    d = r.json["data"]
    assert [(m["agent"], len(m["landed"])) for m in d["merged"]] == [("a1", 1), ("a2", 1), ("a3", 0)]
    assert d["refused"] == []
    assert r.json["summary"] == "merged 2 agent(s) into t1, 1 with nothing new"
    head = t.head()
    assert git(t.repo, "rev-list", "--count", f"{base}..{head}") == "2"
    assert git(t.repo, "ls-tree", "--name-only", head, "one.txt", "two.txt").split() == ["one.txt", "two.txt"]
    assert t.head("a1") != head and t.head("a2") == head  # a2 was rebased onto a1's landing
    ran = [b for b in t.audit()["build_verifications"] if b["ran"]]
    assert [(b["agent"], b["result"]) for b in ran] == [("a1", "passed"), ("a2", "passed")]
    assert [c["agent"] for c in t.audit()["commits"]] == ["a1", "a2"]


def test_a_refused_agent_does_not_stop_the_others(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1", "a2", "a3"], config(build=GATE))
    base = t.head()
    bad = t.commit("a1", {"BROKEN": "x\n"}, "[a1] breaks the build")
    t.commit("a2", {"two.txt": "2\n"}, "[a2] two")
    r = t.spark("merge", t.task, "--all")
    assert r.returncode == 1, r
    lines = r.stdout.splitlines()
    assert lines[0] == "✗ merged 1 agent(s) into t1, 1 with nothing new; 1 refused: a1"
    assert lines[1] == "  ✓ a2: 1 commit(s)"
    assert lines[2].startswith(f"  t1: {base[:12]} → {t.head()[:12]}")
    assert "  · a3: nothing new" in lines
    refusal = [ln for ln in lines if ln.startswith("  ✗ a1: ")]
    assert len(refusal) == 1 and "gate 'build' failed (exit code 4)" in refusal[0], r.stdout
    assert git(t.repo, "ls-tree", "--name-only", t.head()).split() == [".spark-git.toml", "README.md", "src", "two.txt"]
    assert reachable_from_refs(t.repo, bad)
    j = t.spark("--json", "merge", t.task, "--all")  # again: a1 still fails, a2 and a3 have nothing new
    assert j.returncode == 1 and j.json["status"] == "FAIL", j
    assert [(x["agent"], x["exit_code"]) for x in j.json["data"]["refused"]] == [("a1", 1)]
    assert [len(m["landed"]) for m in j.json["data"]["merged"]] == [0, 0]


def test_usage_and_owner_refusals_change_nothing(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=GATE))
    t.commit("a1", {"one.txt": "1\n"}, "[a1] one")
    before = t.snapshot(["a1"])
    for args in ([], ["--all", "--agent", "a1"]):
        r = t.spark("--json", "merge", t.task, *args)
        assert r.returncode == 2 and r.json["summary"] == "give exactly one of --agent NAME or --all", r
    r = t.spark("--json", "merge", t.task, "--all", session="intruder")
    assert r.returncode == 3 and r.json["status"] == "BLOCKED" and "s1" in r.json["summary"], r
    assert t.snapshot(["a1"]) == before
    assert not (t.root / "logs").exists()
