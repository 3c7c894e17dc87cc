"""The merge queue on a virtual clock (scripts/sim_queue): the real decision code (bisect.py through
`BisectPlan`, speculate.Speculation, lanes.partition and grouped, selection.run_length) against a simulated gate:
an event queue, no sleeps, no git. A candidate is the set of tasks landed so far plus a probe's
entries; it fails when it holds a culprit, or by chance (a flake) on one attempt; `[queue] retries`
re-runs a failing attempt as retry.py does. Deterministic for a seed."""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field
from typing import Literal, Protocol

from spark_git.gates.evidence import GateEvidence
from spark_git.ops.queue import bisect as bisecting
from spark_git.ops.queue.lanes import grouped, partition, worth_splitting
from spark_git.ops.queue.selection import run_length
from spark_git.ops.queue.speculate import Outcome, Probe, Speculation, prefix

BASE = "main"  # every simulated task lands on one base branch


@dataclass(frozen=True)
class Task:
    id: int  # also its queue position: arrival order
    arrive_s: float
    paths: frozenset[str]  # what `git diff --name-only base...head` would list
    culprit: bool  # breaks the gate in every candidate that holds it


@dataclass(frozen=True)
class GateModel:
    mean_s: float = 600.0
    jitter_s: float = 120.0  # standard deviation of a run's duration (at least a tenth of the mean)
    flake: float = 0.02  # chance that one attempt fails by chance
    retries: int = 1  # [queue] retries
    seed: int = 1
    per_task_s: float = 0.0  # added per task in the candidate (the equivalence test's gate: a fixed finishing order)
    flaky_tasks: frozenset[int] = frozenset()  # the first run on a tree holding one of these fails (the equivalence test's flaky gate)
    slow_tasks: frozenset[int] = frozenset()  # each counts twice in per_task_s (the equivalence test: lanes that end apart)

    def attempt(self, key: str, ids: list[int], n: int) -> tuple[float, bool]:
        """(duration, flaked) of attempt n on the candidate `key` holding the tasks `ids`: the same draw whichever strategy asks."""
        r = random.Random(f"{self.seed}:{key}:{n}")
        return max(self.mean_s / 10, r.gauss(self.mean_s, self.jitter_s)) + self.per_task_s * (len(ids) + len(self.slow_tasks & set(ids))), r.random() < self.flake


@dataclass(frozen=True)
class Strategy:
    name: str
    batch_max: int = 8
    speculative: bool = True  # Speculation(n, runners) instead of today's bisect.py (one runner)
    lanes: Literal["no", "batch", "queue"] = "no"  # batch: the drain's [queue] lanes; queue: across batches (the drain's [queue] pipeline too)
    recheck: Literal["combined", "none"] = "combined"
    chain: bool = True  # combined rechecks each on top of the ones ahead, landed in order (the drain's, lanedrive.py); False: restarted when the base moves (the drain before)
    shared: tuple[str, ...] = ()
    window: int = 16  # lanes: the waiting entries partitioned at once (the head of the queue)
    stack: bool = False  # a batch opened on top of the one ahead (as if it lands whole) while runners are free
    lanes_from: float = 0.0  # lanes once this share of the recent settled tasks were culprits ([queue] lanes_from; 0: always); "queue": else stacked


class Planner(Protocol):
    def start(self, limit: int | None = None) -> list[Probe]: ...
    def finish(self, probe: Probe, passed: bool) -> None: ...
    def cancel(self) -> list[Probe]: ...
    def outcome(self) -> Outcome | None: ...


class _Confirm:
    """A suspect's own prefix gated again (stack.py): no planner, the verdict decides (Sim._done)."""

    def start(self, limit: int | None = None) -> list[Probe]:
        return []

    def finish(self, probe: Probe, passed: bool) -> None:
        return None

    def cancel(self) -> list[Probe]:
        return []

    def outcome(self) -> Outcome | None:
        return None


class _Unknown(Exception):
    def __init__(self, k: int) -> None:
        super().__init__(k)
        self.k = k


def _ev(passed: bool) -> GateEvidence:
    return GateEvidence(gate="final", command="sim", ran=True, passed=passed, tree="", commit="", worktree="", time="")


