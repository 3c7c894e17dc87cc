"""`hooks check` for Gemini CLI: the hooks committed are not enough, Gemini must also trust the
worktree and leave hooks on (clients/gemini/load.py). What Gemini really does in each case is
measured with the real client in tests/test_real_gemini.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.modelserver.gemini_agent import without_gemini_env
from fixtures.repo import commit, make_repo, sealed_env, spark


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    repo = make_repo(tmp_path / "repo")
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    env = {**without_gemini_env(sealed_env(home, SPARK_SESSION_ID="s1")), "GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(tmp_path / "etc" / "settings.json")}
    assert spark(repo, "hooks", "install", "--client", "gemini", env=env).returncode == 0
    commit(repo, {}, "gemini hooks")
    started = spark(repo, "start", "t1", "--agents", "a1", "--json", env=env)
    assert started.returncode == 0, started
    warned = [w for w in started.json["data"]["warnings"] if "will not run spark-git's gemini hooks" in w]
    assert len(warned) == 1 and "has not been told to trust it" in warned[0], started.json["data"]["warnings"]
    return repo, env, home / ".gemini"


def _check(repo: Path, env: dict[str, str]) -> tuple[bool, str | None]:
    r = spark(repo, "hooks", "check", "--json", env=env)
    (c,) = r.json["data"]["checks"]
    assert r.returncode == (0 if c["loads"] else 1), r
    return c["loads"], c["problem"]


def _trust(gem: Path, rules: dict[str, str]) -> None:
    (gem / "trustedFolders.json").write_text(json.dumps(rules))


def test_untrusted_worktree_does_not_load(setup: tuple[Path, dict[str, str], Path]) -> None:
    repo, env, gem = setup
    loads, problem = _check(repo, env)
    assert not loads and problem and "has not been told to trust it" in problem and "TRUST_FOLDER" in problem, problem
    assert f'"{repo.parent / "repo.tasks"}": "TRUST_FOLDER"' in problem  # the fix names the tasks root
    assert [w for w in spark(repo, "status", "--json", env=env).json["data"]["warnings"] if "gemini hooks" in w]
    _trust(gem, {str(repo.parent / "repo.tasks"): "TRUST_FOLDER"})
    assert _check(repo, env) == (True, None)
    status = spark(repo, "status", "--json", env=env)
    assert not [w for w in status.json["data"]["warnings"] if "gemini hooks" in w], status


def test_project_scope_notes_sessions_in_subdirectories(setup: tuple[Path, dict[str, str], Path], tmp_path: Path) -> None:
    repo, env, gem = setup
    _trust(gem, {str(tmp_path): "TRUST_FOLDER"})
    r = spark(repo, "hooks", "check", "--json", env=env)
    assert r.returncode == 0 and any("subdirectory" in n for n in r.json["data"]["notes"]), r
    assert spark(repo, "hooks", "install", "--client", "gemini", "--scope", "user", env=env).returncode == 0
    r = spark(repo, "hooks", "check", "--json", env=env)
    assert r.returncode == 0 and not any("subdirectory" in n for n in r.json["data"]["notes"]), r


def test_trust_rules_longest_match_parent_env_and_switch(setup: tuple[Path, dict[str, str], Path]) -> None:
    repo, env, gem = setup
    agent = repo.parent / "repo.tasks" / "t1" / "agents" / "a1" / "code"
    _trust(gem, {str(repo.parent): "TRUST_FOLDER", str(agent.parent): "DO_NOT_TRUST"})
    loads, problem = _check(repo, env)
    assert not loads and problem and "distrusts it" in problem
    _trust(gem, {str(agent): "TRUST_PARENT"})  # the rule's parent, a1/, holds the worktree
    assert _check(repo, env)[0]
    _trust(gem, {})
    assert _check(repo, {**env, "GEMINI_CLI_TRUST_WORKSPACE": "true"})[0]
    (gem / "settings.json").write_text('{"security": {"folderTrust": {"enabled": false}}}')
    assert _check(repo, env)[0]
    assert not _check(repo, {**env, "GEMINI_CLI_TRUST_WORKSPACE": "false"})[0]


def test_hooks_switched_off_in_any_layer(setup: tuple[Path, dict[str, str], Path], tmp_path: Path) -> None:
    repo, env, gem = setup
    _trust(gem, {str(tmp_path): "TRUST_FOLDER"})
    user = gem / "settings.json"
    user.write_text('{\n  // comments are allowed\n  "hooksConfig": {"enabled": false}\n}\n')
    loads, problem = _check(repo, env)
    assert not loads and problem and f"hooksConfig.enabled is false in {user}" in problem
    system = tmp_path / "etc" / "settings.json"
    system.parent.mkdir()
    system.write_text('{"hooksConfig": {"enabled": true}}')  # the system layer comes last and wins
    assert _check(repo, env)[0]
    system.unlink()
    user.write_text(json.dumps({"hooksConfig": {"disabled": ["spark-git hook pre-tool-use --client gemini"]}}))
    loads, problem = _check(repo, env)
    assert not loads and problem and "hooksConfig.disabled" in problem
    user.write_text(json.dumps({"hooksConfig": {"disabled": ["some-other-hook"]}}))
    assert _check(repo, env)[0]
