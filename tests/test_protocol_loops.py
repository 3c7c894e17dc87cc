"""The protocol's ways back (AWAITING_USER_APPROVAL → IMPLEMENTATION on the human's request, VALIDATION →
IMPLEMENTATION after a failed build), each walked to a landing, and the rule that every `next` hint a
refusal prints is a command the state machine accepts at that moment: each refusal's hints are run."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from fixtures.hints import illegal_hints
from fixtures.repo import Run, git

from tests.protokit import P
from tests.test_update import REV, UPA, UPT, walk_to_awaiting

# What a hint may say instead of a usage error or an illegal step: blocked by conditions is fine (exit 3).
NOT_ACCEPTED = ("illegal transition", "unknown state", "No such option", "No such command", "Missing argument", "Got unexpected extra")


def hints(r: Run) -> list[str]:
    assert r.returncode in (1, 3), r
    return list(r.json["next"])


def run_hint(p: P, hint: str) -> Run | None:
    """Runs the spark-git command(s) of a hint (`cd X && …`, `a && b`); placeholders get real values.
    None when the hint is an instruction to a human rather than a spark-git command."""
    last = None
    for part in hint.split("&&"):
        words = shlex.split(part.replace("<agent>", UPA).replace("<reviewer>", REV))
        if not words or words[0] != "spark-git":
            continue
        if "(from" in words:  # `advance T  (from X, towards S)`: the default next step
            words = words[: words.index("(from")]
        last = p.spark("--json", *words[1:])
        assert last.returncode != 2, f"hint {hint!r} is a usage error:\n{last}"
        assert not any(s in last.stdout + last.stderr for s in NOT_ACCEPTED), f"hint {hint!r} was not accepted:\n{last}"
    return last


def run_hints(p: P, r: Run) -> list[Run | None]:
    return [run_hint(p, h) for h in hints(r)]


def test_request_changes_goes_back_and_lands_after_a_new_round(tmp_path: Path) -> None:
    p = P(tmp_path)
    head = walk_to_awaiting(p, {"src/one.py": "one = 1\n"})
    # the suite-wide check (fixtures.repo.spark → fixtures.hints) catches the hint complete used to print here
    old_hint = json.dumps({"status": "BLOCKED", "next": [f"spark-git advance {p.task} --to REQUIREMENTS --why 'changed after review'"]})
    assert illegal_hints(p.repo, old_hint) == [f"{json.loads(old_hint)['next'][0]!r}: AWAITING_USER_APPROVAL → REQUIREMENTS is not a legal transition"]
    assert illegal_hints(p.repo, json.dumps({"status": "BLOCKED", "next": [f"spark-git approve {p.task} --request-changes --why x"]})) == []
    before = p.snapshot()
    # `advance` cannot take the human's way back; its hint is the human's command
    r = p.advance("IMPLEMENTATION")
    assert p.snapshot() == before and hints(r) == [f"spark-git approve {p.task} --request-changes --why 'what must change'"]
    r = p.spark("--json", "approve", p.task, "--request-changes")
    assert r.returncode == 2 and p.snapshot() == before, r
    run_hints(p, p.advance("IMPLEMENTATION"))  # runs `approve --request-changes --why 'what must change'`
    assert p.state() == "IMPLEMENTATION"
    tf = p.task_json()
    assert tf["checkpoint"] is None and tf["checkpoint_history"][-1]["decision"] == "changes_requested"
    assert tf["checkpoint_history"][-1]["commit_sha"] == head and tf["transition_log"][-1]["evidence"]["why"] == "what must change"
    # the reviewer's APPROVED at this very head belongs to the old round
    r = p.advance("VALIDATION")
    assert r.returncode == 3 and "new review" in r.stdout, r
    p.commit(UPA, {"src/one.py": "one = 1  # as asked\n"}, "as the human asked")
    p.ok("merge", p.task, "--agent", UPA)
    p.report(UPA, "COMPLETE", "--work-remaining", "none")
    p.report(UPT, "COMPLETE", "--work-remaining", "none")
    p.report(REV, "COMPLETE", "--decision", "APPROVED")
    for to in ("VALIDATION", "REVIEW", "AWAITING_USER_APPROVAL"):
        assert p.go()["to"] == to
    p.ok("approve", p.task, "--changes")
    p.ok("complete", p.task)
    assert git(p.repo, "rev-parse", "main^2") == p.head()
    trail = (p.root / "audit-trail.json").read_text()
    assert '"changes_requested"' in trail


def test_a_failed_build_goes_back_to_implementation_and_lands(tmp_path: Path) -> None:
    p = P(tmp_path)
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
    (p.wt() / "stop.flag").write_text("")  # ignored: the build gate fails on a clean worktree
    r = p.spark("--json", "advance", p.task, "--to", "REVIEW", "--rerun")  # the tree passed at its merge: --rerun runs it again
    assert r.returncode == 3 and "gates.build failed" in r.stdout, r
    r = p.advance("IMPLEMENTATION")  # no failing result recorded, no reason: refused, with the way
    assert r.returncode == 3 and "--why" in hints(r)[0], r
    run_hints(p, p.spark("--json", "advance", p.task, "--to", "REVIEW", "--rerun"))  # runs `advance --to IMPLEMENTATION --why 'gates.build failed: …'`
    assert p.state() == "IMPLEMENTATION"
    assert "gates.build failed" in p.task_json()["transition_log"][-1]["evidence"]["why"]
    (p.wt() / "stop.flag").unlink()
    p.commit(UPA, {"src/one.py": "one = 2\n"}, "fixed")
    p.ok("merge", p.task, "--agent", UPA)
    p.report(UPA, "COMPLETE", "--work-remaining", "none")
    p.report(UPT, "COMPLETE", "--work-remaining", "none")
    p.report(REV, "COMPLETE", "--decision", "APPROVED")
    for to in ("VALIDATION", "REVIEW", "AWAITING_USER_APPROVAL"):
        assert p.go()["to"] == to
    p.ok("approve", p.task, "--changes")
    p.ok("complete", p.task)
    assert git(p.repo, "rev-parse", "main^2") == p.head()


def test_every_refusal_hint_on_a_moving_main_is_accepted(tmp_path: Path) -> None:
    """Refusals met on the way of two tasks through one main: each hint is run as printed."""
    files = {"README.md": "# demo\n", "src/app.py": "print('hi')\n", ".gitignore": "*.flag\n"}
    p1 = P(tmp_path, task="t1", files=files)
    p2 = P(tmp_path, task="t2", repo=p1.repo)
    # before AWAITING_USER_APPROVAL: approve and complete point at the way there
    for args in (["approve", "t2", "--changes"], ["complete", "t2"]):
        run_hints(p2, p2.spark("--json", *args))
    walk_to_awaiting(p1, {"src/app.py": "print('one')\n"})
    walk_to_awaiting(p2, {"src/app.py": "print('two')\n"})
    for p in (p1, p2):
        r = p.spark("--json", "complete", p.task)
        assert r.returncode == 3, r
        run_hints(p, r)  # approve --changes (then complete, where a hint chains it)
    if p1.state() != "COMPLETE":
        p1.ok("complete", p1.task)
    # t2: main moved → `update`; its conflict → `update --leave-conflict`
    r = p2.spark("--json", "complete", p2.task)
    assert f"spark-git update {p2.task}" in hints(r)
    r = p2.spark("--json", "update", p2.task)
    assert r.returncode == 3 and r.json["data"]["conflicts"] == ["src/app.py"], r
    run_hints(p2, r)
    (p2.wt() / "src/app.py").write_text("print('one and two')\n")
    git(p2.wt(), "add", "src/app.py")
    git(p2.wt(), "-c", "core.editor=true", "rebase", "--continue")
    p2.ok("update", p2.task)
    # the head is no longer the presented one: complete's hints lead back to IMPLEMENTATION
    r = p2.spark("--json", "complete", p2.task)
    assert f"spark-git approve {p2.task} --request-changes --why 'changed after review'" in hints(r), r.json
    # an agent merge in AWAITING_USER_APPROVAL points at the human's way back
    p2.commit(UPA, {"src/late.py": "late = 1\n"}, "late")
    r = p2.spark("--json", "merge", p2.task, "--agent", UPA)
    assert hints(r) == [f"spark-git approve {p2.task} --request-changes --why 'what must change'"], r.json
    run_hints(p2, r)
    assert p2.state() == "IMPLEMENTATION"
    # illegal jumps list commands that are legal now
    run_hints(p2, p2.advance("COMPLETE"))
    p2.ok("merge", p2.task, "--agent", UPA)
    for a in (UPA, UPT):
        p2.report(a, "COMPLETE", "--work-remaining", "none")
    p2.report(REV, "COMPLETE", "--decision", "APPROVED")
    for to in ("VALIDATION", "REVIEW", "AWAITING_USER_APPROVAL"):
        assert p2.go()["to"] == to
    run_hints(p2, p2.advance("REVIEW"))  # illegal: its hints are complete / approve --request-changes
