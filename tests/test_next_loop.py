"""The loop's `next` is the step a coordinator takes (issue 32): after start, advance, a merge, a run;
the refusal of hooks installed but not committed names the commit and the `update` (it used to send the
user round `hooks install` → "already installed" → `hooks uninstall`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fixtures.repo import commit, make_repo, sealed_env, spark

from tests.protokit import P

FULL = "[approval]\nallow_non_interactive = true\n"


def env_for(tmp: Path) -> dict[str, str]:
    return {**sealed_env(tmp / "home", PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"), "SPARK_SESSION_ID": "owner"}


def test_hooks_installed_but_not_committed_point_at_the_commit_and_the_update(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config='protocol = "light"\n')
    assert spark(repo, "hooks", "install", "--client", "claude", env=env).returncode == 0
    assert spark(repo, "start", "t1", "--agents", "a", env=env).returncode == 0
    r = spark(repo, "--json", "agent", "run", "t1", "a", "--client", "claude", env=env)
    out = json.loads(r.stdout)
    assert r.returncode == 3 and "not committed" in out["summary"], out
    assert out["next"][1] == "spark-git update t1" and "commit" in out["next"][0] and ".claude/settings.json" in out["next"][0], out
    assert not list((tmp_path / "repo.tasks/t1/agents/a").glob("runs/*"))  # nothing started
    subprocess.run(out["next"][0], shell=True, check=True, env=env, capture_output=True)
    assert subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], env=env, capture_output=True, text=True).stdout == ""
    r = spark(repo, "--json", "update", "t1", env=env)
    assert r.returncode == 0, r
    rows = json.loads(spark(repo, "--json", "hooks", "check", env=env).stdout)["data"]["checks"]
    assert [k["loads"] for k in rows if k["agent"] == "a"] == [True], rows


def test_start_and_advance_name_the_states_first_step(tmp_path: Path) -> None:
    p = P(tmp_path, config=FULL)
    assert p.ok("classify", p.task, "--files", "src/app.py")["next"][0] == f"spark-git advance {p.task}"
    p.go()
    r = p.ok("advance", p.task)
    assert r["data"]["to"] == "REQUIREMENTS" and r["next"][0] == f"spark-git agent run {p.task} --all", r


def test_start_under_light_names_agent_run(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config='protocol = "light"\n')
    out = json.loads(spark(repo, "--json", "start", "t1", "--agents", "a", env=env).stdout)
    assert "spark-git agent run t1 --all" in out["next"], out


def test_a_merge_in_implementation_names_the_next_agent_run(tmp_path: Path) -> None:
    p = P(tmp_path, config=FULL + '[gates]\nbuild = ["true"]\n', agents="x-updater,x-reviewer")
    p.ok("classify", p.task, "--files", "src/app.py", "--risk", "MEDIUM", "--why", "test")
    agents = list(p.task_json()["agents"])
    p.to_synthesis_planned(agents)
    p.ok("approve", p.task, "--plan")
    p.go()
    commit(p.wt("x-updater"), {"src/app.py": "print('x')\n"}, "[x-updater] x")
    assert p.ok("merge", p.task, "--agent", "x-updater")["next"] == [f"spark-git agent run {p.task} --all"]


def test_synthesis_asks_for_the_plans_before_their_approval(tmp_path: Path) -> None:
    p = P(tmp_path, config=FULL, agents="x-updater")
    p.ok("classify", p.task, "--files", "src/app.py", "--risk", "MEDIUM", "--why", "test")
    agents = list(p.task_json()["agents"])
    p.go(), p.go()
    for a in agents:
        p.requirements(a)
        p.report(a)
    assert p.go()["to"] == "SYNTHESIS"
    r = p.advance()
    assert r.returncode == 3, r
    assert not any("approve" in n for n in r.json["next"]) and f"spark-git agent run {p.task} {agents[0]}" in r.json["next"], r.json["next"]
    p.plans(agents)
    assert p.advance().json["next"] == [f"spark-git approve {p.task} --plan"]
