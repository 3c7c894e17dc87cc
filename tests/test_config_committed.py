"""Issue 23 item 4: what guards landing is read from the base branch's committed config, never from an
untracked or modified file in the main worktree (which an agent can write); a difference is warned
about. Issue 24 item 9: a config that is a directory, or an empty gate command, is exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fixtures.repo import commit, git, make_repo, spark, with_unprotected_key

from tests.hookutil import event, hook
from tests.mergekit import PY, Task, config

FAIL = [PY, "-c", "import sys; sys.exit(5)"]


def test_untracked_config_does_not_land_failing_code(tmp_path: Path) -> None:
    """The measured attack: an untracked `.spark-git.toml` with a passing final gate and
    non-interactive approval. Failed before the fix: approve and complete succeeded, main moved."""
    t = Task(tmp_path, ["a1"], config(build=[PY, "-c", "pass"], final=FAIL))
    t.commit("a1", {"feature.txt": "broken\n"}, "[a1] feature")
    assert t.merge("a1").returncode == 0
    (t.repo / ".spark-git.toml").write_text(config(build=[PY, "-c", "pass"], final="true", non_interactive=True))
    main = git(t.repo, "rev-parse", "main")
    r = t.spark("--json", "approve", "t1", "--changes", input="t1\n")
    assert r.returncode == 3, r  # not a terminal, and the committed config does not allow that
    assert "gates.final" in r.stderr and "approval.allow_non_interactive" in r.stderr, r  # the drift, named
    r = t.spark("--json", "complete", "t1")
    assert r.returncode != 0 and git(t.repo, "rev-parse", "main") == main, r


def test_modified_config_is_warned_and_the_committed_one_used(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"}, config='tasks_root = "../committed"\n')
    (repo / ".spark-git.toml").write_text(with_unprotected_key('tasks_root = "../mine"\nprotocol = "light"\n'))
    r = spark(repo, "status", "--json")
    assert r.returncode == 0 and r.json["data"]["tasks_root"] == str(tmp_path / "committed"), r
    assert "differs from the committed one in protocol, tasks_root" in r.stderr, r
    git(repo, "commit", "-qam", "config: light, tasks elsewhere")  # committed to main: applies
    r = spark(repo, "status", "--json")
    assert r.json["data"]["tasks_root"] == str(tmp_path / "mine") and "differs" not in r.stderr, r


def test_no_committed_config_is_defaults_and_an_uncommitted_one_is_reported(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    r = spark(repo, "status", "--json")
    assert r.returncode == 0 and r.stderr == "" and r.json["data"]["tasks_root"] == str(tmp_path / "repo.tasks"), r
    (repo / ".spark-git.toml").write_text('tasks_root = "../mine"\n')
    r = spark(repo, "status", "--json")
    assert r.json["data"]["tasks_root"] == str(tmp_path / "repo.tasks") and "commit it to main" in r.stderr, r


def test_hook_ignores_an_untracked_tasks_root(tmp_path: Path) -> None:
    """Failed before the fix: the untracked tasks_root moved the hook's tasks root, and agent a1 could
    write into a2's worktree."""
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"})
    assert spark(repo, "start", "t1", "--agents", "a1,a2", env={**os.environ, "SPARK_SESSION_ID": "s1"}).returncode == 0
    (repo / ".spark-git.toml").write_text('tasks_root = "../elsewhere"\n')
    root = tmp_path / "repo.tasks" / "t1"
    r = hook(event(root / "agents" / "a1" / "code", "Write", file_path=str(root / "agents" / "a2" / "code" / "x.py")))
    assert r.returncode == 2 and "agent a2's worktree" in r.stderr, r


def test_hook_follows_the_committed_tasks_root_as_the_base_moves(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"}, config='tasks_root = "../elsewhere"\n')
    env = {**os.environ, "SPARK_SESSION_ID": "s1"}
    assert spark(repo, "start", "t1", "--agents", "a1,a2", env=env).returncode == 0  # writes the hook's cache
    root = tmp_path / "elsewhere" / "t1"
    ev = event(root / "agents" / "a1" / "code", "Write", file_path=str(root / "agents" / "a2" / "code" / "x.py"))
    assert hook(ev).returncode == 2
    commit(repo, {".spark-git.toml": 'tasks_root = "../other"\n'}, "move the tasks")  # cache now stale
    r = hook(ev)
    assert r.returncode == 0, r  # under ../other, t1 is not a task any more: read from the new tip, not the cache
    cache = json.loads((repo / ".git" / "spark" / "committed-config.json").read_text())
    assert cache["tip"] == git(repo, "rev-parse", "main") and cache["tasks_root"] == "../other", cache  # the hook refreshed it
    assert hook(ev).returncode == 0


def test_base_branch_named_in_the_committed_config_is_where_config_is_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"}, config='base_branch = "develop"\n')
    git(repo, "branch", "develop")
    commit(repo, {".spark-git.toml": 'base_branch = "develop"\ntasks_root = "../on-main"\n'}, "main only")
    r = spark(repo, "status", "--json")
    assert r.returncode == 0 and r.json["data"]["tasks_root"] == str(tmp_path / "repo.tasks"), r  # develop's config


def test_config_that_is_a_directory_is_bad_input(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "x\n"}, config='[gates]\nfinal = "false"\n')
    (repo / ".spark-git.toml").unlink()
    (repo / ".spark-git.toml").mkdir()
    r = spark(repo, "status", "--json")
    assert r.returncode == 2 and ".spark-git.toml" in r.json["summary"] and r.json["next"], r


def test_empty_gate_command_is_bad_input_naming_the_key(tmp_path: Path) -> None:
    for text, key in (('[gates]\nbuild = ""\n', "gates.build"), ('[gates]\nfinal = []\n', "gates.final"), ('[gates]\nfinal = "  "\n', "gates.final")):
        repo = make_repo(tmp_path / key / str(len(text)), {"README.md": "x\n"}, config=text)
        r = spark(repo, "status", "--json")
        assert r.returncode == 2 and f"{key}: " in r.json["summary"] + str(r.json.get("details")), r
