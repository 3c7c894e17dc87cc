"""Gate verdicts keyed by tree (refs/notes/spark-verdicts): a tree that passed a gate is not gated
again by the same gate (merge then complete = one run), a failure is never reused, a tree that
failed and then passed is flagged flaky, `--rerun` forces a run. Runs are counted by a gate that
appends to a file outside the repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.repo import git

from spark_git.gates.verdicts import fingerprint
from tests.mergekit import PY, Task, config

# The gate counts its runs in a file outside the repository, which the gate box hides: verdict reuse
# is what is tested (tests/test_gate_box.py tests the box).
pytestmark = pytest.mark.usefixtures("unboxed")


def _gate(counter: Path, fail_flag: Path) -> list[str]:
    # Counts its runs; fails while `fail_flag` exists (both outside the repository).
    return [PY, "-c", f"import os, sys; open({str(counter)!r}, 'a').write('run\\n'); sys.exit(3 if os.path.exists({str(fail_flag)!r}) else 0)"]


def _runs(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def _verdicts(t: Task, tree: str) -> list[dict]:
    text = git(t.repo, "notes", "--ref=refs/notes/spark-verdicts", "show", tree, check=False)
    return [json.loads(ln) for ln in text.splitlines() if ln.strip()]


def test_merge_then_complete_on_the_same_tree_is_one_gate_run(tmp_path: Path) -> None:
    counter, flag = tmp_path / "runs", tmp_path / "fail"
    gate = _gate(counter, flag)
    t = Task(tmp_path, ["a1"], config(build=gate, final=gate, non_interactive=True))
    t.commit("a1", {"feature.txt": "v1\n"}, "[a1] feature")
    m = t.merge("a1")
    assert m.returncode == 0, m
    assert _runs(counter) == 1 and m.json["data"]["gate"]["ran"] and m.json["data"]["gate"]["reused_from"] is None
    assert t.spark("approve", "t1", "--changes").returncode == 0
    c = t.spark("--json", "complete", "t1")
    assert c.returncode == 0, c
    assert _runs(counter) == 1  # the final gate reused the build gate's verdict of the same tree
    gate_ev = c.json["data"]["gate"]
    tree = git(t.repo, "rev-parse", f"{t.head()}^{{tree}}")
    assert gate_ev["passed"] and not gate_ev["ran"] and gate_ev["tree"] == tree
    assert gate_ev["reused_from"].startswith("build gate of t1/a1 at ") and gate_ev["log_path"] == m.json["data"]["gate"]["log_path"]
    assert git(t.repo, "rev-parse", "main^2") == t.head()
    final = [b for b in t.audit()["build_verifications"] if b["gate"] == "final"]
    assert len(final) == 1 and final[0]["result"] == "passed" and final[0]["reused_from"] == gate_ev["reused_from"]
    (v,) = _verdicts(t, tree)  # one line: the run that happened
    assert v["result"] == "passed" and v["gate"] == "build" and v["fingerprint"] == gate_ev["fingerprint"] and v["where"] == "t1/a1"
    raw = git(t.repo, "notes", "--ref=refs/notes/spark-verdicts", "show", tree)
    assert raw == json.dumps(v, sort_keys=True, separators=(",", ":"))  # canonical JSON lines


def test_human_output_names_the_reused_verdict(tmp_path: Path) -> None:
    counter, flag = tmp_path / "runs", tmp_path / "fail"
    gate = _gate(counter, flag)
    t = Task(tmp_path, ["a1"], config(build=gate, final=gate, non_interactive=True))
    t.commit("a1", {"feature.txt": "v1\n"}, "[a1] feature")
    assert t.merge("a1").returncode == 0
    assert t.spark("approve", "t1", "--changes").returncode == 0
    c = t.spark("complete", "t1")
    assert c.returncode == 0, c
    tree = git(t.repo, "rev-parse", f"{t.head()}^{{tree}}")
    assert f"gate final: passed — reused verdict of {tree[:12]} from build gate of t1/a1 at " in c.stdout, c.stdout


def test_rerun_forces_a_fresh_run(tmp_path: Path) -> None:
    counter, flag = tmp_path / "runs", tmp_path / "fail"
    gate = _gate(counter, flag)
    t = Task(tmp_path, ["a1"], config(build=gate, final=gate, non_interactive=True))
    t.commit("a1", {"feature.txt": "v1\n"}, "[a1] feature")
    assert t.merge("a1").returncode == 0
    assert t.spark("approve", "t1", "--changes").returncode == 0
    c = t.spark("--json", "complete", "t1", "--rerun")
    assert c.returncode == 0, c
    assert _runs(counter) == 2 and c.json["data"]["gate"]["ran"] and c.json["data"]["gate"]["reused_from"] is None
    tree = git(t.repo, "rev-parse", f"{t.head()}^{{tree}}")
    assert [v["gate"] for v in _verdicts(t, tree)] == ["build", "final"]


def test_a_failure_is_never_reused_and_a_later_pass_is_flagged_flaky(tmp_path: Path) -> None:
    counter, flag = tmp_path / "runs", tmp_path / "fail"
    gate = _gate(counter, flag)
    t = Task(tmp_path, ["a1"], config(build=gate))
    t.commit("a1", {"feature.txt": "v1\n"}, "[a1] feature")
    flag.write_text("x")
    before = t.head()
    r = t.merge("a1")
    assert r.returncode == 1 and t.head() == before, r
    r = t.merge("a1")  # the same tree again: the failure is not reused, the gate runs again
    assert r.returncode == 1 and _runs(counter) == 2, r
    flag.unlink()
    r = t.merge("a1")
    assert r.returncode == 0 and _runs(counter) == 3, r
    assert r.json["data"]["gate"]["flaky"] is True
    tree = git(t.repo, "rev-parse", f"{t.head()}^{{tree}}")
    assert [v["result"] for v in _verdicts(t, tree)] == ["failed", "failed", "passed"]
    flaky = [e for e in t.audit()["events"] if e["kind"] == "gate_flaky"]
    assert len(flaky) == 1 and flaky[0]["tree"] == tree and flaky[0]["gate"] == "build"


def test_the_fingerprint_ignores_where_the_gate_runs_but_not_what_it_runs() -> None:
    env = {"PATH": "/usr/bin", "HOME": "/home/u", "SPARK_TASK": "t1", "SPARK_AGENT": "a1", "SPARK_WORKTREE": "/w/a1", "SPARK_PORT": "8001",
           "SPARK_TASK_WORKTREE": "/w/code", "SPARK_SESSION_ID": "s1", "PWD": "/w/a1"}
    other_place = {**env, "SPARK_TASK": "t2", "SPARK_AGENT": "", "SPARK_WORKTREE": "/w/code", "SPARK_PORT": "8002", "SPARK_SESSION_ID": "s2", "PWD": "/x"}
    fp = fingerprint(["pytest", "-q"], 600, env)
    assert fingerprint(["pytest", "-q"], 600.0, other_place) == fp
    assert fingerprint(["pytest", "-x"], 600, env) != fp
    assert fingerprint("pytest -q", 600, env) != fp
    assert fingerprint(["pytest", "-q"], 60, env) != fp
    assert fingerprint(["pytest", "-q"], 600, {**env, "PATH": "/opt/bin"}) != fp
    assert fingerprint(["pytest", "-q"], 600, {**env, "PYTHONHASHSEED": "0"}) != fp
