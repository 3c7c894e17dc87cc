"""`spark-git hooks install|uninstall`: merged into Claude Code's settings, idempotent, reversible."""

from __future__ import annotations

import json
from pathlib import Path

ORIGINAL = {
    "permissions": {"allow": ["Bash(npm run test:*)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/audit-bash", "timeout": 5}]},
            {"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --check"}]},
        ],
        "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "ruff format"}]}],
        "SessionStart": [{"hooks": [{"type": "command", "command": "echo welcome"}]}],
    },
    "model": "opus",
}


CLAUDE_OURS = [
    ("PreToolUse", "spark-git hook pre-tool-use"), ("SessionStart", "spark-git hook session-start"),
    ("WorktreeCreate", "spark-git hook worktree-create"), ("WorktreeRemove", "spark-git hook worktree-remove"),
]


def _ours(data: dict) -> list[tuple[str, str]]:
    return [
        (event, h["command"])
        for event, groups in data.get("hooks", {}).items()
        for g in groups
        for h in g["hooks"]
        if h["command"].startswith("spark-git ")
    ]


def test_install_twice_keeps_other_hooks_and_adds_ours_once_then_uninstall_restores(repo: Path, cli) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(ORIGINAL, indent=4))
    r1 = cli("hooks", "install", "--json")
    assert r1.returncode == 0 and r1.json["data"]["changed"] is True, r1
    once = settings.read_bytes()
    r2 = cli("hooks", "install", "--json")
    assert r2.returncode == 0 and r2.json["data"]["changed"] is False, r2
    assert settings.read_bytes() == once  # idempotent: the second run writes nothing
    data = json.loads(once)  # valid JSON
    assert _ours(data) == CLAUDE_OURS
    ours = data["hooks"]["PreToolUse"][-1]
    assert ours == {"matcher": "Write|Edit|MultiEdit|NotebookEdit|Bash|PowerShell", "hooks": [{"type": "command", "command": "spark-git hook pre-tool-use", "onFailure": "block"}]}
    # everything that was there is still there, unchanged and in order
    for event, groups in ORIGINAL["hooks"].items():
        assert data["hooks"][event][: len(groups)] == groups
    assert {k: v for k, v in data.items() if k != "hooks"} == {k: v for k, v in ORIGINAL.items() if k != "hooks"}

    r3 = cli("hooks", "uninstall", "--json")
    assert r3.returncode == 0 and r3.json["data"]["changed"] is True, r3
    assert json.loads(settings.read_text()) == ORIGINAL
    r4 = cli("hooks", "uninstall", "--json")
    assert r4.returncode == 0 and r4.json["data"]["changed"] is False
    assert json.loads(settings.read_text()) == ORIGINAL


def test_local_scope_and_a_file_that_did_not_exist(repo: Path, cli) -> None:
    local = repo / ".claude" / "settings.local.json"
    assert cli("hooks", "install", "--scope", "local").returncode == 0
    assert _ours(json.loads(local.read_text())) == CLAUDE_OURS
    assert not (repo / ".claude" / "settings.json").exists()
    r = cli("hooks", "uninstall", "--scope", "local", "--json")
    assert r.returncode == 0 and r.json["data"]["files"][0]["removed_file"] is True
    assert not local.exists()  # it held nothing else: back to no file


def test_invalid_settings_are_refused_and_left_alone(repo: Path, cli) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": [oops')
    r = cli("hooks", "install")
    assert r.returncode == 2 and "not valid JSON" in r.stderr, r
    assert settings.read_text() == '{"hooks": [oops'
    assert cli("hooks", "install", "--scope", "team").returncode == 2


def test_uninstall_restores_the_file_byte_for_byte(repo: Path, cli) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    for text in (json.dumps({**ORIGINAL, "note": "café ☕"}, indent=4, ensure_ascii=False), json.dumps(ORIGINAL, indent=2) + "\n", json.dumps(ORIGINAL, indent="\t")):
        settings.write_text(text)
        assert cli("hooks", "install").returncode == 0
        assert "café ☕" in settings.read_text() or "note" not in text  # non-ASCII stays text
        assert cli("hooks", "uninstall").returncode == 0
        assert settings.read_text() == text


def test_a_symlinked_settings_file_stays_a_symlink_with_its_mode(repo: Path, cli) -> None:
    real_file = repo / "shared-settings.json"
    real_file.write_text(json.dumps(ORIGINAL, indent=2) + "\n")
    real_file.chmod(0o600)
    (repo / ".claude").mkdir()
    link = repo / ".claude" / "settings.json"
    link.symlink_to(real_file)
    assert cli("hooks", "install").returncode == 0
    assert link.is_symlink() and link.resolve() == real_file.resolve()
    assert (real_file.stat().st_mode & 0o777) == 0o600
    assert ("PreToolUse", "spark-git hook pre-tool-use") in _ours(json.loads(real_file.read_text()))


def test_a_narrower_or_absolute_path_entry_is_upgraded_not_duplicated(repo: Path, cli) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = {"hooks": {"PreToolUse": [
        {"matcher": "Write", "hooks": [{"type": "command", "command": "/opt/bin/spark-git hook pre-tool-use"}]},
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}, {"type": "command", "command": "spark-git hook session-start"}]},
    ]}}
    settings.write_text(json.dumps(old))
    r = cli("hooks", "install", "--json")
    assert r.returncode == 0 and r.json["data"]["changed"] is True, r
    pre = json.loads(settings.read_text())["hooks"]["PreToolUse"]
    assert pre[0] == {"matcher": "Write|Edit|MultiEdit|NotebookEdit|Bash|PowerShell",
                      "hooks": [{"type": "command", "command": "/opt/bin/spark-git hook pre-tool-use", "onFailure": "block"}]}
    assert sum(1 for g in pre for h in g["hooks"] if "pre-tool-use" in h["command"]) == 1
    assert cli("hooks", "install", "--json").json["data"]["changed"] is False
    assert cli("hooks", "uninstall").returncode == 0
    left = json.loads(settings.read_text())
    assert "pre-tool-use" not in json.dumps(left) and "audit" in json.dumps(left)
