"""`start` and `status` warn when agent worktrees will not load spark-git's hooks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from fixtures.repo import commit, make_repo, sealed_env, spark


def test_hooks_installed_but_not_committed_and_spark_git_not_on_path(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")
    assert spark(repo, "start", "t0", env=env).returncode == 0
    quiet = spark(repo, "status", "--json", env=env)
    assert quiet.returncode == 0, quiet
    assert [w for w in quiet.json["data"]["warnings"] if not w.startswith("approvals are verified against")] == []  # no hooks configured: nothing to warn
    assert spark(repo, "hooks", "install", env=env).returncode == 0  # project scope, not committed
    r = spark(repo, "start", "t1", "--agents", "a1", "--json", env=env)
    assert r.returncode == 0, r
    assert any("will not load spark-git's hooks" in w and "not committed" in w for w in r.json["data"]["warnings"]), r.json
    st = spark(repo, "status", "--json", env=env)
    assert any("will not load" in w for w in st.json["data"]["warnings"])
    commit(repo, {".claude/settings.json": (repo / ".claude" / "settings.json").read_text()}, "hooks")
    r2 = spark(repo, "start", "t2", "--agents", "a1", "--json", env=env)
    assert r2.returncode == 0 and not [w for w in r2.json["data"]["warnings"] if "will not load" in w], r2.json
    bare_path = {**env, "PATH": os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "spark-git").exists())}
    st2 = spark(repo, "status", "--json", env=bare_path, process=True)
    assert st2.returncode == 0, st2
    assert any("not on PATH" in w for w in st2.json["data"]["warnings"]), st2


def test_codex_hooks_load_from_the_main_checkout_and_a_worktree_without_codex_dir_is_warned_about(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")
    assert spark(repo, "hooks", "install", "--client", "codex", env=env).returncode == 0  # not committed: Codex reads it anyway
    r = spark(repo, "start", "t1", "--agents", "a1", "--json", env=env)
    assert r.returncode == 0 and not [x for x in r.json["data"]["warnings"] if "will not load" in x], r  # a1 got its .codex
    shutil.rmtree(repo.parent / "repo.tasks" / "t1" / "agents" / "a1" / "code" / ".codex")
    st = spark(repo, "status", "--json", env=env)
    w = [x for x in st.json["data"]["warnings"] if "will not load" in x]
    assert len(w) == 1 and "codex hooks" in w[0] and ".codex directory" in w[0] and "hooks install --client codex" in w[0], w


def test_the_human_output_of_start_and_status_shows_the_warnings(tmp_path: Path) -> None:
    """issue 14 audit: the warnings were in --json only; a human at the terminal saw nothing."""
    repo = make_repo(tmp_path / "repo")
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")
    assert spark(repo, "hooks", "install", env=env).returncode == 0  # project scope, not committed
    r = spark(repo, "start", "t1", "--agents", "a1", env=env)
    assert r.returncode == 0 and "⚠ 1 worktree(s) will not load spark-git's hooks" in r.stdout, r
    st = spark(repo, "status", env=env)
    assert st.returncode == 0 and "⚠ 1 worktree(s) will not load spark-git's hooks" in st.stdout, st
