"""Risk classification: the default pattern table, keyword escalation, config overrides, --risk."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from fixtures.repo import commit, git

from spark_git.core.config import Config, RiskConfig
from spark_git.ops.life.classify import decide
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
    (["data/blob.bin"], "", "HIGH", "full"),  # no pattern matched: 003, when uncertain, HIGH
    ([], "", "HIGH", "full"),
    ([], "performance work", "HIGH", "full"),
    # 003's tables: critical .md files HIGH, test files MEDIUM before the language globs
    (["CLAUDE.md"], "", "HIGH", "full"),
    (["docs/project/task-protocol.md"], "", "HIGH", "full"),
    (["docs/project/critical-rules.md"], "", "HIGH", "full"),
    (["src/test/java/app/FooTest.java"], "", "MEDIUM", "full"),
    (["src/main/java/app/Foo.java"], "", "HIGH", "full"),
    (["tests/test_app.py"], "", "MEDIUM", "full"),
    (["pkg/test_util.py", "lib/x_test.go", "web/a.test.ts"], "", "MEDIUM", "full"),
    (["src/main/resources/app/db.properties"], "", "MEDIUM", "short"),
    (["docs/code-style/java.md"], "", "MEDIUM", "short"),
    (["docs/guide.md"], "Move the session state", "MEDIUM", "short"),  # 003 keywords: state, dependency
    (["docs/guide.md"], "Bump a dependency", "MEDIUM", "short"),
]


CONTENT = {"lib/security/tokens.txt": ["security-reviewer"], "security/policy.txt": ["security-reviewer"],
           "STYLE.md": ["style-reviewer"], "docs/code-style/java.md": ["style-reviewer"], "Security settings": ["security-reviewer"], "performance work": ["performance-reviewer"]}


@pytest.mark.parametrize("paths,title,level,variant", TABLE)
def test_default_table(paths: list[str], title: str, level: str, variant: str) -> None:
    d = decide(paths, title, RiskConfig())
    assert (d.level, d.variant) == (level, variant), d.reasons
    extra = next((v for k, v in CONTENT.items() if k == title or k in paths), [])
    assert d.agents == RiskConfig().agents[level] + extra
    assert "architecture-reviewer" in d.agents  # 003: mandatory for every task that modifies files


def test_reasons_name_patterns_and_keywords() -> None:
    d = decide(["README.md", "src/x.go"], "Concurrent api", RiskConfig())
    assert d.level == "HIGH" and d.keywords == ["concurrent", "api"]
    assert "README.md: LOW (pattern *.md in low)" in d.reasons and "src/x.go: HIGH (pattern *.go in high)" in d.reasons


def test_classify_uses_the_task_branch_diff_and_writes_task_md(tmp_path: Path) -> None:
    p = P(tmp_path, title="Tidy docs")
    commit(p.wt(), {"docs/a.md": "a\n"}, "docs")  # the diff of the task branch against its base
    d = p.ok("classify", p.task)["data"]
    assert d["decision"]["level"] == "LOW" and [m["path"] for m in d["decision"]["paths"]] == ["docs/a.md"]
    assert d["added_agents"] == ["architecture-reviewer", "docs-updater"] and (p.wt("docs-updater") / ".git").exists()
    md = (p.root / "task.md").read_text()
    for section in ("## Task Objective", "## Scope", "## Stakeholder Agent Reports", "- `docs/a.md` (LOW)"):
        assert section in md
    tf = p.task_json()
    assert (tf["risk"], tf["variant"], tf["required_agents"]) == ("LOW", "short", ["architecture-reviewer", "docs-updater"])
    assert tf["classification"]["reasons"] == d["decision"]["reasons"]
    trail = json.loads((p.root / "audit-trail.json").read_text())
    ev = [e for e in trail["events"] if e["kind"] == "classified"]
    assert ev and ev[0]["level"] == "LOW" and ev[0]["reasons"] == d["decision"]["reasons"]


def test_config_extends_the_defaults(tmp_path: Path) -> None:
    cfg = """[risk]
high = ["*.sql"]
low = ["src/generated/**"]
keywords = ["migration"]
[risk.agents]
MEDIUM = ["db-reviewer"]
[risk.content_agents]
schema = ["db-reviewer"]
"""
    risk = Config.model_validate(tomllib.loads(cfg)).risk
    assert risk.high[:2] == ["*.sql", "CLAUDE.md"] and "migration" in risk.keywords and "security" in risk.keywords
    assert risk.agents["MEDIUM"] == ["architecture-reviewer", "test-updater", "db-reviewer"]
    assert risk.agents["HIGH"] == RiskConfig().agents["HIGH"]  # a level not given keeps its defaults
    assert decide(["src/generated/x.py"], "", risk).level == "HIGH"  # HIGH (*.py) is tried before LOW
    d = decide(["docs/a.md"], "Schema migration", risk)
    assert d.level == "MEDIUM" and d.agents == ["architecture-reviewer", "test-updater", "db-reviewer"]


def test_config_replaces_with_replace(tmp_path: Path) -> None:
    cfg = """[risk]
replace = true
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
    assert Config.model_validate(tomllib.loads(cfg.replace("replace = true", 'replace = ["agents"]'))).risk.low[0] == "*.py"
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
    assert git(p.repo, "branch", "--list", "task-t1-agent-architecture-updater") == ""


def test_files_take_several_paths_and_keywords_come_from_the_objective(tmp_path: Path) -> None:
    p = P(tmp_path, title="Tidy")
    md = p.root / "task.md"
    p.ok("classify", p.task, "--files", "docs/a.md")
    md.write_text(md.read_text().replace("\nTidy\n", "\nMake the login flow check the password policy (security).\n"))
    d = p.ok("classify", p.task, "--files", "docs/a.md", "docs/b.md", "README.md")["data"]["decision"]
    assert [m["path"] for m in d["paths"]] == ["README.md", "docs/a.md", "docs/b.md"]
    assert d["keywords"] == ["security"] and d["level"] == "MEDIUM"  # escalated by the objective, not the title
    assert "security-reviewer" in d["agents"] and d["content_agents"]["security-reviewer"] == ["login", "password", "security"]
    r = p.spark("--json", "classify", p.task, "docs/a.md")
    assert r.returncode == 2 and "--files a b c" in r.stdout


def test_classify_again_rewrites_only_what_it_generated(tmp_path: Path) -> None:
    p = P(tmp_path, title="Tidy docs")
    p.ok("classify", p.task, "--files", "docs/a.md")
    md = p.root / "task.md"
    text = md.read_text().replace("\nTidy docs\n", "\nThe objective, written by the human.\n") + "\n## Notes\n\nkeep me\n"
    md.write_text(text)
    d = p.ok("classify", p.task, "--files", "src/app.py")["data"]
    assert d["task_md_written"] is True
    new = md.read_text()
    assert "The objective, written by the human." in new and "## Notes\n\nkeep me" in new
    assert "- `src/app.py` (HIGH)" in new and "- `docs/a.md` (LOW)" not in new
    assert "Risk HIGH, variant full" in new and "- architecture-updater: `" in new


def test_readme_config_sample_is_valid_and_names_the_default_agents() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    sample = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    cfg = Config.model_validate(tomllib.loads(sample))
    defaults = {a for agents in RiskConfig().agents.values() for a in agents}
    assert set(cfg.default_agents) <= defaults  # the names README suggests are the names classify selects
    assert cfg.risk.agents["HIGH"] == [*RiskConfig().agents["HIGH"], "db-reviewer"]  # extended, not replaced
    assert cfg.risk.agents["MEDIUM"] == RiskConfig().agents["MEDIUM"]
