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
    assert _ours(data) == [("PreToolUse", "spark-git hook pre-tool-use"), ("SessionStart", "spark-git hook session-start")]
    ours = data["hooks"]["PreToolUse"][-1]
    assert ours == {"matcher": "Write|Edit|MultiEdit|NotebookEdit|Bash", "hooks": [{"type": "command", "command": "spark-git hook pre-tool-use"}]}
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
    assert _ours(json.loads(local.read_text())) == [("PreToolUse", "spark-git hook pre-tool-use"), ("SessionStart", "spark-git hook session-start")]
    assert not (repo / ".claude" / "settings.json").exists()
    r = cli("hooks", "uninstall", "--scope", "local", "--json")
    assert r.returncode == 0 and r.json["data"]["removed_file"] is True
    assert not local.exists()  # it held nothing else: back to no file


def test_invalid_settings_are_refused_and_left_alone(repo: Path, cli) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": [oops')
    r = cli("hooks", "install")
    assert r.returncode == 2 and "not valid JSON" in r.stderr, r
    assert settings.read_text() == '{"hooks": [oops'
    assert cli("hooks", "install", "--scope", "team").returncode == 2
