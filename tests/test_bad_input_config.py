"""Bad configuration (issue 12, "Bad input"): exit 2 naming the key, and nothing created."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixtures.repo import git, make_repo, snapshot, spark

ENV = {"SPARK_SESSION_ID": "s1"}


def _start_refused(repo: Path, *needles: str) -> None:
    before = snapshot(repo)
    r = spark(repo, "start", "t1", "--agents", "a1", "--json", env={**os.environ, **ENV})
    assert r.returncode == 2, r
    assert r.json["status"] == "FAIL", r
    for n in needles:
        assert n in r.json["summary"], r
    assert "Traceback" not in r.stderr + r.stdout, r
    assert snapshot(repo) == before
    assert git(repo, "tag", "--list") == ""


@pytest.mark.parametrize(("toml", "key"), [
    ("[gates]\ntimeout_s = true\n", "gates.timeout_s"),
    ('[gates]\ntimeout_s = "10"\n', "gates.timeout_s"),
    ('stale_minutes = "5"\n', "stale_minutes"),
    ("[approval]\nallow_non_interactive = 1\n", "approval.allow_non_interactive"),
    ('[ports]\nstart = "42000"\n', "ports.start"),
    ("[ports]\nstart = 42000.0\n", "ports.start"),
    ("default_agents = [1]\n", "default_agents.0"),
], ids=["bool-as-seconds", "string-as-seconds", "string-minutes", "int-as-bool", "string-port", "float-port", "int-agent"])
def test_config_values_are_strictly_typed(tmp_path: Path, toml: str, key: str) -> None:
    _start_refused(make_repo(tmp_path / "r", config=toml), key)


def test_int_is_still_a_float(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", config="[gates]\ntimeout_s = 10\nbuild = 'true'\n")
    assert spark(repo, "status", "--json").returncode == 0


def test_ports_start_after_end_is_refused(tmp_path: Path) -> None:
    _start_refused(make_repo(tmp_path / "r", config="[ports]\nstart = 42000\nend = 41000\n"), "ports", "greater than ports.end")


@pytest.mark.parametrize(("toml", "key"), [
    ('task_branch_template = "refs/tags/{task}"\n', "task_branch_template"),
    ('agent_branch_template = "refs/tags/{task}-{agent}"\n', "agent_branch_template"),
    ('task_branch_template = "refs/heads/{task}"\n', "task_branch_template"),
    ('task_branch_template = "-{task}"\n', "task_branch_template"),
    ('task_branch_template = "{task} x"\n', "task_branch_template"),
    ('agent_branch_template = "{task}/../{agent}"\n', "agent_branch_template"),
    ('agent_branch_template = "{task}/{agent}"\n', "git cannot hold a branch and another one below it"),
    ('task_branch_template = "x/{task}/y"\nagent_branch_template = "x/{task}/y/{agent}"\n', "git cannot hold"),
], ids=["tag", "agent-tag", "full-ref", "dash", "space", "dotdot", "dir-file-clash", "dir-file-clash-2"])
def test_branch_template_must_give_a_branch_name(tmp_path: Path, toml: str, key: str) -> None:
    _start_refused(make_repo(tmp_path / "r", config=toml), key)


def test_template_collision_between_task_and_agent_branch_is_exit_2(tmp_path: Path) -> None:
    """The agent 'x' of task 't1' would get the task's own branch: refused before anything exists."""
    repo = make_repo(tmp_path / "r", config='task_branch_template = "{task}-x"\nagent_branch_template = "{task}-{agent}"\n')
    before = snapshot(repo)
    r = spark(repo, "start", "t1", "--agents", "x", "--json", env={**os.environ, **ENV})
    assert r.returncode == 2, r
    assert "t1-x" in r.json["summary"], r
    assert snapshot(repo) == before


@pytest.mark.parametrize("where", ["inside", "slash", "parent"])
def test_tasks_root_inside_or_containing_the_repo_is_refused(tmp_path: Path, where: str) -> None:
    root = {"inside": "tasks", "slash": "/", "parent": ".."}[where]
    _start_refused(make_repo(tmp_path / "r", config=f'tasks_root = "{root}"\n'), "tasks_root")


def test_tasks_root_inside_another_repository_is_refused(tmp_path: Path) -> None:
    other = make_repo(tmp_path / "other")
    before = snapshot(other)
    _start_refused(make_repo(tmp_path / "r", config=f'tasks_root = "{other / "tasks"}"\n'), "tasks_root", "another git repository")
    assert snapshot(other) == before and not (other / "tasks").exists()


def test_tasks_root_that_is_a_file_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x\n")
    _start_refused(make_repo(tmp_path / "r", config='tasks_root = "../afile"\n'), "tasks_root", "not a directory")
    assert (tmp_path / "afile").read_text() == "x\n"
