"""Approvals bind the exact content (issue 23): a change that only whitespace tells apart voids the
approval, and refs are full names (a tag named like the base branch hides nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.repo import git

from tests.mergekit import PY, Task, config

OK_GATE = [PY, "-c", "pass"]


def _approved(tmp_path: Path, files: dict[str, str]) -> Task:
    t = Task(tmp_path, ["a1"], config(build=OK_GATE, non_interactive=True))
    t.commit("a1", files, "[a1] change")
    assert t.merge("a1").returncode == 0
    assert t.spark("approve", "t1", "--changes").returncode == 0
    return t


@pytest.mark.parametrize(("name", "approved", "landed"), [
    ("clean.sh", "rm -rf ./build\n", "rm -rf . /build\n"),
    ("guard.py", "def f(x):\n    if x:\n        raise SystemExit(1)\n    return x\n",
     "def f(x):\n    if x:\n        raise SystemExit(1)\n        return x\n"),
])
def test_a_whitespace_change_voids_the_approval(tmp_path: Path, name: str, approved: str, landed: str) -> None:
    # fails before: `git patch-id --stable` ignores whitespace, the approval held and the change landed
    t = _approved(tmp_path, {name: approved})
    main_before = git(t.repo, "rev-parse", "main")
    t.commit("a1", {name: landed}, "[a1] tweak")
    assert t.merge("a1").returncode == 0
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 3, r
    assert any("another patch" in u for u in r.json["data"]["unmet"]), r.json
    assert "spark-git approve t1 --changes" in r.json["next"]
    assert git(t.repo, "rev-parse", "main") == main_before


def test_a_byte_identical_patch_keeps_the_approval(tmp_path: Path) -> None:
    t = _approved(tmp_path, {"clean.sh": "rm -rf ./build\n"})
    t.commit("a1", {"clean.sh": "rm -rf  ./build\n"}, "[a1] two spaces")
    t.commit("a1", {"clean.sh": "rm -rf ./build\n"}, "[a1] back")  # the patch against main is the approved one again
    assert t.merge("a1").returncode == 0
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 0, r
    assert git(t.repo, "rev-parse", "refs/heads/main^2") == t.head()  # the landing merge's second parent: the approved head


def test_a_tag_named_like_the_base_hides_no_commit_from_the_approval_screen(tmp_path: Path) -> None:
    # fails before: `main` resolved to the tag, the screen showed the docs commit only and backdoor.py landed
    t = Task(tmp_path, ["a1"], config(build=OK_GATE, non_interactive=True))
    t.commit("a1", {"backdoor.py": "import os\n"}, "[a1] helper")
    t.commit("a1", {"README.md": "# demo, documented\n"}, "[a1] docs")
    assert t.merge("a1").returncode == 0
    git(t.repo, "tag", "main", t.head("a1") + "~1")
    r = t.spark("--json", "approve", "t1", "--changes")
    assert r.returncode == 0, r
    shown = r.json["data"]["presented"]
    assert len(shown["commits"]) == 2 and {f["path"] for f in shown["files"]} == {"backdoor.py", "README.md"}, shown
    assert shown["base"] == git(t.repo, "rev-parse", "refs/heads/main")
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 0, r
    landed = git(t.repo, "rev-list", "--no-merges", f"{shown['base']}..refs/heads/main").split()
    assert landed == [c["sha"] for c in shown["commits"]] and landed[0] == shown["commit_sha"], (landed, shown)  # what lands is what was shown
    assert git(t.repo, "rev-parse", "refs/heads/main^2") == shown["commit_sha"]
