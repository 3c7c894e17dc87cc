"""Configuration: defaults, `.spark-git.toml` vs `[tool.spark-git]`, every key validated and used."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fixtures.repo import commit, git, make_repo, snapshot, spark


def run(repo: Path, *args: str, cwd: Path | None = None):
    return spark(cwd or repo, *args, env={**os.environ, "SPARK_SESSION_ID": "s1"})


def test_defaults_without_any_config(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", branch="trunk")
    r = run(repo, "start", "t1", "--json")
    assert r.returncode == 0, r
    d = r.json["data"]
    assert d["task_worktree"] == str(tmp_path / "proj.tasks" / "t1" / "code")
    assert d["base_branch"] == "trunk" and d["worktrees"] == [d["worktrees"][0]]  # no default agents


def test_spark_git_toml_keys_are_used(tmp_path: Path) -> None:
    config = (
        'tasks_root = "../elsewhere"\n'
        'base_branch = "develop"\n'
        'task_branch_template = "work/{task}"\n'
        'agent_branch_template = "work/{task}--{agent}"\n'
        'default_agents = ["arch-reviewer", "docs"]\n'
        '[agent_roles]\ndocs = "updater"\n'
    )
    repo = make_repo(tmp_path / "proj", config=config)
    git(repo, "branch", "develop")
    dev = git(repo, "rev-parse", "develop")
    git(repo, "commit", "--allow-empty", "-q", "-m", "main moves on")  # so base_branch really matters
    r = run(repo, "start", "t1", "--json")
    assert r.returncode == 0, r
    root = tmp_path / "elsewhere"
    d = r.json["data"]
    assert d["base_branch"] == "develop" and d["base_commit"] == dev
    assert [(w["agent"], w["branch"], w["path"]) for w in d["worktrees"]] == [
        (None, "work/t1", str(root / "t1" / "code")),
        ("arch-reviewer", "work/t1--arch-reviewer", str(root / "t1" / "agents" / "arch-reviewer" / "code")),
        ("docs", "work/t1--docs", str(root / "t1" / "agents" / "docs" / "code")),
    ]
    tf = json.loads((root / "t1" / "task.json").read_text())
    assert {a: e["role"] for a, e in tf["agents"].items()} == {"arch-reviewer": "reviewer", "docs": "updater"}
    for b in ("work/t1", "work/t1--arch-reviewer", "work/t1--docs"):
        assert git(repo, "rev-parse", b) == dev
    # --agents overrides default_agents
    r = run(repo, "start", "t2", "--agents", "solo", "--json")
    assert [w["agent"] for w in r.json["data"]["worktrees"]] == [None, "solo"], r


def test_pyproject_section_and_precedence(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "x"\n\n[tool.spark-git]\ntasks_root = "../from-pyproject"\n'
    repo = make_repo(tmp_path / "proj", {"pyproject.toml": pyproject})
    r = run(repo, "status", "--json")
    assert r.returncode == 0 and r.json["data"]["tasks_root"] == str(tmp_path / "from-pyproject"), r
    commit(repo, {".spark-git.toml": 'tasks_root = "../from-dedicated"\n'}, "dedicated")  # wins over pyproject
    r = run(repo, "status", "--json")
    assert r.returncode == 0 and r.json["data"]["tasks_root"] == str(tmp_path / "from-dedicated"), r


def test_pyproject_without_section_is_defaults(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"pyproject.toml": '[project]\nname = "x"\n[tool.other]\nz = 1\n'})
    r = run(repo, "status", "--json")
    assert r.returncode == 0 and r.json["data"]["tasks_root"] == str(tmp_path / "proj.tasks"), r


def test_absolute_and_home_tasks_root(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", config=f'tasks_root = "{tmp_path / "abs"}"\n')
    assert run(repo, "status", "--json").json["data"]["tasks_root"] == str(tmp_path / "abs")
    commit(repo, {".spark-git.toml": 'tasks_root = "~/spark-tasks"\n'}, "home")
    assert run(repo, "status", "--json").json["data"]["tasks_root"] == str(Path(os.environ["HOME"]) / "spark-tasks")


def test_config_comes_from_the_main_worktree_wherever_you_stand(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", config='tasks_root = "../tasks-a"\n')
    assert run(repo, "start", "t1", "--agents", "a1").returncode == 0
    agent_wt = tmp_path / "tasks-a" / "t1" / "agents" / "a1" / "code"
    # The agent's checkout has the committed config; edit the main worktree's copy only.
    (repo / ".spark-git.toml").write_text('tasks_root = "../tasks-a"\ndefault_agents = ["x"]\n')
    (agent_wt / ".spark-git.toml").write_text('tasks_root = "../../../../nowhere"\n')
    r = run(repo, "status", "--json", cwd=agent_wt / "")
    assert r.returncode == 0 and r.json["data"]["tasks_root"] == str(tmp_path / "tasks-a"), r


BAD = {
    'tasks_rot = "x"\n': "tasks_rot: unknown key",
    '[gates]\ntimeout_s = "x"\n': "gates.timeout_s",
    '[gates]\ntimeout_s = -1\n': "gates.timeout_s",
    'protocol = "heavy"\n': "protocol",
    'stale_minutes = 0\n': "stale_minutes",
    'default_agents = "a1"\n': "default_agents",
    '[ports]\nstart = 80\n': "ports.start",
    '[attribution]\nmode = "maybe"\n': "attribution.mode",
    'task_branch_template = "fixed"\n': "task_branch_template: Value error, must contain {task}",
    'agent_branch_template = "{task}-only"\n': "agent_branch_template",
    'task_branch_template = "{task}-{nope}"\n': "task_branch_template",
    'agent_branch_template = "{task}/{agent}/{0}"\n': "agent_branch_template",
    '[agent_roles]\nx = "boss"\n': "agent_roles.x",
    '[risk]\nhihg = []\n': "risk.hihg: unknown key",
}


def test_bad_config_names_the_key(tmp_path: Path) -> None:
    for i, (toml, key) in enumerate(BAD.items()):  # committed: the config spark-git reads
        repo = make_repo(tmp_path / f"proj{i}", config=toml)
        before = snapshot(repo)
        r = run(repo, "start", "t1", "--json")
        assert r.returncode == 2, (toml, r)
        assert key in r.json["summary"] and ".spark-git.toml" in r.json["summary"], (toml, r)
        assert not (tmp_path / f"proj{i}.tasks").exists() and snapshot(repo) == before
    repo = make_repo(tmp_path / "proj", config='protocol = "heavy"\n[gates]\nbuidl = 1\n')
    r = run(repo, "start", "t1")  # human output: every bad key, no traceback
    assert r.returncode == 2 and "protocol" in r.stderr and "gates.buidl: unknown key" in r.stderr, r
    assert "Traceback" not in r.stderr


def test_bad_default_agent_name_is_exit_2(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", config='default_agents = ["Bad Name"]\n')
    before = snapshot(repo)
    r = run(repo, "start", "t1", "--json")
    assert r.returncode == 2 and "bad agent name" in r.json["summary"], r
    assert snapshot(repo) == before


def test_template_making_an_invalid_branch_is_exit_2(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", config='task_branch_template = "{task}.lock"\n')
    before = snapshot(repo)
    r = run(repo, "start", "t1", "--json")
    assert r.returncode == 2 and "not a valid branch name" in r.json["summary"], r
    assert snapshot(repo) == before
