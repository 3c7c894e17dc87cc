"""`hooks install|uninstall --client codex|gemini|claude`: merged into each client's own settings
file, the user's hooks and formatting kept, byte-identical after uninstall."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.repo import spark

from spark_git.clients.jsonhooks import unguarded

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
    return [(ev, g.get("matcher"), unguarded(h["command"])) for ev, groups in data["hooks"].items() for g in groups for h in g["hooks"]
            if unguarded(h["command"]).startswith("spark-git ")]


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


# Settings files as people write them, not as json.dumps does (found by an audit of issue 13).
HAND_WRITTEN = {
    "crlf": '{\r\n  "hooks": {\r\n    "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]\r\n  }\r\n}\r\n',
    "one-line groups": '{\n  "hooks": {\n    "PreToolUse": [ { "matcher": "Bash", "hooks": [ {"type": "command", "command": "audit"} ] } ]\n  }\n}\n',
    "escapes": '{"model": "caf\\u00e9", "hooks": {}}\n',
    "empty lists": '{\n\t"hooks": {\n\t\t"Stop": []\n\t}\n}',
    "only an empty event": '{"hooks":{"Stop":[]}}',
}


@pytest.mark.parametrize("style", HAND_WRITTEN)
def test_install_then_uninstall_gives_back_a_hand_written_file_byte_for_byte(repo: Path, cli, style: str) -> None:
    codex = repo / ".codex" / "hooks.json"
    codex.parent.mkdir()
    original = HAND_WRITTEN[style].encode()
    codex.write_bytes(original)
    assert cli("hooks", "install", "--client", "codex", "--json").json["data"]["changed"] is True
    assert _ours(codex)  # installed
    r = cli("hooks", "uninstall", "--client", "codex", "--json")
    assert r.returncode == 0 and r.json["data"]["changed"] is True, r
    assert codex.read_bytes() == original


def test_a_file_edited_after_install_loses_only_spark_gits_entries(repo: Path, cli) -> None:
    codex = repo / ".codex" / "hooks.json"
    codex.parent.mkdir()
    codex.write_text('{"hooks": {"Stop": []}}')
    cli("hooks", "install", "--client", "codex")
    data = json.loads(codex.read_text())
    data["hooks"]["Notification"] = [{"hooks": [{"type": "command", "command": "ding"}]}]  # the user's edit after install
    codex.write_text(json.dumps(data, indent=2) + "\n")
    r = cli("hooks", "uninstall", "--client", "codex", "--json")
    assert r.returncode == 0 and r.json["data"]["files"][0]["removed_file"] is False, r
    assert json.loads(codex.read_text()) == {"hooks": {"Stop": [], "Notification": [{"hooks": [{"type": "command", "command": "ding"}]}]}}


def test_uninstall_of_a_file_install_created_removes_it(repo: Path, cli) -> None:
    cli("hooks", "install", "--client", "gemini")
    gemini = repo / ".gemini" / "settings.json"
    assert _ours(gemini)
    r = cli("hooks", "uninstall", "--client", "gemini", "--json")
    assert r.json["data"]["files"][0]["removed_file"] is True and not gemini.exists(), r


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


def test_an_installed_crlf_file_keeps_its_line_endings(repo: Path, cli) -> None:
    # While installed too: a Windows user's settings file stays CRLF (a rewrite had made it LF, a
    # whole-file diff in git), and the structural uninstall after an edit keeps them as well.
    gemini = repo / ".gemini" / "settings.json"
    gemini.parent.mkdir()
    gemini.write_bytes(HAND_WRITTEN["crlf"].encode())
    assert cli("hooks", "install", "--client", "gemini").returncode == 0
    raw = gemini.read_bytes()
    assert raw.count(b"\n") > 5 and raw.count(b"\r\n") == raw.count(b"\n"), raw
    gemini.write_bytes(raw.replace(b'"notify"', b'"notify-send"'))  # the user's edit: no byte-for-byte restore
    assert cli("hooks", "uninstall", "--client", "gemini").returncode == 0
    after = gemini.read_bytes()
    assert b"spark-git" not in after and b"notify-send" in after and after.count(b"\r\n") == after.count(b"\n") > 0, after


@pytest.mark.parametrize("memo", ['{"path":', "[]", '{"original": 3}'])
def test_an_unreadable_memo_of_the_original_is_as_if_there_were_none(repo: Path, cli, sealed: dict[str, str], memo: str) -> None:
    # A memo cut short (a full disk) or hand-edited crashed uninstall (exit 70): the hooks could not be removed.
    codex = repo / ".codex" / "hooks.json"
    codex.parent.mkdir()
    codex.write_text(json.dumps(CODEX_USER, indent=2) + "\n")
    assert cli("hooks", "install", "--client", "codex").returncode == 0
    memos = list((Path(sealed["HOME"]) / ".local" / "state" / "spark-git" / "hooks-originals").iterdir())
    assert len(memos) == 1
    memos[0].write_text(memo)
    r = cli("hooks", "uninstall", "--client", "codex")
    assert r.returncode == 0 and json.loads(codex.read_text()) == CODEX_USER, r  # the structural removal
    memos[0].write_text(memo)
    assert cli("hooks", "install", "--client", "codex").returncode == 0 and _ours(codex)
