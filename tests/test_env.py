"""`spark-git env`: SPARK_* of a worktree and a SPARK_PORT unique across the repo's live worktrees,
reused once a worktree (or its task's lock) is gone."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fixtures.race import run_together
from fixtures.repo import make_repo

from tests.hookutil import run_cli

CONFIG = "[ports]\nstart = 45500\nend = 45599\n"


def _env_all(repo: Path, task: str, agents: list[str | None], race: bool = False) -> dict[str | None, dict]:
    """Runs `spark-git env --json` for every worktree: one at a time, or with `race` as processes
    released at once (they race for the ports mutex)."""
    if not race:
        runs = {a: run_cli(repo, "env", task, *(["--agent", a] if a else []), "--json", session=None) for a in agents}
        assert all(r.returncode == 0 for r in runs.values()), runs
        return {a: r.json["data"] for a, r in runs.items()}
    runs = run_together(repo, [(["env", task, *(["--agent", a] if a else []), "--json"], {}) for a in agents], timeout=120)
    assert all(r.returncode == 0 for r in runs), runs
    return {a: r.json["data"] for a, r in zip(agents, runs, strict=True)}


def test_ports_unique_across_20_worktrees_and_reused_after_cleanup(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", config=CONFIG)
    agents = [f"a{i:02d}" for i in range(19)]
    assert run_cli(repo, "start", "t1", "--agents", ",".join(agents)).returncode == 0
    got = _env_all(repo, "t1", [None, *agents], race=True)
    ports = [int(d["vars"]["SPARK_PORT"]) for d in got.values()]
    assert len(set(ports)) == 20 and sorted(ports) == list(range(45500, 45520))
    # asking again gives each worktree the port it already has
    again = _env_all(repo, "t1", [None, "a05"])
    assert again[None]["vars"]["SPARK_PORT"] == got[None]["vars"]["SPARK_PORT"]
    assert again["a05"]["vars"]["SPARK_PORT"] == got["a05"]["vars"]["SPARK_PORT"]
    recorded = json.loads((tmp_path / "repo.tasks" / "ports.json").read_text())
    assert sorted(e["port"] for e in recorded["ports"]) == sorted(ports)

    # a second task gets ports no live worktree holds
    assert run_cli(repo, "start", "t2", "--agents", "b1").returncode == 0
    t2 = _env_all(repo, "t2", [None, "b1"])
    assert sorted(int(d["vars"]["SPARK_PORT"]) for d in t2.values()) == [45520, 45521]

    # the first task ends: its worktrees and lock go, so its ports are free again (no call to envs)
    r = run_cli(repo, "abandon", "t1", "--why", "test")
    assert r.returncode == 0, r
    assert not (tmp_path / "repo.tasks" / "t1" / "code").exists()
    assert run_cli(repo, "start", "t3", "--agents", "c1").returncode == 0
    t3 = _env_all(repo, "t3", [None, "c1"])
    assert sorted(int(d["vars"]["SPARK_PORT"]) for d in t3.values()) == [45500, 45501]
    assert {a: d["vars"]["SPARK_PORT"] for a, d in _env_all(repo, "t2", [None, "b1"]).items()} == {a: d["vars"]["SPARK_PORT"] for a, d in t2.items()}


def test_env_prints_every_variable_for_bash_fish_and_json(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", config=CONFIG)
    assert run_cli(repo, "start", "t1", "--agents", "a1", session="sess-9").returncode == 0
    root = tmp_path / "repo.tasks" / "t1"
    r = run_cli(repo, "env", "t1", "--agent", "a1", session=None)
    assert r.returncode == 0, r
    want = {
        "SPARK_TASK": "t1", "SPARK_AGENT": "a1", "SPARK_SESSION_ID": "agent:t1:a1",  # the agent's own, not the owner's
        "SPARK_WORKTREE": str(root / "agents" / "a1" / "code"), "SPARK_TASK_WORKTREE": str(root / "code"), "SPARK_PORT": "45500",
    }
    assert r.stdout == "".join(f"export {k}={v}\n" for k, v in want.items())
    # bash output really sets the variables
    sh = subprocess.run(["bash", "-c", f"{r.stdout}\nprintenv SPARK_WORKTREE SPARK_PORT"], capture_output=True, text=True)
    assert sh.stdout == f"{want['SPARK_WORKTREE']}\n45500\n"
    fish = run_cli(repo, "env", "t1", "--agent", "a1", "--shell", "fish")
    assert fish.stdout.splitlines()[0] == "set -gx SPARK_TASK 't1';" and "set -gx SPARK_PORT '45500';" in fish.stdout
    js = run_cli(repo, "env", "t1", "--agent", "a1", "--shell", "json")
    assert json.loads(js.stdout) == want
    task_env = run_cli(repo, "env", "t1", "--json").json["data"]
    assert task_env["vars"]["SPARK_WORKTREE"] == str(root / "code") and task_env["vars"]["SPARK_AGENT"] == ""
    assert task_env["vars"]["SPARK_SESSION_ID"] == "sess-9"  # the task worktree's: the coordinator's
    assert task_env["vars"]["SPARK_PORT"] == "45501"


def test_env_bad_input(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", config=CONFIG)
    assert run_cli(repo, "start", "t1").returncode == 0
    assert run_cli(repo, "env", "nope").returncode == 2
    r = run_cli(repo, "env", "t1", "--agent", "ghost")
    assert r.returncode == 2 and "no agent 'ghost'" in r.stderr
    assert run_cli(repo, "env", "t1", "--shell", "zsh").returncode == 2
    assert not (tmp_path / "repo.tasks" / "ports.json").exists()  # nothing allocated by refused calls


def test_release_frees_explicitly(tmp_path: Path) -> None:
    from spark_git.core.layout import Layout
    from spark_git.ops.shared import envs
    from spark_git.state.backends import open_store

    repo = make_repo(tmp_path / "repo", config=CONFIG)
    assert run_cli(repo, "start", "t1", "--agents", "a1").returncode == 0
    layout = Layout.discover(repo)
    store = open_store(layout)
    assert envs.allocate(store, "t1", "a1", layout.agent_worktree("t1", "a1")) == 45500
    assert envs.allocate(store, "t1", None, layout.task_worktree("t1")) == 45501
    assert envs.release(store, "t1", "a1") == [45500]
    assert [e["port"] for e in json.loads((tmp_path / "repo.tasks" / "ports.json").read_text())["ports"]] == [45501]
    assert envs.release(store, "t1", all_of_task=True) == [45501]


def test_gates_run_with_the_worktree_environment(tmp_path: Path) -> None:
    cfg = 'protocol = "light"\n' + CONFIG + '[gates]\nbuild = ["sh", "-c", "printenv SPARK_TASK SPARK_AGENT SPARK_WORKTREE SPARK_PORT; env | grep -c ^GIT_DIR=; true"]\n'
    repo = make_repo(tmp_path / "repo", config=cfg)
    assert run_cli(repo, "start", "t1", "--agents", "a1").returncode == 0
    port = run_cli(repo, "env", "t1", "--agent", "a1", "--json").json["data"]["vars"]["SPARK_PORT"]
    from fixtures.repo import commit

    wt = tmp_path / "repo.tasks" / "t1" / "agents" / "a1" / "code"
    commit(wt, {"x.py": "1\n"}, "[a1] x")
    r = run_cli(repo, "merge", "t1", "--agent", "a1", env={"GIT_DIR": str(tmp_path / "not-a-repo")})
    assert r.returncode == 0, r
    [log] = (tmp_path / "repo.tasks" / "t1" / "logs").glob("*-build.log")  # the gate printed what it was given
    checkout = tmp_path / "repo.tasks" / ".gates" / "t1" / "build"  # where it ran: its clean checkout of a1's head
    assert log.read_text().splitlines()[2:] == ["t1", "a1", str(checkout), port, "0"]
