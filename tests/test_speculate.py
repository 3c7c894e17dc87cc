"""The queue's pure planner (ops/queue/speculate.py) over every culprit set of up to 8 entries
and 1..4 runners: what lands passed, no culprit lands, a culprit is named only on evidence (two
failing runs that hold it), every entry ends somewhere; parallel=1 takes bisect.py's decisions, with
its gate runs and one more where a single run was all that named the culprit."""

from __future__ import annotations

from itertools import combinations

import pytest

from spark_git.gates.evidence import GateEvidence
from spark_git.ops.queue.bisect import bisect
from spark_git.ops.queue.speculate import Outcome, Probe, Speculation, prefix, skip


def culprit_sets(n: int) -> list[frozenset[int]]:
    return [frozenset(c) for k in range(n + 1) for c in combinations(range(n), k)]


def play(n: int, parallel: int, bad: frozenset[int], order: str = "time") -> tuple[Outcome, dict[Probe, bool], int, int]:
    """Runs the planner against a gate that fails a probe holding a culprit. Returns the outcome, the
    verdicts, gate runs and rounds (the longest chain of gates waiting on each other: wall clock)."""
    sp = Speculation(n, parallel)
    verdicts: dict[Probe, bool] = {}
    depth: dict[Probe, int] = {}
    runs, now = 0, 0
    running: list[Probe] = []
    fails: dict[Probe, int] = {}
    while (o := sp.outcome()) is None:
        for p in sp.start():
            assert verdicts.get(p) is not True and p not in running, p  # gated again only to confirm a failure
            depth[p] = now + 1
            running.append(p)
            runs += 1
        assert 0 < len(running) <= parallel, (running, sp.running)
        # "time": the gate that ends first (all take one gate time); "lifo": the last started, any time
        p = running.pop(min(range(len(running)), key=lambda i: depth[running[i]]) if order == "time" else -1)
        now = max(now, depth[p])
        verdicts[p] = not (bad & set(p))
        fails[p] = fails.get(p, 0) + (not verdicts[p])
        sp.finish(p, verdicts[p])
        for q in sp.cancel():
            running.remove(q)
    assert sorted(sp.cancel()) == sorted(running)
    for c in o.culprits:
        assert sum(k for q, k in fails.items() if c in q) >= 2, (c, fails)
    return o, verdicts, runs, now


def check(n: int, o: Outcome, verdicts: dict[Probe, bool], bad: frozenset[int]) -> None:
    if o.land:
        assert o.land_probe_passed and verdicts[o.land] is True
    else:
        assert not o.land_probe_passed
    assert not bad & set(o.land)
    for c in o.culprits:
        assert verdicts[prefix(c + 1)] is False and (c == 0 or verdicts[prefix(c)] is True), (c, verdicts)
    ends = [*o.land, *o.culprits, *o.requeue]
    assert sorted(ends) == list(range(n)), o


@pytest.mark.parametrize("parallel", [1, 2, 3, 4])
@pytest.mark.parametrize("order", ["time", "lifo"])
def test_every_culprit_set_up_to_eight(parallel: int, order: str) -> None:
    for n in range(1, 9):
        for bad in culprit_sets(n):
            o, verdicts, _, _ = play(n, parallel, bad, order)
            check(n, o, verdicts, bad)
            if not bad:
                assert o.land == prefix(n)
            else:
                assert o.culprits == (min(bad),)  # the first culprit: what bisection names


def test_parallel_one_takes_bisects_decisions_and_gate_runs() -> None:
    for n in range(1, 9):
        for bad in culprit_sets(n):
            o, _, runs, _ = play(n, 1, bad)
            assert (o.land, o.culprits, o.requeue, runs) == today(n, bad), (n, bad)


def today(n: int, bad: frozenset[int]) -> tuple[Probe, tuple[int, ...], tuple[int, ...], int]:
    """drain.py's decisions before the planner: gate the batch, bisect a failing one of more than one."""
    runs = [0]

    def gate(k: int) -> GateEvidence:
        runs[0] += 1
        return GateEvidence(gate="final", command="x", ran=True, passed=not bad & set(range(k)), tree="", commit="", worktree="", time="")

    ev = gate(n)
    if ev.passed:
        return prefix(n), (), (), runs[0]
    if n == 1:
        return (), (0,), (), runs[0] + 1  # confirmed by a second run
    failed: list[int] = []
    split = bisect(n, ev, lambda k: _noted(gate(k), k, failed))
    once = not [k for k in failed if k > split.culprit]  # the batch's own run the only failure holding it
    return prefix(split.passing), (split.culprit,), tuple(range(split.culprit + 1, n)), runs[0] + once


def _noted(ev: GateEvidence, k: int, failed: list[int]) -> GateEvidence:
    if not ev.passed:
        failed.append(k)
    return ev


@pytest.mark.parametrize(("parallel", "rounds"), [(1, [4, 4, 4, 4, 4, 4, 4, 5]), (2, [3, 3, 3, 4, 3, 3, 3, 4]), (3, [2, 2, 2, 2, 3, 3, 3, 3]), (4, [2] * 8)])
def test_one_culprit_among_eight_wall_clock(parallel: int, rounds: list[int]) -> None:
    """Gate times (rounds) by the culprit's position. parallel=1 then gates the entries behind the
    culprit in a batch of their own (one more round); parallel>1 lands all 7 others at once. The last
    entry is named on the batch's run alone unless that run is confirmed: one more round where no
    runner was spare to confirm it early (parallel 1-3)."""
    got = []
    for c in range(8):
        o, _, _, depth = play(8, parallel, frozenset({c}))
        got.append(depth)
        if parallel > 1:
            assert o.land == skip(8, c) or (c == 7 and o.land == prefix(7)), o
    assert got == rounds


