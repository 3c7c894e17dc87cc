"""Store.archive creates `refs/spark/archive/<task>/<name>/<sha12>` by compare-and-swap in one git
process and looks only when that fails (issue 31, the bench_merge budget): archiving the same commit
again returns the same ref, a 12-digit prefix held by another commit gets the longer name, and a
name held by another commit both ways is refused with nothing moved."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.repo import commit, git, make_repo

from spark_git.core.errors import GitError
from spark_git.core.layout import Layout
from spark_git.state.backends import open_store
from spark_git.state.store import archive_ref_for

CONFIG = 'protocol = "light"\n'


def _store(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config=CONFIG)
    return repo, open_store(Layout.discover(repo))


def test_archiving_a_commit_twice_gives_one_ref(tmp_path: Path) -> None:
    repo, store = _store(tmp_path)
    head = git(repo, "rev-parse", "HEAD")
    ref = store.archive("t1", "task-t1-agent-a1", head, "before stamping", event=False)
    assert ref == archive_ref_for("t1", "task-t1-agent-a1", head) and git(repo, "rev-parse", ref) == head
    assert store.archive("t1", "task-t1-agent-a1", head, "again", event=False) == ref
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/spark/archive/") == ref


def test_a_prefix_held_by_another_commit_gets_the_longer_name(tmp_path: Path) -> None:
    repo, store = _store(tmp_path)
    first = git(repo, "rev-parse", "HEAD")
    second = commit(repo, {"b.txt": "b\n"}, "second")
    taken = archive_ref_for("t1", "a", second)
    git(repo, "update-ref", taken, first)  # as if another commit shared `second`'s 12-digit prefix
    ref = store.archive("t1", "a", second, "collision", event=False)
    assert ref == f"{taken}-{second[12:20]}" and git(repo, "rev-parse", ref) == second
    assert git(repo, "rev-parse", taken) == first  # an existing ref is never moved
    assert store.archive("t1", "a", second, "again", event=False) == ref


def test_both_names_held_by_other_commits_is_refused_and_nothing_moves(tmp_path: Path) -> None:
    repo, store = _store(tmp_path)
    first = git(repo, "rev-parse", "HEAD")
    second = commit(repo, {"b.txt": "b\n"}, "second")
    taken = archive_ref_for("t1", "a", second)
    git(repo, "update-ref", taken, first)
    git(repo, "update-ref", f"{taken}-{second[12:20]}", first)
    with pytest.raises(GitError):
        store.archive("t1", "a", second, "collision", event=False)
    assert git(repo, "rev-parse", taken) == first and git(repo, "rev-parse", f"{taken}-{second[12:20]}") == first
