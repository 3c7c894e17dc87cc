"""A task.json edited by hand into a state its transition_log cannot explain is refused by every
command on the task (exit 3, pointing at `spark-git doctor`) and changes nothing; status and audit
show it; doctor reads it anyway."""

from __future__ import annotations

import json

import pytest
from fixtures.repo import git

from tests.protokit import P

CFG = """protocol = "light"
[approval]
allow_non_interactive = true
"""

COMMANDS = [
    ["advance", "t1"],
    ["classify", "t1", "--files", "README.md"],
    ["report", "t1", "--agent", "code-updater", "--status", "WORKING"],
    ["agent", "add", "t1", "late-updater", "--why", "help"],
    ["merge", "t1", "--agent", "code-updater"],
    ["sync", "t1", "--agent", "code-updater"],
    ["approve", "t1", "--changes"],
    ["approve", "t1", "--plan"],
    ["complete", "t1"],
    ["cleanup", "t1"],
    ["abandon", "t1", "--why", "x"],
    ["start", "t1"],
    ["who", "t1"],
    ["log", "t1"],
]


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> P:
    p = P(tmp_path_factory.mktemp("h"), agents="code-updater", config=CFG)  # sealed by conftest's session fixture
    p.commit("code-updater", {"a.txt": "a\n"}, "work")
    tf = json.loads((p.root / "task.json").read_text())
    (p.root / "task.json").write_text(json.dumps({**tf, "state": "AWAITING_USER_APPROVAL"}, indent=2))
    return p


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]) if a[0] in ("agent", "approve") else a[0])
def test_every_command_refuses_a_hand_edited_task(edited: P, args: list[str]) -> None:
    p = edited
    before = p.snapshot()
    refs = git(p.repo, "for-each-ref", "--format=%(refname) %(objectname)")
    r = p.spark("--json", *args)
    assert r.returncode == 3, r
    assert "edited by hand" in r.json["summary"] and "state is AWAITING_USER_APPROVAL but the last recorded transition leads to INIT" in r.json["summary"]
    assert "spark-git doctor t1" in r.json["next"]
    assert p.snapshot() == before and git(p.repo, "for-each-ref", "--format=%(refname) %(objectname)") == refs
    assert (p.root / "task.json").exists()


def test_status_and_audit_show_it_and_doctor_reads_it(edited: P) -> None:
    p = edited
    t = p.ok("status", "t1")["data"]["tasks"][0]
    assert "edited by hand" in t["problem"] and "spark-git doctor t1" in t["problem"]
    assert any("edited by hand" in s for s in p.ok("audit", "t1")["data"]["smells"])
    r = p.spark("--json", "doctor")
    assert r.returncode in (0, 1, 3) and "AWAITING_USER_APPROVAL" in r.stdout, r
