"""The human output of the main commands, whole, against tests/golden/<test>.txt.

Each test drives a small scenario and records every command's exit code, stdout and stderr in one
transcript; `normalize` replaces what differs from run to run. After an intended change of the
output: `SPARK_REGEN_GOLDEN=1 ./scripts/test.sh tests/test_golden.py`, then review the diff."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.repo import commit

from tests.goldenkit import Transcript


@pytest.fixture
def tr(tmp_path: Path) -> Transcript:
    return Transcript(tmp_path)


def test_start(tr: Transcript) -> None:
    tr.run("start", "t1", "--agents", "a1,a2")
    tr.run("start", "t1", session="s2", expect=3)
    tr.run("start", "t1")  # the owner again: resumed
    tr.run("start", "Bad/Name", expect=2)
    tr.check("start")


def test_status(tr: Transcript) -> None:
    tr.run("status")
    tr.run("start", "t1", "--agents", "a1,a2")
    tr.run("start", "t2")
    commit(tr.wt("a1"), {"src/app.py": "print('a1')\n"}, "[a1] change app")
    (tr.wt("a2") / "scratch.txt").write_text("dirty\n")
    tr.run("status")
    tr.run("status", "t1")
    tr.run("status", "nope", expect=2)
    tr.check("status")


def test_merge_who_log(tr: Transcript) -> None:
    tr.run("start", "t1", "--agents", "a1,a2")
    commit(tr.wt("a1"), {"src/app.py": "print('a1')\n"}, "[a1] change app")
    commit(tr.wt("a1"), {"docs/a1.md": "notes\n"}, "notes without a prefix")
    tr.run("merge", "t1", "--agent", "a1")
    tr.run("merge", "t1", "--agent", "a1")  # nothing new
    commit(tr.wt("a2"), {"src/b.py": "b = 1\n"}, "[a2] add b")
    (tr.wt() / "stop.flag").write_text("")
    tr.run("merge", "t1", "--agent", "a2", expect=1)  # the build gate fails
    (tr.wt() / "stop.flag").unlink()
    tr.run("merge", "t1", "--agent", "a2")
    tr.run("merge", "t1", "--agent", "a2", session="s2", expect=3)
    tr.run("who", "t1")
    tr.run("log", "t1")
    tr.check("merge_who_log")


def test_approve_complete_cleanup(tr: Transcript) -> None:
    tr.run("start", "t1", "--agents", "a1")
    commit(tr.wt("a1"), {"src/app.py": "print('a1')\n"}, "[a1] change app")
    tr.run("merge", "t1", "--agent", "a1")
    tr.run("complete", "t1", expect=3)  # not approved
    tr.run("cleanup", "t1", expect=3)  # not complete
    tr.run("approve", "t1", "--changes")
    tr.run("complete", "t1")
    tr.run("cleanup", "t1")
    tr.run("status")
    tr.check("approve_complete_cleanup")


def test_doctor(tr: Transcript) -> None:
    tr.run("doctor")
    tr.run("start", "t1", "--agents", "a1,a2")
    tr.run("doctor")
    (tr.tmp / "repo.tasks" / "t1" / "agents" / "a2" / "status.json").write_text("{not json")
    tr.run("doctor", expect=1)
    tr.run("doctor", "--fix")
    tr.run("doctor")
    tr.check("doctor")
