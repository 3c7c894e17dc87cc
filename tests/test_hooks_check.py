"""`spark-git hooks check`: per agent worktree and client, will the hooks load there."""

from __future__ import annotations

import os
from pathlib import Path

from fixtures.repo import commit, make_repo, sealed_env, spark


def _by(r) -> dict[tuple[str, str, str], dict]:
    return {(c["task"], c["agent"], c["client"]): c for c in r.json["data"]["checks"]}


def test_committed_ignored_missing_and_path(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".gitignore": ".gemini/\n"})
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")
    (repo / ".gemini").mkdir()
    (tmp_path / "home" / ".gemini").mkdir(parents=True)  # Gemini CLI runs hooks only in folders the user trusts
    (tmp_path / "home" / ".gemini" / "trustedFolders.json").write_text(f'{{"{tmp_path}": "TRUST_FOLDER"}}')
    assert spark(repo, "hooks", "install", "--client", "claude", "--client", "gemini", env=env).returncode == 0
    commit(repo, {}, "claude hooks")  # .claude/settings.json committed; .gemini/ is ignored
    assert spark(repo, "hooks", "install", "--client", "codex", env=env).returncode == 0  # not committed
    assert spark(repo, "start", "t1", "--agents", "a1", env=env).returncode == 0  # gemini's ignored settings are copied
    r = spark(repo, "hooks", "check", "--json", env=env)
    assert r.json["data"]["clients"] == ["claude", "codex", "gemini"], r
    got = _by(r)
    assert got[("t1", "a1", "claude")]["loads"] and "committed" in got[("t1", "a1", "claude")]["source"]
    assert got[("t1", "a1", "gemini")]["loads"] and "ignored" in got[("t1", "a1", "gemini")]["source"], got
    # Codex reads the main checkout's .codex/hooks.json in every linked worktree: committed or not, it
    # loads while the user's Codex config trusts it (install wrote that), and not once the trust is gone
    assert got[("t1", "a1", "codex")]["loads"] and "trusted" in got[("t1", "a1", "codex")]["source"], got
    (tmp_path / "home" / ".codex" / "config.toml").write_text("")
    r = spark(repo, "hooks", "check", "--json", env=env)
    codex = _by(r)[("t1", "a1", "codex")]
    assert not codex["loads"] and "is not trusted" in codex["problem"], codex
    assert r.returncode == 1 and r.json["status"] == "FAIL"
    human = spark(repo, "hooks", "check", env=env)
    assert "t1/a1 codex: NOT loaded" in human.stdout, human

    assert spark(repo, "hooks", "install", "--client", "codex", "--scope", "user", env=env, process=True).returncode == 0
    ok = spark(repo, "hooks", "check", "--json", env=env, process=True)
    assert ok.returncode == 0 and "user scope" in _by(ok)[("t1", "a1", "codex")]["source"], ok

    bare = {**env, "PATH": os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "spark-git").exists())}
    no_exe = spark(repo, "hooks", "check", "--json", env=bare, process=True)
    assert no_exe.returncode == 1 and no_exe.json["data"]["spark_git"] is None, no_exe
    assert all("not on PATH" in c["problem"] for c in no_exe.json["data"]["checks"])


def test_claude_hooks_in_the_main_worktrees_local_settings_count_for_every_agent(tmp_path: Path) -> None:
    """Claude Code reads the main worktree's .claude/settings.local.json for a session in any worktree
    (its facts' main_loads): check reads that file too, and names it as the source."""
    repo = make_repo(tmp_path / "repo", {".gitignore": ".claude/settings.local.json\n"})
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")
    assert spark(repo, "start", "t1", "--agents", "a1", env=env).returncode == 0  # before the hooks: no copy in a1
    assert spark(repo, "hooks", "install", "--scope", "local", env=env).returncode == 0
    a1 = tmp_path / "repo.tasks/t1/agents/a1/code"
    (a1 / ".claude" / "settings.local.json").unlink()  # the sandbox's file, without the hooks in it either way
    r = spark(repo, "hooks", "check", "--json", env=env)
    got = _by(r)[("t1", "a1", "claude")]
    assert r.returncode == 0 and got["loads"], r
    assert got["source"] == f"{repo / '.claude' / 'settings.local.json'} (the main worktree's local scope)", got
