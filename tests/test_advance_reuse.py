"""VALIDATION → REVIEW reuses the build verdict of a tree that passed, and says so (issue 24, item 9):
it used to re-run the whole suite, silently, on the commit whose merge had just passed it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.protokit import P

# The gate counts its runs in a file outside the repository, which the gate box hides: verdict reuse
# is what is tested (tests/test_gate_box.py tests the box).
pytestmark = pytest.mark.usefixtures("unboxed")

REV, UPA, UPT = "architecture-reviewer", "architecture-updater", "test-updater"


def test_validation_to_review_reuses_the_verdict_of_the_same_tree_and_says_so(tmp_path: Path) -> None:
    counter = tmp_path / "runs"
    gate = [sys.executable, "-c", f"open({str(counter)!r}, 'a').write('run\\n')"]
    p = P(tmp_path, config=f"[gates]\nbuild = {json.dumps(gate)}\n[approval]\nallow_non_interactive = true\n")
    p.ok("classify", p.task, "--risk", "HIGH", "--why", "test")
    p.go(), p.go()
    for a in (REV, UPA, UPT):
        p.requirements(a)
        p.report(a)
    p.go()
    p.plans([REV, UPA, UPT])
    p.ok("approve", p.task, "--plan")
    p.go()
    p.commit(UPA, {"src/one.py": "one = 1\n"}, "the change")
    p.ok("merge", p.task, "--agent", UPA)
    for a in (UPA, UPT):
        p.report(a, "COMPLETE", "--work-remaining", "none")
    p.report(REV, "COMPLETE", "--decision", "APPROVED")
    assert p.go()["to"] == "VALIDATION"
    runs = len(counter.read_text().splitlines())
    r = p.spark("advance", p.task)
    assert r.returncode == 0 and "REVIEW" in r.stdout, r
    assert len(counter.read_text().splitlines()) == runs, "the build ran again on a tree that had passed it"
    assert "not run again" in r.stdout, r.stdout
