"""tests/data/client-events/: one file per client and event kind, shaped exactly as issue 13 measured
the real clients (Claude Code 2.1.330, Codex CLI 0.169, Gemini CLI 0.61), so that the replay tests
(test_hooks_codex.py, test_hooks_gemini.py, test_hooks_worktree.py) feed what the clients send."""

from __future__ import annotations

import json

import pytest

from tests.hookutil import EVENTS

CODEX = {"session_id", "turn_id", "cwd", "hook_event_name", "model", "permission_mode", "transcript_path"}
CODEX_TOOL = CODEX | {"tool_name", "tool_input", "tool_use_id"}
GEMINI = {"session_id", "transcript_path", "cwd", "hook_event_name", "timestamp"}
CLAUDE = {"session_id", "transcript_path", "cwd", "hook_event_name"}
SHAPES: dict[str, tuple[set[str], dict[str, str]]] = {  # file -> (keys, fixed values)
    "codex-PreToolUse-Bash": (CODEX_TOOL, {"hook_event_name": "PreToolUse", "tool_name": "Bash"}),
    "codex-PreToolUse-apply_patch": (CODEX_TOOL, {"hook_event_name": "PreToolUse", "tool_name": "apply_patch"}),
    "codex-SessionStart": (CODEX | {"source"}, {"hook_event_name": "SessionStart"}),
    "gemini-BeforeTool-write_file": (GEMINI | {"tool_name", "tool_input"}, {"hook_event_name": "BeforeTool", "tool_name": "write_file"}),
    "gemini-BeforeTool-replace": (GEMINI | {"tool_name", "tool_input"}, {"hook_event_name": "BeforeTool", "tool_name": "replace"}),
    "gemini-BeforeTool-run_shell_command": (GEMINI | {"tool_name", "tool_input"}, {"hook_event_name": "BeforeTool", "tool_name": "run_shell_command"}),
    "gemini-SessionStart": (GEMINI | {"source"}, {"hook_event_name": "SessionStart"}),
    "claude-WorktreeCreate": (CLAUDE | {"name"}, {"hook_event_name": "WorktreeCreate"}),
    "claude-WorktreeRemove": (CLAUDE | {"worktree_path"}, {"hook_event_name": "WorktreeRemove"}),
}
TOOL_INPUT = {
    "codex-PreToolUse-Bash": {"command"},
    "codex-PreToolUse-apply_patch": {"command"},
    "gemini-BeforeTool-write_file": {"file_path", "content"},
    "gemini-BeforeTool-replace": {"file_path", "old_string", "new_string"},
    "gemini-BeforeTool-run_shell_command": {"command", "dir_path", "is_background"},
}


def test_one_file_per_client_and_event_kind() -> None:
    assert sorted(p.stem for p in EVENTS.glob("*.json")) == sorted(SHAPES)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_event_is_shaped_as_measured(name: str) -> None:
    ev = json.loads((EVENTS / f"{name}.json").read_text())
    keys, fixed = SHAPES[name]
    assert set(ev) == keys, name
    assert {k: ev[k] for k in fixed} == fixed
    if name in TOOL_INPUT:
        assert set(ev["tool_input"]) == TOOL_INPUT[name]
    if name == "codex-PreToolUse-apply_patch":
        patch = ev["tool_input"]["command"]
        assert patch.startswith("*** Begin Patch\n") and patch.rstrip().endswith("*** End Patch")
        assert all(h in patch for h in ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "))
