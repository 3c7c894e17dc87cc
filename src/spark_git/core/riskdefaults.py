"""The risk tables of the Task State Machine Protocol (seed 003, "RISK-BASED AGENT SELECTION ENGINE"),
the defaults of `[risk]`. A repo's lists extend these (`[risk] replace = [...]` replaces); see
core/config.py `merge_risk`.

Patterns are gitignore-style (the dialect `worktree.include` and `.worktreeinclude` use): a pattern
without a slash matches a name at any depth, one with a slash is anchored at the repo root, `**`
crosses directories. Lists are tried in the order tests, high, medium, low; the first match decides,
a path nothing matches is HIGH (003: "Default to HIGH risk if uncertain")."""

from __future__ import annotations

# Tried first, so a test file is MEDIUM even though `*.py` / `src/**/*.java` are HIGH (003: test files MEDIUM).
TESTS = [
    "tests/", "test/", "tests/**", "src/test/**/*.java", "test_*.py", "*_test.*", "*_tests.*",
    "*Test.java", "*Tests.java", "*.test.*", "*.spec.*", "conftest.py",
]
HIGH = [
    # 003 HIGH: critical configuration and protocol documents, build, CI, security, style enforcement
    "CLAUDE.md", "docs/project/task-protocol.md", "docs/project/critical-rules.md",
    "src/**/*.java", "pom.xml", ".github/**", "**/security/**", "checkstyle.xml", "**/checkstyle*.xml",
    # the same kinds of file in other ecosystems
    "AGENTS.md", "*.py", "*.js", "*.ts", "*.tsx", "*.go", "*.rs", "*.java", "*.c", "*.h", "*.cpp", "*.rb",
    "Makefile", "*.toml", "*.gradle", "package.json", "Dockerfile", ".gitlab-ci.yml", ".ci/**", "**/auth/**", "*.lock",
]
MEDIUM = [
    # 003 MEDIUM: style documentation, resource configuration
    "docs/code-style/**", "**/resources/**/*.properties",
    "*.yaml", "*.yml", "*.json", "*.ini", "*.cfg", "*.properties", "*.css", ".editorconfig", "STYLE*",
]
LOW = ["*.md", "docs/**/*.md", "todo.md", "*.txt", "*.log", "**/README*", "*.rst", "docs/**", "TODO*", "LICENSE*"]
KEYWORDS = ["security", "architecture", "breaking", "performance", "concurrent", "database", "api", "state", "dependency"]
# architecture-reviewer in every level: 003 makes it mandatory for every task that modifies files.
AGENTS = {
    "HIGH": ["architecture-reviewer", "architecture-updater", "test-updater"],
    "MEDIUM": ["architecture-reviewer", "test-updater"],
    "LOW": ["architecture-reviewer", "docs-updater"],
}
# 003 "AGENT SELECTION DECISION TREE": a word in the title, objective or changed paths → agents added.
CONTENT_AGENTS = {
    "auth": ["security-reviewer"], "authentication": ["security-reviewer"], "authorization": ["security-reviewer"],
    "login": ["security-reviewer"], "password": ["security-reviewer"], "encryption": ["security-reviewer"],
    "crypto": ["security-reviewer"], "cryptographic": ["security-reviewer"], "sanitization": ["security-reviewer"],
    "input validation": ["security-reviewer"], "external api": ["security-reviewer"], "security": ["security-reviewer"],
    "performance": ["performance-reviewer"], "optimization": ["performance-reviewer"], "optimize": ["performance-reviewer"],
    "algorithm": ["performance-reviewer"], "query": ["performance-reviewer"], "memory": ["performance-reviewer"],
    "benchmark": ["performance-reviewer"],
    "parser": ["performance-reviewer", "security-reviewer"],
    "ast": ["quality-reviewer", "test-reviewer"],
    "style": ["style-reviewer"], "formatting": ["style-reviewer"], "checkstyle": ["style-reviewer"],
    "ui": ["usability-reviewer"], "ux": ["usability-reviewer"], "user-facing": ["usability-reviewer"],
}
# 003 "Domain Authority Framework": in SCOPE_NEGOTIATION a veto role's RESOLVE_NOW cannot be deferred,
# and a final-say role's scope decision settles a disagreement among the other reviewers.
VETO = ["security-reviewer"]
FINAL_SAY = ["architecture-reviewer"]
