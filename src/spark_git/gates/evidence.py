"""Gate evidence: the model a command gate returns, and the one recorder that puts it in the audit
trail (`build_verifications`) and on the tested commit (a `kind: gate` git note)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spark_git.core.model import Model
from spark_git.gates.reports import GateReports
from spark_git.state.store import Store


class GateEvidence(Model):
    gate: str  # "build" or "final"
    command: list[str] | str | None  # None: no gate configured, nothing ran
    ran: bool
    passed: bool
    exit_code: int | None = None
    timed_out: bool = False
    duration_s: float = 0.0
    tree: str
    commit: str
    worktree: str
    log_path: str | None = None
    time: str
    tests: dict[str, int] | None = None  # pytest counts, when the command is pytest
    error: str | None = None
    failed_tests: list[str] = []  # pytest's `FAILED tests/x.py::name` lines, when the gate is pytest
    fingerprint: str | None = None  # the gate's fingerprint (gates/verdicts.py): what a verdict is keyed by
    reused_from: str | None = None  # set when a passing verdict of this tree was reused: the run that passed
    flaky: bool = False  # this run passed on a tree that failed the same gate before
    reports: GateReports | None = None  # JUnit/coverage read after the command, and the thresholds missed (gates/reports.py)


NOT_RUN = "not run (none configured)"


def result_of(e: Mapping[str, Any]) -> str:
    """How a gate entry or note ended, in words every view uses: a gate that did not run (none was
    configured) is never shown as passed. The records keep `result: passed` for it (the protocol's
    guards read "nothing to check" as satisfied); only what is shown says what happened."""
    if e.get("ran") is False and e.get("command") is None and not e.get("reused_from"):
        return NOT_RUN
    if "passed" in e:
        return "passed" if e.get("passed") else "failed"
    return str(e.get("result") or ("passed" if e.get("exit_code") == 0 else "failed"))


def counts(tests: dict[str, int]) -> str:
    """pytest's counts as words ("736 passed, 2 failed"), never a dict's repr."""
    return ", ".join(f"{n} {kind}" for kind, n in tests.items())


def entry(ev: GateEvidence, session: str | None, *, omit: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    """The `build_verifications` entry. `omit`: keys an existing writer never wrote (advance's
    record of a passing build has no `timed_out`), so its entries stay as they were."""
    e = {
        "gate": ev.gate, "command": ev.command, "result": "passed" if ev.passed else "failed", "ran": ev.ran,
        "exit_code": ev.exit_code, "timed_out": ev.timed_out, "duration_s": ev.duration_s, "tree": ev.tree,
        "commit": ev.commit, "log_path": ev.log_path, "tests": ev.tests, "session_id": session, **extra,
    }
    if ev.reused_from:  # only then: entries of fresh runs stay as they were
        e["reused_from"] = ev.reused_from
    if ev.reports is not None:  # only a gate configured to read reports has them
        e["reports"] = ev.reports.model_dump(mode="json")
    return {k: v for k, v in e.items() if k not in omit}


def record(store: Store, task: str, ev: GateEvidence, session: str | None, *, note: bool = True,
           omit: tuple[str, ...] = (), **extra: Any) -> dict[str, Any]:
    """Appends the audit entry and, when `note` and the gate saw a commit, the `kind: gate` note on
    it. `extra` (e.g. `agent=`) goes into both. Returns the audit entry."""
    e = entry(ev, session, omit=omit, **extra)
    store.audit(task, "build_verifications", e, session=session)
    if ev.flaky:
        store.event(task, "gate_flaky", session, gate=ev.gate, tree=ev.tree, commit=ev.commit, fingerprint=ev.fingerprint, log_path=ev.log_path)
    if note and ev.commit:
        dumped = ev.model_dump(mode="json", exclude={"reports"} if ev.reports is None else None)  # notes of gates without reports stay as they were
        store.add_notes([(ev.commit, {"kind": "gate", "task": task, "session": session, **dumped, **extra})])
    return e
