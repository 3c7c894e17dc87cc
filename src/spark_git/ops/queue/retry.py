"""Flaky gates (`[queue] retries`): a candidate's failing final gate is run again, up to N times,
before anyone is blamed; a pass on a retry lands and is recorded as flaky in the queue's log."""

from __future__ import annotations

from collections.abc import Callable

from spark_git.gates import command as gates
from spark_git.state.queuelog import FLAKY_KEPT, FlakyGate
from spark_git.state.store import Store


def gate_with_retries(store: Store, retries: int, tasks: list[str], tip: str, attempt: Callable[[bool], gates.GateEvidence],
                      rerun: bool) -> gates.GateEvidence:
    """`attempt(rerun)` gates the candidate once. A failure that ran is retried (always re-run: the
    failing verdict is no answer); only the last failure is returned, i.e. a reproducible one."""
    ev = first = attempt(rerun)
    failures = 0
    while again(ev, failures, retries):
        failures += 1
        ev = attempt(True)
    passed_on_retry(store, first, ev, failures, tasks, tip)
    return ev


def confirmed(store: Store, ev: gates.GateEvidence, tasks: list[str], tip: str, attempt: Callable[[bool], gates.GateEvidence]) -> gates.GateEvidence:
    """A failure that would send a task away is gated once more, without retries (speculate.CONFIRM: a
    task is named on two failing runs, never on one): the fresh verdict stands; a pass records the flake."""
    if ev.passed or not ev.ran:
        return ev
    fresh = attempt(True)
    passed_on_retry(store, ev, fresh, 1, tasks, tip)
    return fresh


def again(ev: gates.GateEvidence, failures: int, retries: int) -> bool:
    """A failure that ran is retried while retries are left (always re-run: a failing verdict is no answer)."""
    return not ev.passed and ev.ran and failures < retries


def passed_on_retry(store: Store, first: gates.GateEvidence, ev: gates.GateEvidence, failures: int, tasks: list[str], tip: str) -> None:
    if ev.passed and failures:
        record_flaky(store, FlakyGate(command=first.command, tasks=tasks, tip=tip, failures=failures,
                                      failed_tests=first.failed_tests, log_path=first.log_path))


def record_flaky(store: Store, f: FlakyGate) -> None:
    log = store.read_queue_log()
    log.flaky = [*log.flaky, f][-FLAKY_KEPT:]
    log.counts.flaky += 1
    store.write_queue_log(log)
