"""Gate evidence parsed from what the gate wrote (gates/reports.py): a real pytest suite under
`coverage run` writes JUnit XML and coverage XML; their counts and percentage appear in
`status --json`, the audit trail, the gate note and the tree's verdict; `[gates.require]` blocks a
gate that exits 0 and misses a threshold, naming the key and both values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.repo import git, make_repo, spark

from spark_git.core.config import GatesConfig, ReportSpec, RequireConfig
from spark_git.gates import reports
from spark_git.gates.verdicts import fingerprint
from tests.mergekit import PY, Task, config
from tests.protokit import P
from tests.test_update import REV, UPA, UPT

CALC = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"  # 4 statements
TEST_ADD = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"  # covers 3 of them
TEST_SUB = "from calc import sub\n\n\ndef test_sub():\n    assert sub(3, 2) == 1\n"
IGNORE = "build/\ncoverage.xml\ncoverage.json\n.coverage\n__pycache__/\n.pytest_cache/\n"
# pytest under coverage, in the gate's worktree; the outer suite's plugins and cache stay out of it.
PYTEST = f"{PY} -m coverage run --include=calc.py -m pytest -q -p no:randomly -p no:cacheprovider --junitxml=build/junit.xml"


def _project(tmp_path: Path, gate: str, gates_extra: str) -> Task:
    cfg = config(build=gate, final=gate, extra="[approval]\nallow_non_interactive = true") + gates_extra  # gates_extra: inside [gates]
    files = {"README.md": "# calc\n", ".gitignore": IGNORE, "calc.py": CALC, "test_add.py": TEST_ADD}
    return Task(tmp_path, ["a1"], cfg, files=files)


def _status_gate(t: Task) -> dict:
    s = t.spark("--json", "status", "t1")
    assert s.returncode == 0, s
    return s.json["data"]["tasks"][0]["gate"]


def test_real_pytest_junit_and_coverage_xml_block_at_the_threshold_then_pass(tmp_path: Path) -> None:
    gate = f"{PYTEST} && {PY} -m coverage xml -q -o coverage.xml"
    t = _project(tmp_path, gate, 'junit = "build/junit.xml"\ncoverage = "coverage.xml"\n[gates.require]\ncoverage = 0.8\ntests_failed = 0\ntests_min = 1\n')
    t.commit("a1", {"calc.py": CALC + "\n\ndef mul(a, b):\n    return a * b\n"}, "[a1] mul")  # 6 statements, 4 covered (the defs run at import)
    before = (t.root / "task.json").read_bytes()
    r = t.merge("a1")
    assert r.returncode == 1, r  # pytest exited 0; the coverage threshold failed the gate
    assert "gates.require.coverage = 0.8: coverage is 0.6667 (coverage.xml)" in r.json["summary"]
    assert r.json["data"]["unmet"] == ["gates.require.coverage = 0.8: coverage is 0.6667 (coverage.xml)"]
    assert r.json["data"]["exit_code"] == 0
    assert (t.root / "task.json").read_bytes() == before  # a refused merge changes nothing
    g = _status_gate(t)
    assert g["gate"] == "build" and g["result"] == "failed" and g["agent"] == "a1"
    tests, cov = g["reports"]["tests"], g["reports"]["coverage"]
    assert (tests["total"], tests["passed"], tests["failed"], tests["errors"], tests["files"]) == (1, 1, 0, 0, ["build/junit.xml"])
    assert (cov["rate"], cov["lines_covered"], cov["lines_valid"], cov["format"]) == (0.6667, 4, 6, "xml")
    assert g["token"] == "build failed: 1 tests, cov 67%"
    human = t.spark("status", "t1")
    assert "gate build failed: 1 tests, cov 67%" in human.stdout
    assert t.audit()["build_verifications"][-1]["reports"]["unmet"] == g["reports"]["unmet"]

    t.commit("a1", {"test_sub.py": TEST_SUB, "test_mul.py": TEST_SUB.replace("sub", "mul").replace("(3, 2) == 1", "(3, 2) == 6")}, "[a1] tests")
    r = t.merge("a1")
    assert r.returncode == 0, r
    g = _status_gate(t)
    assert g["result"] == "passed" and g["reports"]["tests"]["total"] == 3 and g["reports"]["coverage"]["rate"] == 1.0
    assert g["reports"]["unmet"] == [] and g["token"] == "build passed: 3 tests, cov 100%"
    (note,) = [n for n in t.notes(t.head()) if n["kind"] == "gate"]
    assert note["reports"]["coverage"]["rate"] == 1.0 and note["reports"]["tests"]["passed"] == 3

    # complete reuses the build's verdict of this tree (same command, same reports): the evidence comes with it
    assert t.spark("approve", "t1", "--changes").returncode == 0
    c = t.spark("--json", "complete", "t1")
    assert c.returncode == 0, c
    assert not c.json["data"]["gate"]["ran"] and c.json["data"]["gate"]["reports"]["tests"]["total"] == 3
    final = _status_gate(t)
    assert final["gate"] == "final" and final["reports"]["coverage"]["rate"] == 1.0


def test_exit_0_with_failing_tests_in_junit_fails_tests_failed_and_json_coverage(tmp_path: Path) -> None:
    gate = f"{PYTEST}; {PY} -m coverage json -q -o coverage.json; exit 0"  # a gate that swallows pytest's exit code
    t = _project(tmp_path, gate, 'junit = "build/*.xml"\ncoverage = "coverage.json"\n[gates.require]\ntests_failed = 0\n')
    t.commit("a1", {"test_sub.py": TEST_SUB.replace("== 1", "== 7")}, "[a1] a wrong test")
    r = t.merge("a1")
    assert r.returncode == 1, r
    assert r.json["data"]["unmet"] == ["gates.require.tests_failed = 0: 1 failed and 0 errors"]
    assert r.json["data"]["failed_tests"] == ["test_sub::test_sub"]
    g = _status_gate(t)
    assert g["reports"]["tests"]["failed"] == 1 and g["reports"]["tests"]["total"] == 2
    assert g["reports"]["coverage"]["format"] == "json" and g["reports"]["coverage"]["rate"] == 1.0


def test_a_report_left_from_an_earlier_run_does_not_count(tmp_path: Path) -> None:
    t = _project(tmp_path, f"{PY} -c pass", 'junit = "build/junit.xml"\n[gates.require]\ntests_min = 1\n')
    stale = t.wt("a1") / "build" / "junit.xml"
    stale.parent.mkdir()
    stale.write_text('<testsuites><testsuite><testcase classname="x" name="y"/></testsuite></testsuites>')
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    r = t.merge("a1")
    assert r.returncode == 1, r
    assert r.json["data"]["unmet"] == [
        "gates.junit: no file matching 'build/junit.xml' was written by this run",
        "gates.require.tests_min = 1: no test counts were read (set gates.junit)",
    ]


def test_tests_min_blocks_a_suite_that_ran_nothing(tmp_path: Path) -> None:
    t = _project(tmp_path, f"{PYTEST} -k nothing-matches; exit 0", 'junit = "build/junit.xml"\n[gates.require]\ntests_min = 1\n')
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    r = t.merge("a1")
    assert r.returncode == 1, r
    assert r.json["data"]["unmet"] == ["gates.require.tests_min = 1: 0 tests ran"]


def test_a_threshold_is_part_of_the_verdict_fingerprint() -> None:
    spec = ReportSpec("junit.xml", None, RequireConfig(tests_min=1))
    stricter = ReportSpec("junit.xml", None, RequireConfig(tests_min=2))
    assert fingerprint(["make"], 60, {}, spec) != fingerprint(["make"], 60, {}, stricter)
    assert fingerprint(["make"], 60, {}, None) == fingerprint(["make"], 60, {})  # gates without reports keep their verdicts


def test_per_gate_reports_override_gates_and_empty_turns_one_off() -> None:
    g = GatesConfig.model_validate({"junit": "a.xml", "coverage": "c.xml", "require": {"coverage": 0.9},
                                    "reports": {"final": {"junit": "", "require": {"tests_min": 3}}}})
    assert g.reports_for("build") == ReportSpec("a.xml", "c.xml", RequireConfig(coverage=0.9))
    assert g.reports_for("final") == ReportSpec(None, "c.xml", RequireConfig(tests_min=3))
    assert GatesConfig().reports_for("build") is None


@pytest.mark.parametrize("path", ["/abs/junit.xml", "../junit.xml", "build/../../x.xml"])
def test_report_paths_outside_the_worktree_are_refused(tmp_path: Path, path: str) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"}, config=f"[gates.reports.build]\njunit = {json.dumps(path)}\n")
    r = spark(repo, "--json", "status")
    assert r.returncode == 2, r
    assert "gates.reports.build.junit: Value error, must be a path relative to the worktree, without '..'" in r.json["summary"]


def test_junit_with_suite_totals_only_and_errors(tmp_path: Path) -> None:
    (tmp_path / "a.xml").write_text('<testsuite tests="5" failures="1" errors="1" skipped="1"/>')
    (tmp_path / "b.xml").write_text('<testsuites><testsuite><testcase classname="m" name="t1"><error/></testcase>'
                                    '<testcase classname="m" name="t2"><skipped/></testcase><testcase name="t3"/></testsuite></testsuites>')
    c = reports.junit_counts([tmp_path / "a.xml", tmp_path / "b.xml"], tmp_path)
    assert (c.total, c.passed, c.failed, c.errors, c.skipped, c.failed_tests) == (8, 3, 1, 2, 2, ["m::t1"])
    (tmp_path / "bad.xml").write_text("<html/>")
    with pytest.raises(ValueError, match="not <testsuites>"):
        reports.junit_counts([tmp_path / "bad.xml"], tmp_path)


def test_status_without_any_gate_run_has_no_gate(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config())
    assert _status_gate(t) is None
    assert git(t.repo, "rev-parse", "--verify", "-q", "refs/notes/spark-verdicts", check=False) == ""


def test_final_gate_with_its_own_stricter_threshold_blocks_complete(tmp_path: Path) -> None:
    gate = f"{PYTEST} && {PY} -m coverage xml -q -o coverage.xml"
    t = _project(tmp_path, gate, 'junit = "build/junit.xml"\ncoverage = "coverage.xml"\n'
                                 '[gates.require]\ncoverage = 0.5\n[gates.reports.final.require]\ncoverage = 0.9\n')
    t.commit("a1", {"calc.py": CALC + "\n\ndef mul(a, b):\n    return a * b\n"}, "[a1] mul")
    m = t.spark("merge", "t1", "--agent", "a1")
    assert m.returncode == 0, m
    assert "(1 tests, cov 67%)" in m.stdout  # the human gate line
    assert t.spark("approve", "t1", "--changes").returncode == 0
    main_before = git(t.repo, "rev-parse", "main")
    c = t.spark("--json", "complete", "t1")
    assert c.returncode == 1, c
    assert "gates.require.coverage = 0.9: coverage is 0.6667 (coverage.xml)" in c.json["summary"] + json.dumps(c.json["data"])
    assert git(t.repo, "rev-parse", "main") == main_before  # nothing landed
    g = _status_gate(t)
    assert g["gate"] == "final" and g["result"] == "failed" and g["reports"]["unmet"] == ["gates.require.coverage = 0.9: coverage is 0.6667 (coverage.xml)"]


def test_without_junit_the_pytest_summary_gives_the_counts(tmp_path: Path) -> None:
    gate = f"{PY} -m pytest -q -p no:randomly -p no:cacheprovider -k nothing-matches; exit 0"
    t = _project(tmp_path, gate, "[gates.require]\ntests_min = 1\n")
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    r = t.merge("a1")
    assert r.returncode == 1, r
    assert r.json["data"]["unmet"] == ["gates.require.tests_min = 1: 0 tests ran"]
    assert _status_gate(t)["reports"]["tests"]["source"] == "pytest"


# A gate that always exits 0 and writes JUnit XML: one failing test case while fail.flag (ignored) exists.
JUNIT_GATE = [PY, "-c", (
    "import os; os.makedirs('build', exist_ok=True); bad = os.path.exists(os.environ['SPARK_TASK_WORKTREE'] + '/fail.flag'); "
    "open('build/junit.xml', 'w').write('<testsuite><testcase classname=\"t\" name=\"ok\"/>' "
    "+ ('<testcase classname=\"t\" name=\"bad\"><failure/></testcase>' if bad else '') + '</testsuite>')")]


def test_validation_to_review_is_refused_by_a_threshold_then_accepted(tmp_path: Path) -> None:
    cfg = (f"[gates]\nbuild = {json.dumps(JUNIT_GATE)}\njunit = \"build/junit.xml\"\n"
           "[gates.require]\ntests_failed = 0\n[approval]\nallow_non_interactive = true\n")
    files = {"README.md": "# demo\n", "src/app.py": "print('hi')\n", ".gitignore": "*.flag\nbuild/\n"}
    p = P(tmp_path, config=cfg, files=files)
    p.ok("classify", p.task, "--risk", "HIGH", "--why", "test")
    p.go(), p.go()
    for a in (REV, UPA, UPT):
        p.requirements(a)
        p.report(a)
    p.go()
    p.plans([REV, UPA, UPT])
    p.ok("approve", p.task, "--plan")
    p.go()
    p.commit(UPA, {"src/one.py": "one = 1\n"}, "the change")
    p.ok("merge", p.task, "--agent", UPA)
    for a in (UPA, UPT):
        p.report(a, "COMPLETE", "--work-remaining", "none")
    p.report(REV, "COMPLETE", "--decision", "APPROVED")
    assert p.go()["to"] == "VALIDATION"
    (p.wt() / "fail.flag").write_text("")
    before = p.snapshot()
    # the tree passed at the merge: --rerun, since only the ignored flag file makes this run fail
    r = p.spark("--json", "advance", p.task, "--to", "REVIEW", "--rerun")
    assert r.returncode == 3 and "gates.require.tests_failed = 0: 1 failed and 0 errors" in r.stdout, r
    assert p.snapshot() == before and p.state() == "VALIDATION"  # the refusal changed neither task.json nor the audit trail
    (p.wt() / "fail.flag").unlink()
    assert p.ok("advance", p.task, "--to", "REVIEW", "--rerun")["data"]["to"] == "REVIEW"
    gate = json.loads(p.spark("--json", "status", p.task).stdout)["data"]["tasks"][0]["gate"]
    assert gate["result"] == "passed" and gate["reports"]["tests"]["total"] == 1
