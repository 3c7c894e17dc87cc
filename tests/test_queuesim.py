"""sim/queue_model.py (scripts/sim_queue): the queue's real decision code on a virtual clock.
The real queue taking the same decisions is tests/test_queuesim_real.py."""

from __future__ import annotations

import itertools
import subprocess
import sys
from dataclasses import replace

from sim.queue_day import STRATEGIES, Day, Decisions, decisions, row, workload
from sim.queue_model import BisectPlan, GateModel, Planner, Sim, Strategy, Task

from spark_git.ops.queue.selection import run_length
from spark_git.ops.queue.speculate import Outcome, Probe, Speculation


def drive(plan: Planner, culprits: set[int]) -> tuple[list[Probe], Outcome]:
    """One probe at a time, in the order started; a probe fails when it holds a culprit."""
    seen: list[Probe] = []
    while (o := plan.outcome()) is None:
        started = plan.start()
        assert started, "undecided with nothing to run"
        for p in started:
            seen.append(p)
            plan.finish(p, not culprits & set(p))
            plan.cancel()
    return seen, o


def test_bisect_plan_is_bisect_py_and_speculation_at_parallel_1() -> None:
    """The adapter replays the real bisect.py; at parallel=1 speculate.py takes the same probes and
    decisions, and gates the failing probe once more where that one run alone would name the culprit
    (speculate.CONFIRM)."""
    for n in range(1, 9):
        for k in range(n + 1):
            for culprits in map(set, itertools.combinations(range(n), k)):
                ours, spec = drive(BisectPlan(n), culprits), drive(Speculation(n, 1), culprits)
                first = [p for i, p in enumerate(spec[0]) if p not in spec[0][:i]]
                assert (first, spec[1]) == ours, (n, culprits)
                again = len(spec[0]) - len(first)
                named = ours[1].culprits
                assert again == (1 if named and sum(1 for p in ours[0] if named[0] in p and culprits & set(p)) == 1 else 0), (n, culprits, spec)
                land = ours[1].land
                assert not culprits & set(land) and set(named) <= culprits, (n, culprits, ours)


def test_six_tasks_one_culprit_the_decisions() -> None:
    """The batch of 6 fails; prefixes 3 (fails), 1, 2 (pass): 2 is the culprit, 0-1 land; 3-5 are the
    next batch, which passes: 5 gate runs."""
    d = decisions(6, {2})
    assert (d.landed, d.culprits, d.gate_runs) == ([0, 1, 3, 4, 5], [2], 5)
    assert d.gated == [[0, 1, 2, 3, 4, 5], [0, 1, 2], [0], [0, 1], [3, 4, 5]]
    assert decisions(6, set()) == Decisions([0, 1, 2, 3, 4, 5], [], 1, [[0, 1, 2, 3, 4, 5]])
    serial = decisions(6, {2}, batch_max=1)  # one run per task
    assert (serial.landed, serial.culprits, serial.gate_runs) == ([0, 1, 3, 4, 5], [2], 6)
    d = decisions(6, {2}, parallel=2, speculative=True)
    assert (d.landed, d.culprits) == ([0, 1, 3, 4, 5], [2]) and d.gate_runs < 8


def test_run_length_is_the_drains_batch() -> None:
    assert run_length([], 8) == 0
    assert run_length(["main"] * 20, 8) == 8
    assert run_length(["main", "main", "dev", "main"], 8) == 2
    assert run_length(["main", None], 8) == 1


def test_a_day_ends_with_every_task_landed_or_named() -> None:
    """With a gate that never flakes: no culprit lands, every culprit is named and nothing is lost; each
    strategy keeps the bar (no ungated landing) except recheck "none", which says so."""
    tasks = workload(Day(tasks=120, hours=2, seed=5))
    gate = GateModel(flake=0.0)
    bad = {t.id for t in tasks if t.culprit}
    assert bad
    for s in STRATEGIES:
        for runners in (1, 4):
            r = Sim(tasks, s, runners, gate).run()
            landed = [i for i, _ in r.landed]
            assert len(landed) == len(set(landed)) and not bad & set(landed), s
            assert sorted(r.culprits) == sorted(bad) and len(landed) + len(bad) == len(tasks), s
            assert r.ungated == 0 or s.recheck == "none", s


