"""`spark-git start --from SOURCE` for each kind of source; gh, jira and curl are fake executables
the test puts on PATH (spark-git's own code is not mocked)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from fixtures.repo import git, make_repo, write

from tests.hookutil import run_cli

TODAY = __import__("datetime").datetime.now(__import__("datetime").timezone.utc).strftime("%Y%m%d")


def fake_tool(bindir: Path, name: str, script: str) -> Path:
    """A shell script named `name` that records its argv in <bindir>/<name>.argv and runs `script`."""
    p = bindir / name
    write(p, f'#!/bin/sh\nprintf "%s\\n" "$@" > "{bindir}/{name}.argv"\n{script}\n')
    p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return p


@pytest.fixture
def world(tmp_path: Path) -> dict:
    repo = make_repo(tmp_path / "repo")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(shutil.which("git"), bindir / "git")
    # PATH with git and the fakes only: no real gh/jira/curl from the machine
    return {"repo": repo, "bin": bindir, "env": {"PATH": str(bindir)}, "root": tmp_path / "repo.tasks"}


def start(w: dict, *args: str):
    return run_cli(w["repo"], "start", *args, "--json", env=w["env"])


def objective(w: dict, task: str) -> str:
    return (w["root"] / task / "task.md").read_text()


def test_from_file(world) -> None:
    spec = write(world["repo"].parent / "spec.md", "# Add OAuth2 login\n\nUsers sign in with GitHub.\n")
    r = start(world, "--from", str(spec))
    assert r.returncode == 0, r
    task = f"add-oauth2-login-{TODAY}"
    assert r.json["task"] == task
    assert json.loads((world["root"] / task / "task.json").read_text())["title"] == "Add OAuth2 login"
    md = objective(world, task)
    assert md.splitlines()[1:5] == ["# Add OAuth2 login", "", "## Task Objective", ""]
    assert "> Users sign in with GitHub." in md and str(spec) in md
    assert "> # Add OAuth2 login" in md  # the source's own headings are quoted, not sections of task.md

    # classify turns it into the protocol's template and keeps the objective; the task.md check passes
    c = run_cli(world["repo"], "classify", task, "--files", "README.md", "--json", env=world["env"])
    assert c.returncode == 0 and c.json["data"]["task_md_written"] is True, c
    md = objective(world, task)
    assert "## Scope" in md and "## Stakeholder Agent Reports" in md and "> Users sign in with GitHub." in md
    assert md.index("## Task Objective") < md.index("> Users sign in with GitHub.") < md.index("## Scope")
    a = run_cli(world["repo"], "advance", task, "--json", env=world["env"])
    assert a.returncode == 0 and a.json["data"]["to"] == "CLASSIFIED", a


def test_from_directory_reads_readme_and_requirements(world) -> None:
    d = world["repo"].parent / "feature"
    write(d / "README.md", "# Rate limiter\n\nLimit API calls.\n")
    write(d / "requirements.txt", "- 100 req/min per key\n")
    write(d / "unrelated.py", "print('no')\n")
    r = start(world, "rl", "--from", str(d))
    assert r.returncode == 0, r
    md = objective(world, "rl")
    assert "Limit API calls." in md and "100 req/min per key" in md and "print('no')" not in md
    assert md.index("README.md") < md.index("requirements.txt")


@pytest.mark.parametrize(
    "ref, argv",
    [
        ("#123", ["issue", "view", "123", "--json", "title,body,url"]),
        ("octo/app#123", ["issue", "view", "123", "--json", "title,body,url", "--repo", "octo/app"]),
        ("https://github.com/octo/app/issues/123", ["issue", "view", "123", "--json", "title,body,url", "--repo", "octo/app"]),
        ("https://github.com/octo/app/pull/123", ["pr", "view", "123", "--json", "title,body,url", "--repo", "octo/app"]),
    ],
)
def test_from_github_through_gh(world, ref: str, argv: list[str]) -> None:
    fake_tool(world["bin"], "gh", """echo '{"title": "Crash on empty config", "body": "Steps: run with {}.", "url": "https://github.com/octo/app/issues/123"}'""")
    r = start(world, "--from", ref)
    assert r.returncode == 0, r
    task = f"crash-on-empty-config-{TODAY}"
    assert r.json["task"] == task
    assert (world["bin"] / "gh.argv").read_text().splitlines() == argv
    md = objective(world, task)
    assert "Steps: run with {}." in md and "https://github.com/octo/app/issues/123" in md


def test_hash_number_falls_back_to_a_pr(world) -> None:
    fake_tool(world["bin"], "gh", 'if [ "$1" = issue ]; then echo "no issue 7" >&2; exit 1; fi\necho \'{"title": "Refactor parser", "body": "b", "url": "u"}\'')
    r = start(world, "--from", "#7")
    assert r.returncode == 0, r
    assert r.json["task"] == f"refactor-parser-{TODAY}"


def test_github_without_gh_is_a_clear_exit_2_and_creates_nothing(world) -> None:
    before = git(world["repo"], "for-each-ref")
    r = run_cli(world["repo"], "start", "--from", "#123", env=world["env"])
    assert r.returncode == 2, r
    assert "needs the `gh` command, which is not installed" in r.stderr and "cli.github.com" in r.stderr
    assert not world["root"].exists() and git(world["repo"], "for-each-ref") == before


def test_gh_failure_keeps_its_stderr(world) -> None:
    fake_tool(world["bin"], "gh", 'echo "HTTP 404: Not Found" >&2; exit 1')
    r = run_cli(world["repo"], "start", "--from", "octo/app#9", env=world["env"])
    assert r.returncode == 1 and "HTTP 404: Not Found" in r.stderr, r
    assert not world["root"].exists()


def test_from_jira_key(world) -> None:
    fake_tool(world["bin"], "jira", 'printf "Fix login timeout\\n\\nSessions expire after 5 minutes.\\n"')
    r = start(world, "--from", "PROJ-123")
    assert r.returncode == 0, r
    assert r.json["task"] == f"proj-123-fix-login-timeout-{TODAY}"
    assert (world["bin"] / "jira.argv").read_text().splitlines() == ["issue", "view", "PROJ-123", "--plain"]
    assert "Sessions expire after 5 minutes." in objective(world, r.json["task"])
    (world["bin"] / "jira").unlink()
    no_jira = run_cli(world["repo"], "start", "--from", "ABC-9", env=world["env"])
    assert no_jira.returncode == 2 and "`jira` command" in no_jira.stderr


def test_from_url_needs_a_fetching_tool(world) -> None:
    r = run_cli(world["repo"], "start", "--from", "https://example.com/spec", env=world["env"])
    assert r.returncode == 2 and "does not fetch web pages itself" in r.stderr, r
    fake_tool(world["bin"], "curl", 'echo "<html><head><title>Spec: dark mode</title></head><body><h1>Dark mode</h1><p>Add a toggle.</p></body></html>"')
    r = start(world, "--from", "https://example.com/spec")
    assert r.returncode == 0, r
    assert r.json["task"] == f"spec-dark-mode-{TODAY}"
    assert "Add a toggle." in objective(world, r.json["task"]) and "<p>" not in objective(world, r.json["task"])
    assert (world["bin"] / "curl.argv").read_text().splitlines()[-1] == "https://example.com/spec"


def test_from_plain_text_and_explicit_name_and_title(world) -> None:
    r = start(world, "--from", "Make the build reproducible\nPin every dependency.")
    assert r.returncode == 0, r
    assert r.json["task"] == f"make-the-build-reproducible-{TODAY}"
    assert "Pin every dependency." in objective(world, r.json["task"])
    r = start(world, "mine", "--title", "My title", "--from", "some text")
    assert r.returncode == 0 and r.json["task"] == "mine"
    assert objective(world, "mine").splitlines()[1:5] == ["# My title", "", "## Task Objective", ""]
    assert "> some text" in objective(world, "mine")
