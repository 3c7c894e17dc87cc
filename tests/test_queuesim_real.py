"""The simulated queue (scripts/sim_queue) and the real one take the same decisions on the same inputs:
6 approved tasks queued at once, culprits at given positions, a final gate that fails when the
candidate holds a culprit (SPARK_QUEUE_BATCH, or SPARK_TASK for a batch of one gated in its task
worktree) and logs each candidate it gates. Same tasks landed in the same order, same culprits named
in the same order, the same candidates gated, the same gate runs. Real processes, real git."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures.repo import git
from sim.queue_day import Decisions, decisions

from tests.queuekit import Queue, gate_cmd
from tests.test_queue_lanes import passed as passed_verdict

N = 6
PER_TASK_S = 1.0  # parallel runs: a candidate of k tasks gates k seconds (plus ~1 s of start-up), so the runs end in the order the model has them end


@dataclass(frozen=True)
class Case:
    culprits: frozenset[int]
    batch_max: int = 8
    parallel: int = 1
    lanes: bool = False
    n: int = N
    flaky: frozenset[int] = frozenset()  # the first run on a tree holding one of these fails
    retries: int = 0
    slow: frozenset[int] = frozenset()  # each gates twice as long (per_task_s twice)
    pipeline: bool = False  # [queue] pipeline = true (lanes across batches)
    lanes_from: float = 0.0  # [queue] lanes_from: 0 splits every batch

    def sim(self, speculative: bool) -> Decisions:
        return decisions(self.n, set(self.culprits), batch_max=self.batch_max, parallel=self.parallel, speculative=speculative,
                         per_task_s=self.per_task_s(), lanes=self.lanes, flaky=self.flaky, retries=self.retries, slow=self.slow, pipeline=self.pipeline,
                         lanes_from=self.lanes_from)

    def per_task_s(self) -> float:
        return PER_TASK_S if self.parallel > 1 else 0.0


def culprit_gate(tmp: Path, case: Case) -> list[str]:
    """Logs its candidate (one line per run, from a shell before Python starts: a run the planner stops
    at once has still logged), sleeps per_task_s per task (twice for a slow one), fails on a tree
    holding a culprit's file (a stacked batch's base may hold one), and fails its first run on a tree
    holding a flaky task (the trees it has seen live in a file)."""
    script = ("import os, subprocess, sys, time\n"
              "tasks = set((os.environ.get('SPARK_QUEUE_BATCH') or os.environ['SPARK_TASK']).split(','))\n"
              "tree = subprocess.run(['git', 'rev-parse', 'HEAD^{tree}'], capture_output=True, text=True, check=True).stdout.strip()\n"
              f"seen = {str(tmp / 'flaked.txt')!r}\n"
              f"flaked = bool(tasks & set({sorted(f't{i}' for i in case.flaky)!r})) and tree not in (open(seen).read() if os.path.exists(seen) else '')\n"
              "if flaked:  # at its start: a run stopped before its end was the first run all the same\n"
              "    open(seen, 'a').write(tree + '\\n')\n"
              f"time.sleep({case.per_task_s()} * (len(tasks) + len(tasks & set({sorted(f't{i}' for i in case.slow)!r}))))\n"
              f"if flaked or any(os.path.exists(f't{{i}}.txt') for i in {sorted(case.culprits)!r}): sys.exit(1)\n")
    log = shlex.quote(str(tmp / "gated.log"))
    return ["sh", "-c", f'echo "${{SPARK_QUEUE_BATCH:-$SPARK_TASK}}" >> {log}; exec "$0" "$@"', *gate_cmd(script)]


def real_queue(tmp: Path, case: Case) -> Decisions:
    """Every task `complete --no-wait`, then one `queue run` (a real process) drains the queue."""
    extra = f"[queue]\nbatch_max = {case.batch_max}\nlanes = {str(case.lanes).lower()}\nretries = {case.retries}\npipeline = {str(case.pipeline).lower()}"
    extra += f"\nlanes_from = {case.lanes_from}"
    q = Queue(tmp, case.n, final=culprit_gate(tmp, case), extra=extra, parallel=case.parallel)
    base = git(q.repo, "rev-parse", "main")
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    r = q.spark("t0", "--json", "queue", "run", process=True)
    assert r.returncode == 0, r
    subjects = git(q.repo, "log", "--first-parent", "--reverse", "--format=%s", f"{base}..main").splitlines()
    assert all(s.startswith("spark-git: land task t") for s in subjects), subjects
    q.assert_landed_as_merges()
    assert q.queue_refs() == [] and q.scratch() == []
    if case.lanes:  # every landing moved main to a tree whose gate passed (a recheck's, when its base had moved)
        assert all(passed_verdict(q, o["new_base"]) for o in q.queue_log()["outcomes"] if o["result"] == "landed")
    qlog = q.queue_log()
    named = [int(o["task"][1:]) for o in qlog["outcomes"] if o["result"] == "failed"]
    print(*(f"{o['task']} {o['result']}: {o.get('reason')} {o.get('gate_log')}" for o in qlog["outcomes"]), sep="\n")  # shown when it fails
    gated = [[int(t[1:]) for t in line.split(",")] for line in (tmp / "gated.log").read_text().splitlines()]
    assert qlog["gate_runs"] == len(gated), (qlog["gate_runs"], gated)  # the queue's own count: one per run the gate saw, a stopped one too
    return Decisions([int(s.rsplit(" t", 1)[1]) for s in subjects], named, qlog["gate_runs"], gated)


def same(real: Decisions, sim: Decisions, case: Case) -> None:
    assert (real.landed, real.culprits, real.gate_runs) == (sim.landed, sim.culprits, sim.gate_runs), (real, sim)
    assert sorted(real.gated) == sorted(sim.gated), (real, sim)  # two runs that start together log in either order
    assert sorted(real.landed + real.culprits) == list(range(case.n)) and not case.culprits & set(real.landed)


@pytest.mark.usefixtures("unsandboxed")
@pytest.mark.parametrize(("culprits", "batch_max"), [(set(), 8), ({2}, 8), ({0, 5}, 8), ({1, 4}, 4), ({3}, 1)])
def test_the_simulated_queue_decides_as_the_real_one(tmp_path: Path, culprits: set[int], batch_max: int) -> None:
    case = Case(frozenset(culprits), batch_max)
    real = real_queue(tmp_path, case)
    assert real == case.sim(speculative=True), real  # speculate.py at parallel=1
    before = case.sim(speculative=False)  # bisect.py, the drain before CONFIRM: the same decisions, a culprit's run once fewer
    assert (real.landed, real.culprits) == (before.landed, before.culprits), (real, before)
    same(real, case.sim(speculative=True), case)


@pytest.mark.usefixtures("unsandboxed")
@pytest.mark.parametrize(("flaky", "retries"), [({1}, 1), ({1}, 0)])
def test_with_a_flaky_gate_too(tmp_path: Path, flaky: set[int], retries: int) -> None:
    """A task whose tree fails its first run: with `[queue] retries = 1` the retry passes it (one run
    more, nobody blamed); without, this gate (it fails the first run of every tree that holds t1) fails
    each probe holding t1 once: two failing runs of two trees name it (speculate.CONFIRM), in both
    queues alike. Only a second run of the same tree tells such a gate apart: `retries`."""
    case = Case(frozenset({3}), flaky=frozenset(flaky), retries=retries)
    real = real_queue(tmp_path, case)
    same(real, case.sim(speculative=True), case)
    assert (1 in real.culprits) == (retries == 0)


@pytest.mark.usefixtures("unsandboxed")
@pytest.mark.parametrize("culprits", [set(), {2}, {1, 4}])
def test_with_two_runners_too(tmp_path: Path, culprits: set[int]) -> None:
    """[queue] parallel = 2: two candidates gated at once, a run the planner no longer needs stopped."""
    case = Case(frozenset(culprits), parallel=2)
    same(real_queue(tmp_path, case), case.sim(speculative=True), case)


@pytest.mark.usefixtures("unsandboxed")
def test_a_flake_seen_first_brings_back_the_prefixes_it_cancelled(tmp_path: Path) -> None:
    """2 runners, 4 tasks, no culprit; t1's tree fails its first run. prefix 2 fails first, so
    prefixes 3 and 4, now useless, are stopped; its confirming run passes (a flake), so they are
    needed again. The planner used to keep them cancelled for good: the drain stopped with an internal
    error ("planner is stuck") and the model landed nothing. Both now gate them again and land all."""
    case = Case(frozenset(), batch_max=4, parallel=2, n=4, flaky=frozenset({1}))
    real = real_queue(tmp_path, case)
    same(real, case.sim(speculative=True), case)
    assert real.landed == [0, 1, 2, 3] and real.culprits == []


@pytest.mark.usefixtures("unsandboxed")
@pytest.mark.parametrize("culprits", [set(), {2}])
def test_with_lanes_too(tmp_path: Path, culprits: set[int]) -> None:
    """[queue] lanes = true, 2 runners: 5 tasks on files of their own are 5 lanes in 2 groups (0 2 4 and
    1 3), each gated by its own planner and landed when decided; the group landing second is gated
    again on the combined tree (recheck = "combined")."""
    case = Case(frozenset(culprits), parallel=2, lanes=True, n=5)
    same(real_queue(tmp_path, case), case.sim(speculative=True), case)


@pytest.mark.usefixtures("unsandboxed")
def test_lanes_open_once_batches_fail(tmp_path: Path) -> None:
    """[queue] lanes_from = 0.3, 2 runners, batches of 3: the first batch (nothing settled yet) is
    gated whole; its culprit t1 makes 1 of the 3 tasks settled a culprit, so the next batch is split
    into lanes (3 5 | 4), in both queues alike (slow 0 and 3: no two runs end within a second, and
    the same decisions for any start-up time of a run)."""
    case = Case(frozenset({1}), batch_max=3, parallel=2, lanes=True, lanes_from=0.3, slow=frozenset({0, 3}))
    real = real_queue(tmp_path, case)
    same(real, case.sim(speculative=True), case)
    assert [0, 1, 2] in real.gated and [3, 5] in real.gated and [3, 4, 5] not in real.gated, real.gated


@pytest.mark.usefixtures("unsandboxed")
def test_with_two_lanes_rechecked_in_a_chain(tmp_path: Path) -> None:
    """3 runners, 6 tasks: 3 lanes (0 3, 1 4, 2 5) whose gates end 1 s apart (2, 4, 5 are slow). The
    first lands on its own verdict; the second is rechecked on it, the third on top of the second's
    recheck at the same time, so the second landing does not restart it: 5 runs to their end, not 6 (and
    the speculative prefixes 1 and 2, stopped)."""
    case = Case(frozenset(), parallel=3, lanes=True, slow=frozenset({2, 4, 5}))
    real = real_queue(tmp_path, case)
    same(real, case.sim(speculative=True), case)
    assert real.landed == [0, 3, 1, 4, 2, 5] and real.gate_runs == 7  # 5 to the end, and prefixes 1 and 2, stopped once their lanes passed
    assert sorted(real.gated).count([2, 5]) == 2  # its own gate and one recheck


@pytest.mark.usefixtures("unsandboxed")
@pytest.mark.parametrize(("culprits", "slow"), [(set(), {1, 2, 3}), ({2}, {1, 2})])
def test_with_lanes_across_batches_too(tmp_path: Path, culprits: set[int], slow: set[int]) -> None:
    """[queue] pipeline = true, 2 runners, 4 tasks on files of their own: a lane opens for the next
    waiting task whenever a runner is free (t2 while t1 is gated, t3 while t2's recheck runs), the
    rechecks chained across them; with t2 a culprit, t3 is opened in its place and lands."""
    case = Case(frozenset(culprits), parallel=2, lanes=True, n=4, slow=frozenset(slow), pipeline=True)
    real = real_queue(tmp_path, case)
    same(real, case.sim(speculative=True), case)
    assert real.landed == [t for t in range(4) if t not in culprits]


@pytest.mark.usefixtures("unsandboxed")
def test_the_pipeline_opens_lanes_while_batches_fail_often(tmp_path: Path) -> None:
    """[queue] pipeline and lanes with lanes_from = 0.3, 2 runners, batches of 4: nothing settled
    yet, so batches are stacked (0 1 2 3); once t0 landed and t1 was named (1 of 2 a culprit) lanes
    are opened across batches (3, 2, 4, each alone); once 1 of 5 is, batches are stacked again
    (5 6 7). Both queues switch at the same points (slow 1, 2, 4: no two runs end together)."""
    case = Case(frozenset({1}), batch_max=4, parallel=2, lanes=True, n=8, slow=frozenset({1, 2, 4}), pipeline=True, lanes_from=0.3)
    real = real_queue(tmp_path, case)
    same(real, case.sim(speculative=True), case)
    assert [0, 1, 2, 3] in real.gated and [3] in real.gated and [5, 6, 7] in real.gated, real.gated


@pytest.mark.usefixtures("unsandboxed")
@pytest.mark.parametrize(("culprits", "batch_max", "parallel", "slow"), [(set(), 1, 3, set()), ({1}, 1, 3, {0, 2}), (set(), 2, 4, set()), ({3}, 2, 4, {1})])
def test_with_batches_stacked_too(tmp_path: Path, culprits: set[int], batch_max: int, parallel: int, slow: set[int]) -> None:
    """[queue] pipeline = true without lanes: the next batch is gated on top of what the one ahead is
    expected to land while runners are free, and lands right after it; when the one under it fails,
    it falls (its runs stopped, nothing recorded against its tasks) and is gated again on what landed.
    `slow` tasks keep the runs whose order decides apart from each other."""
    case = Case(frozenset(culprits), batch_max=batch_max, parallel=parallel, pipeline=True, slow=frozenset(slow))
    real = real_queue(tmp_path, case)
    same(real, case.sim(speculative=True), case)
    assert real.landed == [t for t in range(N) if t not in culprits]


@pytest.mark.usefixtures("unsandboxed")
@pytest.mark.parametrize(("flaky", "batch_max", "parallel", "slow"), [({1}, 1, 3, set()), ({3}, 2, 4, {1})])
def test_with_batches_stacked_on_a_flaky_gate(tmp_path: Path, flaky: set[int], batch_max: int, parallel: int, slow: set[int]) -> None:
    """Stacked batches with `[queue] retries = 1` and a gate whose first run on a tree holding a flaky
    task fails: the retry passes it, the batches on top of it stand, nobody is blamed, all land."""
    case = Case(frozenset(), batch_max=batch_max, parallel=parallel, pipeline=True, slow=frozenset(slow), flaky=frozenset(flaky), retries=1)
    real = real_queue(tmp_path, case)
    same(real, case.sim(speculative=True), case)
    assert real.landed == list(range(N)) and real.culprits == []


@pytest.mark.usefixtures("unsandboxed")
def test_stacked_batches_do_not_blame_a_task_whose_own_prefix_flaked(tmp_path: Path) -> None:
    """Stacked, no retries: t1's tree fails its first run (a flake) and t2 is a culprit. Prefixes 2 and
    3 both fail and both hold t1, which used to name t1. Now only its own prefix's runs name it: that
    one candidate is gated again beside the next batch, passes, and t1 lands; t2 is named."""
    case = Case(frozenset({2}), batch_max=3, parallel=2, pipeline=True, flaky=frozenset({1}), slow=frozenset({3, 4}))
    real = real_queue(tmp_path, case)
    same(real, case.sim(speculative=True), case)
    assert real.culprits == [2] and 1 in real.landed


@pytest.fixture
def unsandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_BWRAP", "")  # the gate logs its candidates outside the tree (a sandboxed gate cannot)
