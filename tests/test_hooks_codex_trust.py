"""`hooks install|uninstall|check --client codex` and the user's Codex config (issue 22), without the
Codex binary: the trust entries Codex 0.169 needs before it runs a hook, Codex's sandbox in each agent
worktree, and what `hooks check` says when Codex would skip the hooks. tests/test_real_codex.py shows
the same entries working in the real Codex."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

from fixtures.repo import git

from spark_git.clients import jsonhooks
from spark_git.clients.codex import CODEX
from spark_git.clients.codex import trust as codextrust


def _config() -> Path:
    return Path(os.environ["HOME"], ".codex", "config.toml")


def _setup(cli) -> None:
    assert cli("start", "t1", "--agents", "a,b").returncode == 0
    r = cli("hooks", "install", "--client", "codex", "--json")
    assert r.returncode == 0, r


def test_the_hash_is_codex_s_own() -> None:
    # Codex 0.169's `hooks/list` currentHash for spark-git's entry before the guard (measured)
    plain = {"type": "command", "command": "spark-git hook pre-tool-use --client codex"}
    assert codextrust.entry_hash("pre_tool_use", "Bash|Write|Edit|apply_patch", plain) == \
        "sha256:2ec0768e0a32fe7b9f9cabec85565ebddd0531fb78585288f2c1f183fe40979c"
    assert codextrust.entry_hash("session_start", None, {"command": "spark-git hook session-start --client codex"}) == \
        "sha256:5432380ca95d92be4e270b5a2e97c6716b3dc94a1df3bbc214872ee3340efc90"


def test_install_trusts_the_hooks_and_boxes_every_agent_and_uninstall_takes_both_back(repo: Path, cli) -> None:
    _config().parent.mkdir(parents=True)
    _config().write_text('model = "gpt-5.5"\n\n[projects."/elsewhere"]\ntrust_level = "untrusted"\n')
    _setup(cli)
    config = tomllib.loads(_config().read_text())
    ours = codextrust.ours(repo / ".codex" / "hooks.json")
    assert sorted(k.rsplit(":", 3)[1] for k in ours) == ["pre_tool_use", "session_start"]
    assert {k: config["hooks"]["state"][k]["trusted_hash"] for k in ours} == ours
    assert config["projects"][os.path.realpath(repo)] == {"trust_level": "trusted"}
    assert config["model"] == "gpt-5.5" and config["projects"]["/elsewhere"] == {"trust_level": "untrusted"}
    for agent in ("a", "b"):
        wt = repo.parent / "repo.tasks" / "t1" / "agents" / agent / "code"
        box = tomllib.loads((wt / ".codex" / "config.toml").read_text())
        rules = box["permissions"][box["default_permissions"]]["filesystem"]
        other = "b" if agent == "a" else "a"
        assert rules[str(Path(os.path.realpath(repo), ".git", "refs", "heads", "main"))] == "read"
        assert rules[str(Path(os.path.realpath(repo), ".git", "refs", "heads", f"task-t1-agent-{other}"))] == "read"
        assert str(Path(os.path.realpath(repo), ".git", "refs", "heads", f"task-t1-agent-{agent}")) not in rules
        assert git(wt, "status", "--porcelain") == ""  # kept out of git
    assert cli("hooks", "install", "--client", "codex", "--json").json["data"]["changed"] is False  # idempotent
    assert cli("hooks", "check").returncode == 0

    r = cli("hooks", "uninstall", "--client", "codex", "--json")
    assert r.returncode == 0 and sorted(r.json["data"]["files"][0]["trusted"]) == sorted(ours), r
    assert "state" not in tomllib.loads(_config().read_text()).get("hooks", {})
    assert not (repo.parent / "repo.tasks" / "t1" / "agents" / "a" / "code" / ".codex").exists()


def test_check_says_not_loaded_whenever_codex_would_skip_the_hooks(repo: Path, cli) -> None:
    _setup(cli)
    key = next(k for k in codextrust.ours(repo / ".codex" / "hooks.json") if ":pre_tool_use:" in k)
    text = _config().read_text()
    cases = {
        "disabled": text.replace(f'[hooks.state.{codextrust._quote(key)}]\n', f'[hooks.state.{codextrust._quote(key)}]\nenabled = false\n'),
        "changed since it was trusted": text.replace("sha256:", "sha256:0", 1),
        "does not trust the project": text.replace('trust_level = "trusted"', 'trust_level = "untrusted"'),
        "is not trusted": "",
        "switched off": text + "\n[features]\nhooks = false\n",  # measured: Codex then runs no hook at all
    }
    for why, config in cases.items():
        _config().write_text(config)
        r = cli("hooks", "check", "--json")
        assert r.returncode == 1 and all(why in c["problem"] for c in r.json["data"]["checks"]), (why, r)
    _config().write_text('sandbox_mode = "danger-full-access"\n' + text)  # measured: the agent's profile still wins
    r = cli("hooks", "check", "--json")
    assert r.returncode == 0 and all(c["sandbox"] for c in r.json["data"]["checks"]), r


def test_a_config_spark_git_cannot_edit_safely_is_refused_and_left_alone(repo: Path, cli) -> None:
    _config().parent.mkdir(parents=True)
    bad = '[hooks]\nstate = { }\n'  # the same table written inline: adding [hooks.state."…"] would break the file
    _config().write_text(bad)
    r = cli("hooks", "install", "--client", "codex")
    assert r.returncode == 2 and "trust" in r.stderr + r.stdout, r
    assert _config().read_text() == bad
    _config().write_text("not = [toml")
    assert cli("hooks", "install", "--client", "codex").returncode == 2


def test_the_hook_entry_fails_closed_and_older_entries_are_upgraded(repo: Path, cli) -> None:
    pre = CODEX.wanted()[0].command
    assert jsonhooks.unguarded(pre) == "spark-git hook pre-tool-use --client codex" and pre == jsonhooks.wrapped(pre)
    old = repo / ".codex" / "hooks.json"
    old.parent.mkdir()
    for entry in ("/opt/bin/spark-git hook pre-tool-use --client codex", jsonhooks.guarded("/opt/bin/spark-git hook pre-tool-use --client codex")):
        old.write_text('{"hooks": {"PreToolUse": [{"matcher": "Bash|Write|Edit|apply_patch", "hooks": '
                       f'[{{"type": "command", "command": {json.dumps(entry)}}}]}}]}}}}\n')
        assert cli("hooks", "install", "--client", "codex").returncode == 0
        groups = json.loads(old.read_text())["hooks"]["PreToolUse"]
        assert [h["command"] for g in groups for h in g["hooks"]] == [jsonhooks.wrapped("/opt/bin/spark-git hook pre-tool-use --client codex")], entry


def test_agents_created_later_get_the_sandbox_and_every_other_agent_loses_their_branch(repo: Path, cli) -> None:
    _setup(cli)
    assert cli("agent", "add", "t1", "c", "--why", "a third pair of hands").returncode == 0
    assert cli("start", "t2", "--agents", "x").returncode == 0
    agents = repo.parent / "repo.tasks"
    heads = Path(os.path.realpath(repo), ".git", "refs", "heads")
    for wt in (agents / "t1" / "agents" / "a" / "code", agents / "t1" / "agents" / "c" / "code", agents / "t2" / "agents" / "x" / "code"):
        box = tomllib.loads((wt / ".codex" / "config.toml").read_text())
        rules = box["permissions"][box["default_permissions"]]["filesystem"]
        mine = {f"task-{wt.parent.parent.parent.name}-agent-{wt.parent.name}"}
        want = {"main", "t1", "t2", "task-t1-agent-a", "task-t1-agent-b", "task-t1-agent-c", "task-t2-agent-x"} - mine
        assert {Path(k).name for k, v in rules.items() if Path(k).parent == heads and v == "read"} == want, (wt, rules)
    check = cli("hooks", "check", "--json")
    assert check.returncode == 0 and len(check.json["data"]["checks"]) == 4 and all(c["sandbox"] for c in check.json["data"]["checks"]), check


def test_ending_a_task_does_not_archive_codex_s_sandbox_file_as_ignored_work(repo: Path, cli) -> None:
    _setup(cli)
    b = repo.parent / "repo.tasks" / "t1" / "agents" / "b" / "code"
    (b / "scratch.log").write_text("b's own ignored work\n")
    (repo / ".git" / "info" / "exclude").write_text((repo / ".git" / "info" / "exclude").read_text() + "*.log\n")
    r = cli("abandon", "t1", "--why", "stop", "--json")
    assert r.returncode == 0, r
    refs = [a["ref"] for a in r.json["data"]["archived"]]
    assert not any("/ignored-a/" in ref for ref in refs) and any("/ignored-b/" in ref for ref in refs), refs