def test_flakes_cost_runs_not_tasks_with_a_retry() -> None:
    tasks = [Task(i, 0.0, frozenset({f"t{i}"}), False) for i in range(40)]
    s = Strategy("serial", batch_max=1, speculative=False)
    r = Sim(tasks, s, 1, GateModel(flake=0.3, retries=1, seed=3)).run()
    assert r.gate_runs > 40 and len(r.landed) + len(r.culprits) == 40
    flaky = Sim(tasks, s, 1, GateModel(flake=0.3, retries=0, seed=3)).run()
    assert len(flaky.culprits) > len(r.culprits)  # without a retry a flake blames a task


def test_lanes_land_disjoint_work_without_waiting() -> None:
    """A task on paths of its own lands after one gate time in its lane; in one batch with a culprit
    it waits until the planner has found the culprit."""
    tasks = [Task(0, 0.0, frozenset({"a.py"}), False), Task(1, 0.0, frozenset({"a.py", "x"}), True), Task(2, 0.0, frozenset({"b.py"}), False)]
    gate = GateModel(mean_s=60.0, jitter_s=0.0, flake=0.0, retries=0)
    one = Sim(tasks, Strategy("s"), 2, gate).run()
    lanes = Sim(tasks, Strategy("l", lanes="batch"), 2, gate).run()
    assert dict(lanes.landed)[2] == 60.0 < dict(one.landed)[2]


def test_deterministic_for_a_seed() -> None:
    tasks, gate = workload(Day(tasks=150, hours=3, seed=9)), GateModel(seed=9)
    s = STRATEGIES[3]
    assert row(tasks, s, 4, gate) == row(tasks, s, 4, gate)
    assert row(tasks, s, 4, gate) != row(tasks, s, 4, replace(gate, seed=10))


def test_the_script_prints_the_table() -> None:
    r = subprocess.run([sys.executable, "-m", "sim.queue_day", "--tasks", "60", "--hours", "1", "--runners", "2"],
                       capture_output=True, text=True, check=True)
    lines = r.stdout.splitlines()
    assert lines[1].startswith("| strategy") and len(lines) == 3 + len(STRATEGIES), r.stdout
    assert [ln.split("|")[1].strip() for ln in lines[3:]] == [s.name for s in STRATEGIES]


def test_bad_options_exit_2_and_say_which() -> None:
    for args, word in ((["--runners", "0"], "--runners"), (["--runners", "x"], "--runners"), (["--flake", "2"], "--flake"), (["--tasks", "0"], "--tasks")):
        r = subprocess.run([sys.executable, "-m", "sim.queue_day", *args], capture_output=True, text=True)
        assert r.returncode == 2 and word in r.stderr and not r.stdout, (args, r)


def test_chained_rechecks_are_not_restarted_by_a_lane_landing_ahead() -> None:
    """Three lanes: the first two end together (one lands, the other is rechecked on it), the third
    later, rechecked on top of that recheck at once (the drain's chain); restarted, the third's
    recheck runs again once the second lands."""
    tasks = [Task(i, 0.0, frozenset({f"t{i}.py"}), False) for i in range(3)]
    gate = GateModel(mean_s=60.0, jitter_s=0.0, flake=0.0, retries=0, per_task_s=30.0, slow_tasks=frozenset({2}))
    chained = Sim(tasks, Strategy("c", lanes="batch"), 3, gate).run()
    restarted = Sim(tasks, Strategy("r", lanes="batch", chain=False), 3, gate).run()
    assert [i for i, _ in chained.landed] == [0, 1, 2] == [i for i, _ in restarted.landed]
    assert (chained.rechecks, restarted.rechecks) == (2, 3)
    assert dict(chained.landed)[2] == 240.0 < dict(restarted.landed)[2] and chained.ungated == restarted.ungated == 0
