"""Input detection in seed 002's order (Jira, `#N`, `owner/repo#N`, issue URL, `!N` and PR URLs,
file, directory, URL, text), `!N` read as a PR, and directories holding only 002's key files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from fixtures.repo import make_repo, write

from spark_git.ops.life.sources import detect
from tests.hookutil import run_cli
from tests.test_start_from import fake_tool


@pytest.mark.parametrize(("arg", "kind"), [
    ("PROJ-123", "jira"),
    ("#12", "github"),
    ("octo/app#12", "github"),
    ("https://github.com/octo/app/issues/12", "github"),
    ("!12", "github"),
    ("https://github.com/octo/app/pull/12", "github"),
    ("https://gitlab.example.com/grp/sub/app/-/merge_requests/12", "gitlab"),
    ("spec.md", "file"),
    ("feature", "directory"),
    ("https://acme.atlassian.net/browse/PROJ-9", "jira-url"),
    ("https://example.com/spec", "url"),
    ("add a rate limiter", "text"),
    ("!twelve", "text"),
])
def test_detect_kinds(tmp_path: Path, arg: str, kind: str) -> None:
    write(tmp_path / "spec.md", "# s\n")
    (tmp_path / "feature").mkdir()
    assert detect(arg, tmp_path / arg) == kind


def test_jira_key_comes_before_a_file_of_that_name(tmp_path: Path) -> None:
    write(tmp_path / "PROJ-1", "x\n")  # 002: first match wins, and the Jira key is tried first
    assert detect("PROJ-1", tmp_path / "PROJ-1") == "jira"
    assert detect("notes-1", tmp_path / "notes-1") == "text"


@pytest.fixture
def world(tmp_path: Path) -> dict:
    repo = make_repo(tmp_path / "repo")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(shutil.which("git"), bindir / "git")
    return {"repo": repo, "bin": bindir, "env": {"PATH": str(bindir)}, "root": tmp_path / "repo.tasks"}


def test_bang_number_is_a_pull_request(world: dict) -> None:
    fake_tool(world["bin"], "gh", """echo '{"title": "Speed up parser", "body": "Make it fast.", "url": "u"}'""")
    r = run_cli(world["repo"], "start", "pr7", "--from", "!7", "--json", env=world["env"])
    assert r.returncode == 0, r
    assert (world["bin"] / "gh.argv").read_text().splitlines() == ["pr", "view", "7", "--json", "title,body,url"]
    assert "Make it fast." in (world["root"] / "pr7" / "task.md").read_text()


@pytest.mark.parametrize("rel", ["CLAUDE.md", "docs/requirements.md", ".cursorrules"])
def test_directory_with_only_one_key_file(world: dict, rel: str) -> None:
    d = world["repo"].parent / "feature"
    write(d / rel, f"# Work from {rel}\n\nthe body of {rel}\n")
    r = run_cli(world["repo"], "start", "d1", "--from", str(d), "--json", env=world["env"])
    assert r.returncode == 0, r
    assert f"the body of {rel}" in (world["root"] / "d1" / "task.md").read_text()


def test_directory_files_in_002_priority_order(world: dict) -> None:
    d = world["repo"].parent / "feature"
    for rel in (".cursorrules", "docs/requirements.md", "CLAUDE.md", "README.md", "spec.txt"):
        write(d / rel, f"body of {rel}\n")
    r = run_cli(world["repo"], "start", "d2", "--from", str(d), "--json", env=world["env"])
    assert r.returncode == 0, r
    md = (world["root"] / "d2" / "task.md").read_text()
    at = [md.index(f"body of {rel}") for rel in ("README.md", "CLAUDE.md", "docs/requirements.md", ".cursorrules", "spec.txt")]
    assert at == sorted(at), md


def test_directory_without_any_key_file_is_refused(world: dict) -> None:
    d = world["repo"].parent / "empty"
    write(d / "main.py", "print(1)\n")
    r = run_cli(world["repo"], "start", "d3", "--from", str(d), env=world["env"])
    assert r.returncode == 2 and "CLAUDE.md" in r.stderr, r
    assert not world["root"].exists()


def test_gitlab_merge_request_url_through_glab(world: dict) -> None:
    fake_tool(world["bin"], "glab", """echo '{"title": "Cache the index", "description": "Keep it warm.", "web_url": "u"}'""")
    url = "https://gitlab.example.com/grp/sub/app/-/merge_requests/12"
    r = run_cli(world["repo"], "start", "mr12", "--from", url, "--json", env=world["env"])
    assert r.returncode == 0, r
    argv = (world["bin"] / "glab.argv").read_text().splitlines()
    assert argv == ["mr", "view", "12", "--repo", "https://gitlab.example.com/grp/sub/app", "--output", "json"]
    assert "Keep it warm." in (world["root"] / "mr12" / "task.md").read_text()
    (world["bin"] / "glab").unlink()
    no = run_cli(world["repo"], "start", "mr13", "--from", url, env=world["env"])
    assert no.returncode == 2 and "`glab` command" in no.stderr, no

