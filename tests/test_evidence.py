"""`report --evidence`: an agent's 004 Universal Output JSON / 000 SPARK state JSON is validated,
stored with its report bound to the task head, and a COMPLETE whose evidence says otherwise does not
count for the next transition (the refusal names the field and changes nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.protokit import FULL_CONFIG, P

REV, UP = "rev-reviewer", "up-updater"
CONFIG = FULL_CONFIG + f"""[risk]
replace = ["agents"]  # exactly these agents, not the defaults too
[risk.agents]
HIGH = ["{REV}", "{UP}"]
MEDIUM = ["{REV}", "{UP}"]
LOW = ["{REV}", "{UP}"]
"""


def output(status: str = "OK") -> dict:
    return {
        "status": status, "summary": f"work is {status}",
        "artifacts": {"files_changed": ["src/app.py"], "notes": ["n"]},
        "gates": {"meets_definition_of_done": status == "OK", "needs_review": True, "needs_tests": False, "security_concerns": []},
        "next": {"recommended_agent": "Reviewer", "recommended_task_id": "T-001", "reason": "review it"},
    }


def spark_state(violations: int = 0, can_proceed: bool = True, coverage: float = 0.97, failed: int = 0, status: str = "completed") -> dict:
    return {
        "id": "spark_20251030_143022", "version": "4.3", "agent": "implementer-spark",
        "state": {"status": status, "phase": 5, "started_at": "2025-10-30T14:30:22Z"},
        "quality": {"step_1_architecture": {"imports": 0, "circular": 0},
                    "step_6_testing": {"coverage": coverage, "tests_total": 45, "tests_passed": 45 - failed, "tests_failed": failed},
                    "violations_total": violations, "can_proceed": can_proceed},
        "evidence": {"files_created": ["src/auth/api.py"], "tests_executed": True, "coverage_report": "htmlcov/index.html"},
    }


def write(p: P, name: str, data: dict) -> str:
    f = p.repo.parent / name
    f.write_text(json.dumps(data))
    return str(f)


def at_requirements(tmp: Path, config: str = CONFIG) -> P:
    p = P(tmp, "ev", config=config)
    p.ok("classify", p.task, "--files", "src/app.py")
    p.go()
    p.go()
    for a in (REV, UP):
        p.requirements(a)
    p.report(UP)
    return p


def refused_naming(p: P, field: str) -> None:
    before = p.snapshot()
    r = p.advance("SYNTHESIS")
    assert r.returncode == 3, r
    unmet = r.json["data"]["unmet"]
    assert any(field in u and REV in u for u in unmet), (field, unmet)
    assert p.snapshot() == before, "a refusal changed task.json or audit-trail.json"
    assert p.state() == "REQUIREMENTS"


def test_ok_output_is_complete_evidence_stored_and_bound_to_the_head(tmp_path: Path) -> None:
    p = at_requirements(tmp_path)
    f = write(p, "out.json", output("OK"))
    d = p.report(REV, "COMPLETE", "--evidence", f)["data"]
    ev = d["status"]["evidence"]
    assert ev["output"]["status"] == "OK" and ev["output"]["next"]["recommended_agent"] == "Reviewer"
    assert ev["task_head"] == p.head() and ev["files"][0]["path"] == f and ev["files"][0]["kind"] == "output"
    stored = json.loads(p.status_file(REV).read_text())
    assert stored["evidence"]["output"]["summary"] == "work is OK"
    p.go("SYNTHESIS")
    assert p.state() == "SYNTHESIS"


@pytest.mark.parametrize("status", ["BLOCKED", "NEEDS_INFO", "NEEDS_DECISION", "FAIL"])
def test_output_status_other_than_ok_refuses_then_ok_passes(tmp_path: Path, status: str) -> None:
    p = at_requirements(tmp_path)
    p.report(REV, "COMPLETE", "--evidence", write(p, "bad.json", output(status)))
    refused_naming(p, f"status is {status}")
    p.report(REV, "COMPLETE", "--evidence", write(p, "good.json", output("OK")))
    p.go("SYNTHESIS")
    assert p.state() == "SYNTHESIS"


@pytest.mark.parametrize(("state", "field"), [
    ({"can_proceed": False}, "quality.can_proceed"),
    ({"violations": 51, "can_proceed": True}, "quality.violations_total"),
    ({"failed": 2}, "quality.step_6_testing.tests_failed"),
    ({"status": "failed"}, "state.status is failed, not completed"),
    ({"status": "running"}, "state.status is running, not completed"),
])
def test_spark_state_quality_refuses(tmp_path: Path, state: dict, field: str) -> None:
    p = at_requirements(tmp_path)
    p.report(REV, "COMPLETE", "--evidence", write(p, "s.json", spark_state(**state)), "--evidence", write(p, "o.json", output("OK")))
    refused_naming(p, field)


def test_coverage_below_the_configured_minimum_refuses(tmp_path: Path) -> None:
    p = at_requirements(tmp_path, CONFIG + "[evidence]\ncoverage_min = 0.95\n")
    p.report(REV, "COMPLETE", "--evidence", write(p, "s.json", spark_state(coverage=0.87)))
    refused_naming(p, "quality.step_6_testing.coverage")
    p.report(REV, "COMPLETE", "--evidence", write(p, "s.json", spark_state(coverage=0.97)))
    p.go("SYNTHESIS")
    assert p.state() == "SYNTHESIS"


def test_coverage_has_no_minimum_by_default(tmp_path: Path) -> None:
    p = at_requirements(tmp_path)
    p.report(REV, "COMPLETE", "--evidence", write(p, "s.json", spark_state(coverage=0.10)))
    p.go("SYNTHESIS")
    assert p.state() == "SYNTHESIS"


@pytest.mark.parametrize(("data", "text"), [
    ({"status": "MAYBE", "summary": "x"}, "status"),
    ({"status": "OK"}, "summary"),
    ({"quality": {"violations_total": 0}}, "can_proceed"),
])
def test_invalid_evidence_is_refused_and_nothing_is_written(tmp_path: Path, data: dict, text: str) -> None:
    p = at_requirements(tmp_path)
    before = (p.snapshot(), p.status_file(UP).read_bytes(), p.status_file(REV).read_bytes())
    r = p.spark("--json", "report", p.task, "--agent", REV, "--status", "COMPLETE", "--evidence", write(p, "x.json", data))
    assert r.returncode == 2, r
    assert text in r.json["summary"] + json.dumps(r.json["data"])
    assert (p.snapshot(), p.status_file(UP).read_bytes(), p.status_file(REV).read_bytes()) == before


def test_evidence_schemas_are_published(tmp_path: Path) -> None:
    p = P(tmp_path, "sch", config=CONFIG)
    schemas = p.ok("schema")["data"]["schemas"]
    assert set(schemas["evidence output"]["properties"]["status"]["enum"]) == {"OK", "BLOCKED", "NEEDS_INFO", "NEEDS_DECISION", "FAIL"}
    assert "can_proceed" in schemas["evidence spark"]["$defs"]["SparkQuality"]["properties"]
    assert "evidence" in schemas["status.json"]["properties"]


def test_human_report_mentions_the_evidence(tmp_path: Path) -> None:
    p = at_requirements(tmp_path)
    r = p.spark("report", p.task, "--agent", REV, "--status", "COMPLETE", "--evidence", write(p, "o.json", output("FAIL")))
    assert r.returncode == 0 and "with evidence (output FAIL)" in r.stdout, r