class BisectPlan:
    """Today's drain as a planner: the batch, then the real `bisect.bisect` replayed over the verdicts
    known so far; the first prefix it asks for without a verdict is the probe to run next."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.verdicts: dict[int, bool] = {}  # prefix length -> passed
        self.running: Probe | None = None

    def start(self, limit: int | None = None) -> list[Probe]:
        step = self._replay()
        if self.running is not None or isinstance(step, Outcome):
            return []
        self.running = prefix(step)
        return [self.running]

    def finish(self, probe: Probe, passed: bool) -> None:
        if probe != self.running:
            raise ValueError(f"probe {probe} is not running")
        self.verdicts[len(probe)], self.running = passed, None

    def cancel(self) -> list[Probe]:
        return []  # one probe at a time: none is ever useless

    def outcome(self) -> Outcome | None:
        step = self._replay()
        return step if isinstance(step, Outcome) else None

    def _replay(self) -> Outcome | int:
        n = self.n
        if n not in self.verdicts:
            return n
        if self.verdicts[n]:
            return Outcome(prefix(n), True, (), ())
        try:
            split = bisecting.bisect(n, _ev(False), self._known)
        except _Unknown as u:
            return u.k
        return Outcome(prefix(split.passing), split.passing > 0, (split.culprit,), tuple(range(split.culprit + 1, n)))

    def _known(self, k: int) -> GateEvidence:
        if k not in self.verdicts:
            raise _Unknown(k)
        return _ev(self.verdicts[k])


@dataclass(eq=False)
class Batch:
    entries: list[Task]
    plan: Planner
    base: int  # how often the base had moved when it was built (or last rechecked)
    below: frozenset[int]  # the tasks landed when it was built: its probes' base
    jobs: dict[Probe, Job] = field(default_factory=dict)
    landing: Outcome | None = None
    recheck: Job | None = None
    rechecked: bool = False
    failed: bool = False  # one of its probes failed: a culprit to find
    under: Batch | None = None  # stacked: the batch it is built on
    on: frozenset[int] = frozenset()  # stacked: what `under` is expected to land (in its probes' base)
    held: Outcome | None = None  # stacked: decided before the batch under it landed


@dataclass(eq=False)
class Job:
    batch: Batch
    probe: Probe
    key: str
    tree: frozenset[int]
    passed: bool
    ends: list[float]  # when each attempt ends
    recheck: bool = False
    cancelled: bool = False


@dataclass
class Result:
    landed: list[tuple[int, float]] = field(default_factory=list)  # (task, when), in landing order
    culprits: list[int] = field(default_factory=list)  # named by the queue, in order
    gate_runs: int = 0  # runs started (retries, rechecks and stopped ones included), as the queue counts them
    cancelled: int = 0  # of those, runs stopped once the planner no longer needed them
    rechecks: int = 0
    gated: list[list[int]] = field(default_factory=list)  # each run (a reused verdict is none): its candidate's tasks in queue order, as started
    ungated: int = 0  # landings of a tree no gate passed (recheck "none" after another lane landed)


class Sim:
    def __init__(self, tasks: list[Task], strategy: Strategy, runners: int, gate: GateModel) -> None:
        self.tasks, self.s, self.runners, self.gate = tasks, strategy, runners, gate
        self.culprits = frozenset(t.id for t in tasks if t.culprit)  # a tree holding one fails (a stacked probe's base may)
        self.clock, self.seq, self.base, self.running = 0.0, 0, 0, 0
        self.events: list[tuple[float, int, Task | Job]] = []
        self.waiting: list[Task] = []
        self.batches: list[Batch] = []
        self.train: list[Batch] = []  # chained rechecks: decided batches in landing order
        self.landed: frozenset[int] = frozenset()
        self.passed_trees: set[frozenset[int]] = set()  # verdict reuse: a tree that passed is not gated again
        self.draws: dict[str, int] = {}
        self.flaked: set[frozenset[int]] = set()  # trees a flaky task has failed once
        self.result = Result()
        self.settled: list[bool] = []  # each task landed (False) or named a culprit (True), in order: lanes.worth_splitting
        self.laned = False  # pipeline: this round of the drain opens lanes across batches (else stacked batches)
        self.confirms = 0  # suspects' own prefixes being gated again (stack.py's confirms)

    def run(self) -> Result:
        for t in self.tasks:
            self._push(t.arrive_s, t)
        while self.events:
            self.clock, touched = self.events[0][0], list[Batch]()
            while self.events and self.events[0][0] == self.clock:  # all that happens at once, then the drain looks
                what = heapq.heappop(self.events)[2]
                if isinstance(what, Task):
                    self.waiting.append(what)
                elif self._done(what) and what.batch not in touched:
                    touched.append(what.batch)
            for b in touched:
                self._settle(b)
            self._schedule()
        return self.result

    def _push(self, at: float, what: Task | Job) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at, self.seq, what))

    def _schedule(self) -> None:
        if self.s.lanes == "queue" or self.s.stack:  # the drain's pipeline: lanes across batches once batches fail often, else stacked
            laned = self.s.lanes == "queue" and worth_splitting(self.settled, self.s.lanes_from)
            if not self.batches and not self.confirms:  # a new round of the drain (drain._pipeline)
                self.laned = laned
            if laned == self.laned:  # else nothing more is opened until the batches in flight are done
                (self._open_queue_lanes if laned else self._open_stacked)()
        elif not self.batches and self.waiting:
            self._open_batch()
        self._fill()

    def _cap(self) -> int:
        return self.runners if self.s.speculative else 1  # today's drain gates one candidate at a time

    def _fill(self) -> None:
        """The free runners, one probe per undecided batch in turn, a batch with a failure to find
        first (probes.Drive._start)."""
        order = sorted((x for x in self.batches if x.landing is None), key=lambda x: not x.failed)
        while self.running < self._cap():
            started = 0
            for b in order:
                for p in b.plan.start(limit=1) if self.running < self._cap() else []:
                    self._launch(b, p)
                    started += 1
            if not started:
                return

    def _open_batch(self) -> None:
        """The next batch of ready entries, as the drain takes it; with lanes ("batch", more than one
        runner, once recent tasks failed often: lanes_from) split into its lane groups (lanedrive.groups),
        each gated as its own batch."""
        entries = self._take(self.waiting)
        groups = [list(range(len(entries)))]
        if self.s.lanes == "batch" and self.runners > 1 and worth_splitting(self.settled, self.s.lanes_from):
            found = grouped(partition([t.paths for t in entries], self.s.shared), self.runners)
            groups = found if len(found) > 1 else groups
        self.batches += [Batch([entries[i] for i in g], self._plan(len(g)), self.base, self.landed) for g in groups]

    def _open_stacked(self) -> None:
        """A batch on top of the last one (on what it is expected to land) while runners are free once
        the batches in flight took what they ask for."""
        self._fill()
        while self.waiting and self.running < self._cap():
            top = self.batches[-1] if self.batches else None
            on = self._expect(top) if top is not None else frozenset()
            if on is None:
                return
            free = self._cap() - self.running
            entries = self._take(self.waiting)
            below = top.below | on if top is not None else self.landed
            self.batches.append(Batch(entries, self._plan(len(entries), stacked=True), self.base, below, under=top, on=on))
            self._fill()
            if self._cap() - self.running == free:
                return

    def _expect(self, b: Batch) -> frozenset[int] | None:
        """What b will land if nothing more fails (Speculation.expected), as task ids; None: unknown."""
        if b.landing is not None:
            probe = b.held.land if b.held is not None else None
        else:
            probe = b.plan.expected() if isinstance(b.plan, Speculation) else None
        return frozenset(b.entries[i].id for i in probe) if probe else None

    def _open_queue_lanes(self) -> None:
        """Lanes across batches (pipeline.py with drain._admit): a new batch for every lane of the
        waiting window that has none in flight, while runners are free."""
        busy = {t.id for b in self.batches for t in b.entries}
        pool = sorted([*(t for b in self.batches for t in b.entries), *self.waiting[: self.s.window]], key=lambda t: t.id)
        opened = 0
        for lane in partition([t.paths for t in pool], self.s.shared):
            if self.running + opened >= self.runners:
                return
            if not busy & {pool[i].id for i in lane}:
                entries = self._take([pool[i] for i in lane])
                self.batches.append(Batch(entries, self._plan(len(entries)), self.base, self.landed))
                opened += 1

    def _take(self, ready: list[Task]) -> list[Task]:
        entries = ready[: run_length([BASE] * len(ready), self.s.batch_max)]
        taken = {t.id for t in entries}
        self.waiting = [t for t in self.waiting if t.id not in taken]
        return entries

    def _plan(self, n: int, stacked: bool = False) -> Planner:
        return Speculation(n, self.runners, skips=not stacked) if self.s.speculative else BisectPlan(n)  # stack.py: no skip probes

    def _launch(self, b: Batch, probe: Probe, recheck: bool = False) -> None:
        ids = [b.entries[i].id for i in probe]
        # a probe is built on its batch's base; a recheck on the base now, and the rechecks chained ahead of it
        below = self.landed.union(*(frozenset(x.entries[i].id for i in x.landing.land) for x in self._ahead(b) if x.landing)) if recheck else b.below
        tree = below | frozenset(ids)
        key = f"{'r' if recheck else ''}{self.base if recheck else b.base}:{len(below)}:{ids}"
        self.draws[key] = self.draws.get(key, 0) + 1  # the same candidate gated again draws anew
        job = Job(b, probe, f"{key}:{self.draws[key]}", tree, passed=True, ends=[], recheck=recheck)
        self.running += 1
        confirming = not recheck and probe in getattr(b.plan, "fails", {})  # gated again to confirm a failure: no retries (probes.py)
        end = self._attempts(job, ids, bool(tree & self.culprits), 0 if confirming else self.gate.retries) if tree not in self.passed_trees else self.clock
        if recheck:
            self.result.rechecks += 1
            b.recheck = job
        else:
            b.jobs[probe] = job
        self._push(end, job)

    def _attempts(self, job: Job, ids: list[int], culprit: bool, retries: int) -> float:
        """Runs the gate on the job's tree, again on a failure up to `retries` times; when the last run ends."""
        end = self.clock
        for n in range(1 + retries):
            self.result.gated.append(ids)
            dur, flaked = self.gate.attempt(job.key, ids, n)
            if self.gate.flaky_tasks & set(ids) and job.tree not in self.flaked:  # its first run on this tree fails
                self.flaked.add(job.tree)
                flaked = True
            end += dur
            job.ends.append(end)
            job.passed = not culprit and not flaked
            if job.passed:
                break
        return end

    def _done(self, job: Job) -> bool:
        """A run ended: its verdict to the planner (True), or a recheck handled (False)."""
        if job.cancelled:
            return False
        self.running -= 1
        self.result.gate_runs += len(job.ends)
        if job.passed:
            self.passed_trees.add(job.tree)
        b = job.batch
        if isinstance(b.plan, _Confirm):  # failed again: named; passed: a flake, back in the queue
            self.confirms -= 1
            if job.passed:
                self.waiting = sorted([*self.waiting, b.entries[-1]], key=lambda t: t.id)
            else:
                self.result.culprits.append(b.entries[-1].id)
                self.settled.append(True)
            return False
        if job.recheck:
            self._rechecked(b, job)
            return False
        del b.jobs[job.probe]
        b.plan.finish(job.probe, job.passed)
        b.failed = b.failed or not job.passed
        above = next((x for x in self.batches if x.under is b), None)
        if above is not None and self._expect(b) != above.on:  # it will not land what the batch on top stands on
            self._topple(above)
        return True

    def _settle(self, b: Batch) -> None:
        """After the verdicts that came in at once, as the drain does: stop the runs no longer needed, then decide."""
        for p in b.plan.cancel():
            self._kill(b.jobs.pop(p))
        o = b.plan.outcome()
        if o is not None:
            self._decide(b, o)

    def _kill(self, job: Job) -> None:
        job.cancelled = True
        self.running -= 1
        ended = sum(1 for e in job.ends if e <= self.clock)  # a retry's first run ended before the stop
        stopped = ended < len(job.ends)  # the run in flight: it ran, if not to its end (probes.Drive.stop counts it)
        self.result.gate_runs += ended + stopped
        self.result.cancelled += stopped

    def _decide(self, b: Batch, o: Outcome) -> None:
        for j in b.jobs.values():
            self._kill(j)
        b.jobs.clear()
        b.landing = o
        if b.under is not None:  # its verdicts count once the batch under it has landed what it stood on
            b.held = o
            above = next((x for x in self.batches if x.under is b), None)
            if above is not None and self._expect(b) != above.on:
                self._topple(above)
            return
        self.result.culprits += [b.entries[i].id for i in o.culprits]
        self.settled += [True] * len(o.culprits)
        self.waiting = sorted([*self.waiting, *(b.entries[i] for i in o.requeue if i != o.suspect)], key=lambda t: t.id)
        if o.suspect is not None:  # its own prefix's tree gated again, off the stack; the suspect waits for it
            self._suspect(b, o.suspect)
        if not o.land:
            self.batches.remove(b)
            self._restack(b, frozenset())
        elif self.s.recheck == "none" or (b.base == self.base and not self.train):
            self._land(b, o.land)
        else:
            if self.s.chain:
                self.train.append(b)
            b.base = self.base
            self._launch(b, o.land, recheck=True)

    def _suspect(self, b: Batch, c: int) -> None:
        """The suspect's own prefix (the same candidate, its last entry the suspect) gated again."""
        self.confirms += 1
        self._launch(Batch(b.entries[: c + 1], _Confirm(), b.base, b.below), prefix(c + 1))

    def _ahead(self, b: Batch) -> list[Batch]:
        """The chained batches that land before b (its recheck is gated on top of them)."""
        return self.train[: self.train.index(b)] if b in self.train else []

    def _rechecked(self, b: Batch, job: Job) -> None:
        """The combined tree's gate: lands if it passed and the base is still the one it was gated on
        (chained: once the ones ahead have landed)."""
        b.recheck = None
        if not job.passed:  # only a flake can fail it (the lane's probe passed): nobody is blamed, all stay queued
            self._drop(b, job.probe)
        elif self.s.chain:
            b.rechecked = True
            while self.train and self.train[0].rechecked:
                head = self.train.pop(0)
                self._land(head, head.landing.land if head.landing else ())
        elif b.base != self.base:
            b.base = self.base
            self._launch(b, job.probe, recheck=True)
        else:
            self._land(b, job.probe)

    def _drop(self, b: Batch, probe: Probe) -> None:
        """A recheck failed: b's entries stay queued; the chained rechecks behind it held it, so they run again."""
        behind = self.train[self.train.index(b) + 1 :] if b in self.train else []
        self.train = [x for x in self.train if x is not b]
        self.waiting = sorted([*self.waiting, *(b.entries[i] for i in probe)], key=lambda t: t.id)
        self.batches.remove(b)
        for x in behind:
            if x.recheck is not None:
                self._kill(x.recheck)
            x.rechecked = False
            self._launch(x, x.landing.land if x.landing else (), recheck=True)

    def _land(self, b: Batch, probe: Probe) -> None:
        ids = [b.entries[i].id for i in probe]
        self.result.landed += [(i, self.clock) for i in ids]
        self.settled += [False] * len(ids)
        self.landed |= frozenset(ids)
        self.result.ungated += self.landed not in self.passed_trees
        self.base += 1
        self.batches.remove(b)
        self._restack(b, frozenset(ids))

    def _restack(self, b: Batch, landed: frozenset[int]) -> None:
        """b is gone: the batch on top of it stands on the base now if b landed what it stood on, else it falls."""
        above = next((x for x in self.batches if x.under is b), None)
        if above is None:
            return
        if landed != above.on:
            self._topple(above)
            return
        above.under, above.base = None, self.base
        if above.held is not None:
            o, above.held = above.held, None
            self._decide(above, o)

    def _topple(self, b: Batch | None) -> None:
        """b and everything stacked on it: runs stopped, entries back in the queue, no verdict kept."""
        while b is not None:
            for j in b.jobs.values():
                self._kill(j)
            b.jobs.clear()
            self.batches.remove(b)
            self.waiting = sorted([*self.waiting, *b.entries], key=lambda t: t.id)
            b = next((x for x in self.batches if x.under is b), None)
