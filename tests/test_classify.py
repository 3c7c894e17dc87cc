"""Risk classification: the default pattern table, keyword escalation, config overrides, --risk."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from fixtures.repo import commit, git

from spark_git.core.config import Config, RiskConfig
from spark_git.ops.classify import decide
from tests.protokit import P

TABLE = [
    # paths, title, level, variant
    (["src/app.py"], "", "HIGH", "full"),
    (["Makefile"], "", "HIGH", "full"),
    ([".github/workflows/ci.yml"], "", "HIGH", "full"),
    (["lib/security/tokens.txt"], "", "HIGH", "full"),
    (["security/policy.txt"], "", "HIGH", "full"),
    (["tests/test_app.txt"], "", "MEDIUM", "full"),
    (["config/app.yaml"], "", "MEDIUM", "short"),
    (["config/app.yaml", "README.md"], "", "MEDIUM", "short"),
    (["config/app.yaml", "tests/data.txt"], "", "MEDIUM", "full"),
    (["STYLE.md"], "", "MEDIUM", "short"),  # style docs: MEDIUM patterns are tried before LOW ones
    (["README.md"], "", "LOW", "short"),
    (["docs/guide.rst", "TODO"], "", "LOW", "short"),
    (["notes.txt"], "", "LOW", "short"),
    (["README.md"], "Document the API", "MEDIUM", "short"),
    (["config/app.yaml"], "Security settings", "HIGH", "full"),
    (["src/app.py"], "Breaking change in the database layer", "HIGH", "full"),
    (["README.md"], "rapid prototyping", "LOW", "short"),  # "api" inside a word does not count
    (["data/blob.bin"], "", "MEDIUM", "full"),  # no pattern matched
    ([], "", "MEDIUM", "full"),
    ([], "performance work", "HIGH", "full"),
]


@pytest.mark.parametrize("paths,title,level,variant", TABLE)
def test_default_table(paths: list[str], title: str, level: str, variant: str) -> None:
    d = decide(paths, title, RiskConfig())
    assert (d.level, d.variant) == (level, variant), d.reasons
    assert d.agents == RiskConfig().agents[level]


def test_reasons_name_patterns_and_keywords() -> None:
    d = decide(["README.md", "src/x.go"], "Concurrent api", RiskConfig())
    assert d.level == "HIGH" and d.keywords == ["concurrent", "api"]
    assert "README.md: LOW (pattern *.md)" in d.reasons and "src/x.go: HIGH (pattern *.go)" in d.reasons


def test_classify_uses_the_task_branch_diff_and_writes_task_md(tmp_path: Path) -> None:
    p = P(tmp_path, title="Tidy docs")
    commit(p.wt(), {"docs/a.md": "a\n"}, "docs")  # the diff of the task branch against its base
    d = p.ok("classify", p.task)["data"]
    assert d["decision"]["level"] == "LOW" and [m["path"] for m in d["decision"]["paths"]] == ["docs/a.md"]
    assert d["added_agents"] == ["docs-updater"] and (p.wt("docs-updater") / ".git").exists()
    md = (p.root / "task.md").read_text()
    for section in ("## Task Objective", "## Scope", "## Stakeholder Agent Reports", "- `docs/a.md` (LOW)"):
        assert section in md
    tf = p.task_json()
    assert (tf["risk"], tf["variant"], tf["required_agents"]) == ("LOW", "short", ["docs-updater"])
    assert tf["classification"]["reasons"] == d["decision"]["reasons"]
    trail = json.loads((p.root / "audit-trail.json").read_text())
    ev = [e for e in trail["events"] if e["kind"] == "classified"]
    assert ev and ev[0]["level"] == "LOW" and ev[0]["reasons"] == d["decision"]["reasons"]


def test_config_overrides_patterns_keywords_and_agents(tmp_path: Path) -> None:
    cfg = """[risk]
high = ["*.sql"]
medium = []
low = ["*.py"]
keywords = ["migration"]
[risk.agents]
HIGH = ["db-reviewer", "db-updater"]
MEDIUM = ["db-reviewer"]
LOW = ["py-updater"]
"""
    p = P(tmp_path, title="Schema migration", config=cfg)
    assert decide(["src/app.py"], "", Config.model_validate(tomllib.loads(cfg)).risk).level == "LOW"
    d = p.ok("classify", p.task, "--files", "src/app.py")["data"]["decision"]
    assert d["level"] == "MEDIUM" and d["keywords"] == ["migration"] and d["agents"] == ["db-reviewer"]
    d = p.ok("classify", p.task, "--files", "schema.sql,src/app.py")["data"]["decision"]
    assert d["level"] == "HIGH" and d["agents"] == ["db-reviewer", "db-updater"]
    assert sorted(p.task_json()["agents"]) == ["db-reviewer", "db-updater"]


def test_risk_override_needs_why_and_is_logged(tmp_path: Path) -> None:
    p = P(tmp_path)
    before = p.snapshot()
    r = p.spark("--json", "classify", p.task, "--files", "README.md", "--risk", "HIGH")
    assert r.returncode == 2 and "--why" in r.stdout
    r = p.spark("--json", "classify", p.task, "--risk", "EXTREME", "--why", "x")
    assert r.returncode == 2 and "HIGH, MEDIUM or LOW" in r.stdout
    assert p.snapshot() == before
    d = p.ok("classify", p.task, "--files", "README.md", "--risk", "high", "--why", "touches the release notes pipeline")["data"]["decision"]
    assert (d["level"], d["variant"], d["override"]) == ("HIGH", "full", "touches the release notes pipeline")
    assert "--risk HIGH overrides LOW: touches the release notes pipeline" in d["reasons"]


def test_classify_refused_after_requirements_started(tmp_path: Path) -> None:
    p = P(tmp_path)
    p.ok("classify", p.task, "--files", "README.md")
    p.go(), p.go()
    before = p.snapshot()
    r = p.spark("--json", "classify", p.task, "--files", "src/app.py")
    assert r.returncode == 3 and "REQUIREMENTS" in r.stdout
    assert p.snapshot() == before
    assert git(p.repo, "branch", "--list", "task-t1-agent-architecture-reviewer") == ""
