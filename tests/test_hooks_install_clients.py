"""`hooks install|uninstall --client codex|gemini|claude`: merged into each client's own settings
file, the user's hooks and formatting kept, byte-identical after uninstall."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import spark

CODEX_USER = {"hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/log-shell", "timeout": 10}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
}}
GEMINI_USER = {
    "theme": "GitHub",
    "general": {"vimMode": True, "note": "café ☕"},
    "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"name": "fmt", "type": "command", "command": "./fmt.sh", "timeout": 30000}]}]},
}


def _ours(path: Path) -> list[tuple[str, str | None, str]]:
    data = json.loads(path.read_text())
    return [(ev, g.get("matcher"), h["command"]) for ev, groups in data["hooks"].items() for g in groups for h in g["hooks"]
            if h["command"].startswith("spark-git ")]


def test_codex_then_gemini_then_uninstall_gives_back_the_files_byte_for_byte(repo: Path, cli) -> None:
    codex, gemini = repo / ".codex" / "hooks.json", repo / ".gemini" / "settings.json"
    codex.parent.mkdir()
    gemini.parent.mkdir()
    codex_text = json.dumps(CODEX_USER, indent=2) + "\n"
    gemini_text = json.dumps(GEMINI_USER, indent=4, ensure_ascii=False)  # no final newline
    codex.write_text(codex_text)
    gemini.write_text(gemini_text)

    r = cli("hooks", "install", "--client", "codex", "--json")
    assert r.returncode == 0 and r.json["data"]["changed"] is True, r
    assert gemini.read_text() == gemini_text  # only the client asked for
    assert _ours(codex) == [("PreToolUse", "Bash|Write|Edit|apply_patch", "spark-git hook pre-tool-use --client codex"),
                            ("SessionStart", None, "spark-git hook session-start --client codex")]
    r = cli("hooks", "install", "--client", "gemini", "--json")
    assert r.returncode == 0 and [f["client"] for f in r.json["data"]["files"]] == ["gemini"], r
    assert _ours(gemini) == [("BeforeTool", "write_file|replace|run_shell_command", "spark-git hook pre-tool-use --client gemini"),
                             ("SessionStart", None, "spark-git hook session-start --client gemini")]
    data = json.loads(gemini.read_text())
    assert data["hooks"]["BeforeTool"][0] == GEMINI_USER["hooks"]["BeforeTool"][0] and data["general"] == GEMINI_USER["general"]
    again = cli("hooks", "install", "--client", "codex", "--client", "gemini", "--json")
    assert again.json["data"]["changed"] is False  # idempotent

    r = cli("hooks", "uninstall", "--json")  # default: every client whose directory exists here
    assert r.returncode == 0 and sorted(f["client"] for f in r.json["data"]["files"]) == ["codex", "gemini"], r
    assert codex.read_text() == codex_text
    assert gemini.read_text() == gemini_text
    assert not (repo / ".claude").exists()


def test_default_clients_and_scopes(repo: Path, cli, sealed: dict[str, str]) -> None:
    r = cli("hooks", "install", "--json")  # no .codex/.gemini: Claude Code
    assert [f["client"] for f in r.json["data"]["files"]] == ["claude"], r
    (repo / ".gemini").mkdir()
    r = cli("hooks", "install", "--json")
    assert sorted(f["client"] for f in r.json["data"]["files"]) == ["claude", "gemini"], r
    assert "spark-git hooks uninstall --client claude --client gemini" in r.json["next"]
    home = Path(sealed["HOME"])
    r = spark(repo, "hooks", "install", "--client", "codex", "--scope", "user", "--json", env=sealed, process=True)
    assert r.returncode == 0 and r.json["data"]["files"][0]["path"] == str(home / ".codex" / "hooks.json"), r
    before = {p: p.read_bytes() for p in (repo / ".claude" / "settings.json", repo / ".gemini" / "settings.json")}
    bad = cli("hooks", "install", "--client", "claude", "--client", "codex", "--scope", "local")
    assert bad.returncode == 2 and "codex" in bad.stderr, bad  # codex has no local scope: nothing written
    assert not (repo / ".claude" / "settings.local.json").exists()
    assert {p: p.read_bytes() for p in before} == before
    assert cli("hooks", "install", "--client", "vim").returncode == 2


def test_a_refusal_for_one_client_writes_no_file(repo: Path, cli) -> None:
    (repo / ".gemini").mkdir()
    (repo / ".gemini" / "settings.json").write_text("{ // comments are not JSON\n}")
    r = cli("hooks", "install", "--client", "codex", "--client", "gemini")
    assert r.returncode == 2 and "not valid JSON" in r.stderr, r
    assert not (repo / ".codex").exists()


def test_an_unknown_client_is_refused_by_every_hook_entry(repo: Path, sealed: dict[str, str]) -> None:
    for sub in ("pre-tool-use", "session-start", "worktree-create", "worktree-remove"):
        r = spark(repo, "hook", sub, "--client", "vim", env=sealed, input="{}", process=True)
        assert r.returncode == 2 and "vim" in r.stderr, (sub, r)
    ok = spark(repo, "hook", "pre-tool-use", "--client=codex", env=sealed, input='{"tool_name": "Read"}', process=True)
    assert (ok.returncode, ok.stdout) == (0, ""), ok
