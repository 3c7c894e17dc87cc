"""A refused merge changes nothing (issue 24, defect 5): a failing build gate, or a gate command that
does not exist, used to leave the agent branch rebased onto the task head and stamped."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.repo import git

from tests.mergekit import PY, Task, config

FAILS = [PY, "-c", "import os, sys; sys.exit(1 if os.path.exists('b.txt') else 0)"]  # passes a1's tree, fails a2's


def _no_notes(refs: str) -> list[str]:  # a failed gate's evidence (notes) is new; nothing else may move
    return [ln for ln in refs.splitlines() if not ln.endswith(("refs/notes/spark", "refs/notes/spark-verdicts"))]


@pytest.mark.parametrize("gate", ["fails", "missing"])
def test_a_refused_merge_leaves_the_agent_branch_and_worktree_as_they_were(tmp_path: Path, gate: str) -> None:
    build = FAILS if gate == "fails" else ["/nonexistent/spark-gate-missing", "--check"]
    t = Task(tmp_path, ["a1", "a2"], config(build=FAILS))
    t.commit("a1", {"a.txt": "a\n"}, "a1 work")  # unstamped: the merge would prefix [a1]
    t.commit("a2", {"b.txt": "b\n"}, "a2 work")  # unstamped, behind the task head once a1 lands
    assert t.merge("a1").returncode == 0
    (t.repo / ".spark-git.toml").write_text(config(build=build))
    git(t.repo, "commit", "-q", "--allow-empty", "-am", "the gate under test")  # the committed config is the one in force
    before = t.snapshot(["a1", "a2"])
    r = t.merge("a2")
    assert r.returncode == 1, r
    after = t.snapshot(["a1", "a2"])
    assert _no_notes(after.pop("refs")) == _no_notes(before.pop("refs"))
    assert after == before
    assert not (t.root / "agents/a2/.spark-merge-rebase").exists()
