"""The gate's clean checkout made for less (issue 31, the bench_merge budget) and still exactly the
commit: a new checkout is `worktree add` alone (no second checkout and clean on top), a checkout
removed by hand is made again without a prune first, a leftover directory is replaced; the merge's
next step reads every agent branch in one git process."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from fixtures.repo import git, make_repo

from spark_git.core.git import Git
from tests.mergekit import Task, config

# Passes only in a checkout with nothing but the commit's files: no untracked, no ignored file.
NOTHING_ELSE = "test -z \"$(git status --porcelain --ignored --untracked-files=all)\""


def _checkout(t: Task) -> Path:
    return t.root.parent / ".gates" / "t1" / "build"


def test_a_new_gate_checkout_holds_the_commit_and_nothing_else(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=NOTHING_ELSE))
    t.commit("a1", {"feature.py": "x = 1\n"}, "[a1] feature")
    assert not _checkout(t).exists()
    r = t.merge("a1")
    assert r.returncode == 0, r
    assert git(_checkout(t), "rev-parse", "HEAD") == git(t.repo, "rev-parse", "t1")  # the landed (stamped) commit
    assert git(_checkout(t), "rev-parse", "HEAD^{tree}") == git(t.repo, "rev-parse", "t1^{tree}")
    assert git(_checkout(t), "status", "--porcelain", "--ignored", "--untracked-files=all") == ""


def test_a_gate_checkout_removed_by_hand_is_made_again(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=NOTHING_ELSE))
    t.commit("a1", {"one.py": "x = 1\n"}, "[a1] one")
    assert t.merge("a1").returncode == 0
    shutil.rmtree(_checkout(t))  # git still lists it (not pruned): `worktree add --force` takes the path
    assert str(_checkout(t)) in git(t.repo, "worktree", "list", "--porcelain")
    t.commit("a1", {"two.py": "y = 2\n"}, "[a1] two")
    r = t.merge("a1")
    assert r.returncode == 0, r
    assert git(_checkout(t), "rev-parse", "HEAD") == git(t.repo, "rev-parse", "t1")
    listed = [ln for ln in git(t.repo, "worktree", "list", "--porcelain").splitlines() if ln == f"worktree {_checkout(t)}"]
    assert len(listed) == 1, listed


def test_a_leftover_directory_in_the_gate_checkouts_place_is_replaced(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=NOTHING_ELSE))
    t.commit("a1", {"one.py": "x = 1\n"}, "[a1] one")
    _checkout(t).mkdir(parents=True)
    (_checkout(t) / "planted.py").write_text("raise SystemExit(0)\n")  # not a checkout (no .git): thrown away
    r = t.merge("a1")
    assert r.returncode == 0, r
    assert not (_checkout(t) / "planted.py").exists()
    assert git(_checkout(t), "rev-parse", "HEAD") == git(t.repo, "rev-parse", "t1")


def test_a_reused_gate_checkout_is_reset_to_the_next_commit(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=NOTHING_ELSE))
    t.commit("a1", {"one.py": "x = 1\n"}, "[a1] one")
    assert t.merge("a1").returncode == 0
    (_checkout(t) / "__pycache__").mkdir()
    (_checkout(t) / "__pycache__" / "one.cpython-311.pyc").write_bytes(b"stale")  # untracked, and removed by the reset
    (_checkout(t) / "one.py").write_text("x = 'edited'\n")
    t.commit("a1", {"two.py": "y = 2\n"}, "[a1] two")
    r = t.merge("a1")
    assert r.returncode == 0, r
    assert (_checkout(t) / "one.py").read_text() == "x = 1\n" and not (_checkout(t) / "__pycache__").exists()


def test_unmerged_names_exactly_the_refs_asked_for(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    git(repo, "branch", "merged")
    git(repo, "checkout", "-q", "-b", "ahead")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "b")
    git(repo, "branch", "grp/ahead")  # matched by the pattern refs/heads/grp, which is not asked for by name
    git(repo, "checkout", "-q", "main")
    g = Git(repo)
    asked = ["refs/heads/merged", "refs/heads/ahead", "refs/heads/grp", "refs/heads/gone"]
    assert g.unmerged("main", asked) == {"refs/heads/ahead"}
    assert g.unmerged("ahead", asked) == set()
    assert g.unmerged("main", []) == set()


def test_the_gate_checkout_gets_the_include_files_and_no_client_hook_settings(tmp_path: Path) -> None:
    """`[worktree] include` files are copied into the gate's checkout; the agent clients' local hook
    settings, which every agent worktree gets, are not (no agent runs there: one git process less)."""
    files = {"README.md": "# demo\n", ".gitignore": "extra.cfg\n.claude/settings.local.json\n"}
    gate = "test -f extra.cfg && test ! -e .claude/settings.local.json"
    t = Task(tmp_path, ["a1"], config(build=gate, extra='[worktree]\ninclude = ["extra.cfg"]'), files=files)
    (t.repo / "extra.cfg").write_text("local = 1\n")
    (t.repo / ".claude").mkdir()
    (t.repo / ".claude" / "settings.local.json").write_text("{}\n")
    t.commit("a1", {"feature.py": "x = 1\n"}, "[a1] feature")
    r = t.merge("a1")
    assert r.returncode == 0, r
    assert (_checkout(t) / "extra.cfg").read_text() == "local = 1\n"
    assert not (_checkout(t) / ".claude").exists()


def test_a_worktrees_admin_dir_is_read_from_its_git_file_as_git_reads_it(tmp_path: Path) -> None:
    """The gate's box finds the checkout's admin dir without a git process: the same answer as git's."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "linked"), "HEAD")
    for where in (repo, tmp_path / "linked"):
        asked = Path(git(where, "rev-parse", "--absolute-git-dir"))
        assert Git(where).admin_dir().resolve() == asked.resolve()
    admin = Path(git(tmp_path / "linked", "rev-parse", "--absolute-git-dir"))
    (tmp_path / "linked" / ".git").write_text(f"gitdir: {os.path.relpath(admin, tmp_path / 'linked')}\n")  # as `--relative-paths` writes it
    assert Path(git(tmp_path / "linked", "rev-parse", "--absolute-git-dir")).resolve() == admin.resolve()
    assert Git(tmp_path / "linked").admin_dir() == admin.resolve()