def test_a_passing_batch_cancels_the_speculative_prefixes() -> None:
    sp = Speculation(8, 4)
    assert sp.start() == [prefix(8), prefix(4), prefix(2), prefix(6)]
    assert sp.start() == []
    sp.finish(prefix(8), True)
    assert sp.outcome() == Outcome(prefix(8), True, (), ())
    assert sorted(sp.cancel()) == sorted([prefix(4), prefix(2), prefix(6)])
    assert sp.start() == [] and sp.running == []


def test_prefixes_past_a_known_failure_are_cancelled_before_the_outcome() -> None:
    sp = Speculation(8, 3)
    assert sp.start() == [prefix(8), prefix(4), prefix(2)]
    sp.finish(prefix(2), False)  # the culprit is 0 or 1: the batch and prefix 4 say nothing more
    assert sorted(sp.cancel()) == [prefix(4), prefix(8)]
    assert sp.outcome() is None
    assert sp.start() == [prefix(1), skip(8, 0), skip(8, 1)]


def test_two_culprits_land_the_prefix_before_the_first_and_requeue_the_rest() -> None:
    o, verdicts, _, _ = play(8, 2, frozenset({2, 5}))
    assert o == Outcome(prefix(2), True, (2,), (3, 4, 5, 6, 7))
    assert verdicts[skip(8, 2)] is False


def test_a_gate_that_is_not_monotone_lands_what_passed_and_blames_nobody() -> None:
    sp = Speculation(4, 1)
    sp.finish(sp.start()[0], False)
    sp.finish(sp.start()[0], True)  # prefix 2 passes
    assert sp.start() == [prefix(3)]
    sp.results[prefix(1)] = False  # a flaky verdict seen earlier
    sp.finish(prefix(3), False)
    assert sp.outcome() == Outcome(prefix(2), True, (), (2, 3))


def test_bad_arguments_and_unknown_probes_are_refused() -> None:
    with pytest.raises(ValueError):
        Speculation(0, 1)
    with pytest.raises(ValueError):
        Speculation(3, 0)
    with pytest.raises(ValueError):
        Speculation(3, 1).finish(prefix(3), True)


def test_a_culprit_is_named_only_on_two_failing_runs_so_a_double_flake_blames_nobody() -> None:
    """The model's day blamed two innocent tasks (issue 34): a batch's run that failed on its first
    try and on its retry (a flake twice) named the last entry. Now that run is gated once more."""
    sp = Speculation(1, 4)
    assert sp.start() == [prefix(1)]
    sp.finish(prefix(1), False)  # both tries flaked
    assert sp.outcome() is None and sp.start() == [prefix(1)]  # gated again, not blamed
    sp.finish(prefix(1), True)
    assert sp.outcome() == Outcome(prefix(1), True, (), ())
    sp = Speculation(1, 1)
    sp.finish(sp.start()[0], False)
    sp.finish(sp.start()[0], False)  # a real culprit fails again: named
    assert sp.outcome() == Outcome((), False, (0,), ())


def test_prefixes_cancelled_for_a_failure_that_turns_out_a_flake_are_gated_again() -> None:
    """The model's day stalled on it (and the real drain stopped with "planner is stuck"): prefix 2
    failed, so 4 was cancelled for good; its confirming run passed, and nothing was left to run."""
    sp = Speculation(4, 2)
    assert sp.start() == [prefix(4), prefix(2)]
    sp.finish(prefix(2), False)
    assert sp.cancel() == [prefix(4)]
    assert sp.start() == [prefix(1), skip(4, 0)]
    sp.finish(prefix(1), True)
    assert sp.start() == [skip(4, 1)]
    sp.finish(skip(4, 0), True)
    assert sp.start() == [prefix(2)]  # once more: one failing run names nobody
    sp.finish(prefix(2), True)  # a flake
    assert sp.cancel() == [skip(4, 1)] and sp.outcome() is None
    assert sp.start() == [prefix(4), prefix(3)]  # needed again: the batch may pass whole


def test_stacked_names_a_culprit_only_on_its_own_prefix_and_requeues_a_suspect_unblamed() -> None:
    """skips=False (stacked batches): prefix 2 failed once and prefix 3 failed (a second culprit may
    be why). Entry 1 is not named: the prefix before it lands, it is requeued as the suspect (its own
    prefix is gated again off the stack). Two failing runs of its own prefix name it."""
    sp = Speculation(4, 4, skips=False)
    assert sp.start() == [prefix(4), prefix(2), prefix(1), prefix(3)]
    for p, ok in ((prefix(1), True), (prefix(2), False), (prefix(3), False)):
        sp.finish(p, ok)
    assert sp.outcome() == Outcome(prefix(1), True, (), (1, 2, 3), suspect=1)
    sp = Speculation(4, 4, skips=False)
    sp.start()
    sp.finish(prefix(1), True)
    sp.finish(prefix(2), False)
    assert sp.outcome() is None and sp.start() == [prefix(2)]  # the one failing run names nobody: gated again
    sp.finish(prefix(2), False)
    assert sp.outcome() == Outcome(prefix(1), True, (1,), (2, 3))
