"""`spark-git init` (issue 33 item 2): the set-up in one step on a real repository — what it would
change shown first (nothing written without a yes), then written and committed on the base branch
with the hooks, the three next commands accepted; run again it changes nothing; the project's test
command detected; the rest of an existing config kept; bad input changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.repo import git, make_repo, sealed_env, spark

PY = {"src/app.py": "def f():\n    return 1\n", "tests/test_app.py": "from src.app import f\n\n\ndef test_f():\n    assert f() == 1\n"}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return sealed_env(tmp_path / "home", SPARK_SESSION_ID="owner")


def state(repo: Path) -> tuple[str, str, bool]:
    return git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain", "--untracked-files=all"), (repo / ".spark-git.toml").exists()


def test_init_shows_then_writes_commits_and_the_next_commands_work(tmp_path: Path, env: dict[str, str]) -> None:
    repo = make_repo(tmp_path / "repo", PY, config=None)
    before = state(repo)
    r = spark(repo, "init", "--client", "claude", "--json", env=env)
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["data"]["applied"] is False and state(repo) == before, r  # no terminal, no --yes: shown only
    assert '+protocol = "light"' in out["data"]["diff"] and '+build = "python -m pytest -q"' in out["data"]["diff"], out
    assert out["next"] == ["spark-git init --protocol light --build 'python -m pytest -q' --client claude --yes"]
    r = spark(repo, *out["next"][0].split()[1:4], "--build", "python -m pytest -q", "--client", "claude", "--yes", "--json", env=env)
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["data"]["committed"] == git(repo, "rev-parse", "HEAD"), r
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""  # config, hooks and instructions all committed
    assert sorted(git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()) == [".claude/settings.json", ".claude/skills/spark-git/SKILL.md", ".spark-git.toml"]
    assert out["next"] == ["spark-git start my-task --agents coder", "spark-git agent run my-task coder", "spark-git merge my-task --agent coder"]
    assert spark(repo, *out["next"][0].split()[1:], env=env).returncode == 0  # the first of them is accepted as printed
    again = json.loads(spark(repo, "init", "--client", "claude", "--json", env=env).stdout)
    assert again["data"]["changed"] is False and again["summary"].startswith("spark-git is set up here as asked"), again


def test_run_again_it_shows_only_what_would_change_and_keeps_the_rest(tmp_path: Path, env: dict[str, str]) -> None:
    cfg = '# ours\nstale_minutes = 30\n\n[gates]\nbuild = "make check"  # the team\'s\ntimeout_s = 900\n'
    repo = make_repo(tmp_path / "repo", PY, config=cfg)
    r = spark(repo, "init", "--protocol", "full", "--build", "make check", "--client", "claude", "--json", env=env)
    diff = json.loads(r.stdout)["data"]["diff"]
    assert [ln for ln in diff.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))] == ['+protocol = "full"'], diff
    assert spark(repo, "init", "--protocol", "full", "--build", "make check", "--client", "claude", "--yes", env=env).returncode == 0
    text = (repo / ".spark-git.toml").read_text()
    assert text.startswith('protocol = "full"\n# ours\nstale_minutes = 30\n') and "timeout_s = 900" in text, text


@pytest.mark.parametrize(("files", "want"), [
    ({"package.json": '{"scripts": {"test": "jest"}}'}, "npm test"),
    ({"Cargo.toml": "[package]\nname = 'x'\n"}, "cargo test"),
    ({"go.mod": "module x\n"}, "go test ./..."),
    ({"Makefile": "all:\n\ttrue\ntest:\n\ttrue\n"}, "make test"),
    (PY, "python -m pytest -q"),
])
def test_the_projects_test_command_is_offered(tmp_path: Path, env: dict[str, str], files: dict[str, str], want: str) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n", **files}, config=None)
    d = json.loads(spark(repo, "init", "--client", "claude", "--json", env=env).stdout)["data"]
    assert d["detected"][0] == want and d["build"] == want, d


@pytest.mark.parametrize("args", [("--protocol", "heavy"), ("--client", "cursor"), ("--approvers", "no-such-file")])
def test_bad_input_is_refused_and_changes_nothing(tmp_path: Path, env: dict[str, str], args: tuple[str, str]) -> None:
    repo = make_repo(tmp_path / "repo", PY, config=None)
    before = state(repo)
    r = spark(repo, "init", *args, "--yes", "--json", env=env)
    out = json.loads(r.stdout)
    assert r.returncode == 2 and out["next"], r
    assert state(repo) == before
