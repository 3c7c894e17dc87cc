"""`spark-git archive list|restore`: see what was archived and bring it back as a new branch."""

from __future__ import annotations

import os
from pathlib import Path

from fixtures.repo import commit, git, spark


def run(repo: Path, *args: str):
    return spark(repo, *args, env={**os.environ, "SPARK_SESSION_ID": "s1"})


def test_list_filter_restore_and_refusals(repo: Path) -> None:
    for t in ("t1", "t2"):
        assert run(repo, "start", t, "--agents", "a1").returncode == 0
        commit(repo.parent / "repo.tasks" / t / "agents/a1/code", {f"{t}.txt": t}, f"[a1] {t}")
        assert run(repo, "abandon", t, "--why", "test").returncode == 0
    every = run(repo, "archive", "list", "--json")
    assert every.returncode == 0, every
    entries = every.json["data"]["entries"]
    assert [(e["task"], e["name"], e["subject"]) for e in entries] == [("t1", "task-t1-agent-a1", "[a1] t1"), ("t2", "task-t2-agent-a1", "[a1] t2")]
    only = run(repo, "archive", "list", "t2", "--json").json["data"]["entries"]
    assert [e["ref"] for e in only] == [entries[1]["ref"]]
    assert only[0]["sha"] == git(repo, "rev-parse", entries[1]["ref"])

    short = entries[0]["ref"].removeprefix("refs/spark/archive/")
    r = run(repo, "archive", "restore", short, "--branch", "back/t1", "--json")
    assert r.returncode == 0 and r.json["data"]["branch"] == "back/t1", r
    assert git(repo, "rev-parse", "back/t1") == entries[0]["sha"]
    refs = git(repo, "for-each-ref", "--format=%(objectname) %(refname)")
    for bad, code, words in (
        (["archive", "restore", short, "--branch", "back/t1"], 2, "already exists"),
        (["archive", "restore", "refs/spark/archive/t9/nothing/000000000000"], 2, "no archive ref"),
        (["archive", "restore", "refs/heads/main"], 2, "not an archive ref"),
        (["archive", "restore", short, "--branch", "bad..name"], 2, "bad branch name"),
        (["archive", "list", "Bad Name"], 2, "bad task name"),
    ):
        r = run(repo, *bad, "--json")
        assert r.returncode == code and words in r.json["summary"], (bad, r)
    assert git(repo, "for-each-ref", "--format=%(objectname) %(refname)") == refs
