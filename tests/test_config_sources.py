"""Where configuration comes from beyond the repository's file: the person's config and SPARK_GIT_*
variables (personal keys only), a pyproject.toml that is not spark-git's business, a tasks_root that
moved away from existing tasks, and `start --from` with a mistyped path."""

from __future__ import annotations

import os
from pathlib import Path

from fixtures.repo import commit, make_repo, snapshot, spark

BROKEN_ELSEWHERE = '[project]\nname = "x"\nversion = = 1\n\n[tool.spark-git]\nstale_minutes = 7\n'


def run(repo: Path, *args: str, **env: str):
    return spark(repo, *args, env={**os.environ, "SPARK_SESSION_ID": "s1", **env})


def personal(xdg: Path, text: str) -> dict[str, str]:
    """The person's config in a directory of this test's own (never the shared XDG_CONFIG_HOME)."""
    path = xdg / "spark-git" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return {"XDG_CONFIG_HOME": str(xdg)}


def config_of(repo: Path, **env: str) -> dict:
    from spark_git.core.layout import Layout

    saved = dict(os.environ)
    os.environ.update(env)
    try:
        return Layout.discover(repo).config.model_dump()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_personal_config_and_environment_set_personal_keys_only(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", config='stale_minutes = 5\n[gates]\nbuild = "true"\n')
    env = personal(tmp_path / "xdg", 'stale_minutes = 45\n[queue]\nwait_s = 60\n[gates]\nbuild = "false"\n[risk]\nhigh = []\n')
    cfg = config_of(repo, **env)
    assert cfg["stale_minutes"] == 45 and cfg["queue"]["wait_s"] == 60  # personal over the repository's
    assert cfg["gates"]["build"] == "true" and cfg["risk"]["high"][0] == "CLAUDE.md"  # never from the person
    r = run(repo, "status", "--json", **env)
    assert r.returncode == 0, r
    assert "gates.build is not a personal key" in r.stderr and "risk.high is not a personal key" in r.stderr
    cfg = config_of(repo, **env, SPARK_GIT_STALE_MINUTES="90", SPARK_GIT_GATES_BUILD="rm -rf /")
    assert cfg["stale_minutes"] == 90 and cfg["gates"]["build"] == "true"  # the environment over the file
    r = run(repo, "status", "--json", SPARK_GIT_GATES_BUILD="false")
    assert r.returncode == 0 and "SPARK_GIT_GATES_BUILD is not a personal key" in r.stderr, r
    r = run(repo, "status", "--json", SPARK_GIT_STALE_MINUTES="soon")
    assert r.returncode == 2 and "stale_minutes" in r.stdout, r


def test_xdg_config_home_is_honoured(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    assert config_of(repo, **personal(tmp_path / "xdg", "stale_minutes = 12\n"))["stale_minutes"] == 12
    home = tmp_path / "home"
    personal(home / ".config", "stale_minutes = 13\n")  # without XDG_CONFIG_HOME: ~/.config
    saved = os.environ.pop("XDG_CONFIG_HOME", None)
    try:
        assert config_of(repo, HOME=str(home))["stale_minutes"] == 13
    finally:
        if saved is not None:
            os.environ["XDG_CONFIG_HOME"] = saved


def test_a_pyproject_broken_outside_our_table_does_not_stop_commands(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj", {"pyproject.toml": BROKEN_ELSEWHERE})
    r = run(repo, "status", "--json")
    assert r.returncode == 0 and "is not valid TOML" in r.stderr, r
    assert config_of(repo)["stale_minutes"] == 7
    commit(repo, {"pyproject.toml": '[project]\nname = = "x"\n'}, "broken")  # no [tool.spark-git]: never parsed
    r = run(repo, "status", "--json")
    assert r.returncode == 0 and r.stderr == "", r
    commit(repo, {"pyproject.toml": '[project]\nname = "x"\n[tool.spark-git]\nstale_minutes = = 3\n'}, "ours broken")  # ours is broken
    r = run(repo, "status", "--json")
    assert r.returncode == 2 and "[tool.spark-git]" in r.stdout, r


def test_tasks_under_another_root_are_named_by_status_and_doctor(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "myrepo")
    assert run(repo, "start", "t1", "--agents", "").returncode == 0
    commit(repo, {".spark-git.toml": 'tasks_root = "../myrepo.tasks"\n'}, "default")  # the default, spelled out
    assert [t["task"] for t in run(repo, "status", "--json").json["data"]["tasks"]] == ["t1"]
    commit(repo, {".spark-git.toml": 'tasks_root = "../moved.tasks"\n'}, "moved")
    r = run(repo, "status", "--json")
    assert r.returncode == 0, r
    assert any("1 task(s) under" in w and "t1" in w for w in r.json["data"]["warnings"]), r.json
    human = run(repo, "status")
    assert human.returncode == 0 and "⚠ 1 task(s) under" in human.stdout and ": t1" in human.stdout, human  # not only in --json
    r = run(repo, "doctor", "--json")
    d = r.json["data"]
    assert [f["kind"] for f in d["findings"]] == ["tasks-elsewhere"] and "t1" in d["findings"][0]["problem"]
    assert r.returncode == 1 and r.json["next"] == [], r.json  # --fix cannot repair it: not suggested


def test_start_from_a_mistyped_path_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "proj")
    before = snapshot(repo)
    for arg in ("docs/spec.md", "./spec", "spec.md", "~/nowhere/spec.txt"):
        r = run(repo, "start", "--from", arg, "--json")
        assert r.returncode == 2 and "no such file or directory" in r.stdout, r
    assert snapshot(repo) == before
    r = run(repo, "start", "--from", "Make the build reproducible", "--json")
    assert r.returncode == 0, r
