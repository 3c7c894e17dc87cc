"""A verdict names a tree, and the gate runs on exactly that tree (issue 31 item 1): an agent commits
`return a - b` for `add` plus an ignored, stale `__pycache__/*.pyc` built from the correct code (an
unchecked-hash pyc: Python never looks at the source again). Gated in the agent's worktree, the
stale bytecode passed the tests and the wrong code landed; in a clean checkout of the commit the
gate fails, nothing is merged and no passing verdict is recorded for that tree."""

from __future__ import annotations

import py_compile
import sys
from pathlib import Path

import pytest
from fixtures.repo import git

from spark_git.core import gatebox
from tests.protokit import P

pytestmark = pytest.mark.skipif(gatebox.bwrap() is None, reason="bubblewrap is not installed (.ci/run installs it)")

TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"  # the same length: a stale pyc's size check would pass too


def test_a_stale_ignored_pyc_does_not_make_wrong_code_pass(tmp_path: Path) -> None:
    config = f'protocol = "light"\n[gates]\nbuild = ["{sys.executable}", "-m", "pytest", "-q", "-p", "no:cacheprovider"]\n'
    p = P(tmp_path, config=config, agents="a1", files={"README.md": "# demo\n", ".gitignore": "__pycache__/\n", "calc.py": RIGHT, "test_calc.py": TEST})
    wt = p.wt("a1")
    cache = wt / "__pycache__" / f"calc.{sys.implementation.cache_tag}.pyc"
    py_compile.compile(str(wt / "calc.py"), cfile=str(cache), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    head = p.commit("a1", {"calc.py": WRONG}, "[a1] add, simplified")
    assert cache.is_file() and git(wt, "status", "--porcelain") == ""  # ignored: the worktree is clean
    before = p.head()
    r = p.spark("--json", "merge", p.task, "--agent", "a1")
    assert r.returncode == 1 and "gate 'build' failed" in r.json["summary"], r
    assert p.head() == before  # nothing merged
    tree = git(p.repo, "rev-parse", f"{head}^{{tree}}")
    notes = git(p.repo, "notes", "--ref", "refs/notes/spark-verdicts", "show", tree, check=False)
    assert '"result":"passed"' not in notes.replace(" ", ""), notes  # no passing verdict for the wrong tree
    ran_in = Path(r.json["data"]["run_by_hand"].split(" && ")[0].removeprefix("cd "))
    assert ran_in != wt and git(ran_in, "rev-parse", "HEAD^{tree}") == tree  # a checkout of exactly the commit, not the agent's worktree
    # the same merge once the agent fixes the code: passes in the same checkout, reset
    p.commit("a1", {"calc.py": RIGHT.replace("a + b", "b + a")}, "[a1] add, fixed")
    assert p.spark("--json", "merge", p.task, "--agent", "a1").returncode == 0
