"""Lanes in the real drain (`[queue] lanes = true`, more than one runner): the batch's tasks split by
lanes.partition (changed paths that overlap, `[queue] shared`), at most one lane group per runner,
each gated as its own batch by the planner on the same runners and landed as soon as its outcome
is in, without waiting for the others. A lane whose candidate passed on a base another lane has
since moved is merged again (disjoint paths: cleanly) and, with `[queue] recheck = "combined"`,
gated again on that combined tree before its compare-and-swap; with "none" it lands on its lane's
verdict (the combined tree itself was never gated).

The combined rechecks are chained (the train): each is built on top of the one ahead of it (the
first on the base), all gated at once on the runners, and they land in order, each by
compare-and-swap of exactly the tree that passed, so a lane landing ahead does not restart the
recheck behind it. A failing recheck (the lanes interact after all, or a flake beyond the retries)
blames nobody: its lane stays queued, the ones ahead land, and the ones behind, built on it, are
merged again without it and gated again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from spark_git.core.layout import Layout
from spark_git.gates import command as gates
from spark_git.ops.queue import gate, lanes
from spark_git.ops.queue.probes import Drive, Job, Lane, rebuild
from spark_git.ops.queue.speculate import prefix
from spark_git.state.queuelog import CandidatePart, QueueCandidate
from spark_git.state.store import Store

Fail = Callable[[CandidatePart, gates.GateEvidence, list[str]], None]  # a culprit back to IMPLEMENTATION
Land = Callable[[QueueCandidate, gates.GateEvidence], bool]  # compare-and-swap; False: nothing landed, its tasks stay queued


def groups(layout: Layout, cand: QueueCandidate) -> list[list[int]]:
    """The batch's lanes (part indexes, queue order), merged into at most one group per runner (lanes.grouped)."""
    git, cfg = layout.git(), layout.config.queue
    found = lanes.partition([git.changed_paths(cand.old_base, p.head) for p in cand.parts], cfg.shared)
    return lanes.grouped(found, cfg.runners())


@dataclass(eq=False)
class Car:
    """A lane in the train: what its planner landed, and that merged on top of the car ahead (or the base)."""
    lane: Lane
    own: QueueCandidate  # the probe that passed, on the batch's base
    combined: QueueCandidate | None = None  # own's tasks merged on the tip ahead; old_base: that tip
    job: Job | None = None  # its recheck, while it runs
    passed: gates.GateEvidence | None = None  # its recheck's verdict, once it passed


class LaneDrive(Drive):
    def __init__(self, layout: Layout, store: Store, cands: list[QueueCandidate], opts: gate.GateOpts, fail: Fail, land: Land) -> None:
        super().__init__(layout, store, cands, opts)
        self.fail, self.land = fail, land
        self.train: list[Car] = []  # combined rechecks in landing order

    def decided(self, lane: Lane) -> None:
        o, parts = lane.gated.outcome, lane.cand.parts
        tasks = [p.task for p in parts]
        for c in o.culprits:
            self.fail(parts[c], lane.gated.evs[prefix(c + 1)], tasks)
        if not o.land:
            lane.done = True
            return
        cand, ev = lane.gated.cands[o.land].model_copy(update={"scratch": None}), lane.gated.evs[o.land]
        head = self.layout.git().branch_head(cand.base_branch)
        if not self.train and head == cand.old_base:
            self._land_now(lane, cand, ev)
        elif self.layout.config.queue.recheck == "none":
            moved = rebuild(self.layout, cand, head) if head is not None else None
            self._land_now(lane, moved, ev)
        else:
            self.train.append(Car(lane, cand))
            self._couple(len(self.train) - 1)

    def _land_now(self, lane: Lane, cand: QueueCandidate | None, ev: gates.GateEvidence) -> None:
        if cand is not None:  # None: it did not merge again (cannot happen for disjoint paths): it stays queued
            self.land(cand, ev)
        lane.done = True

    def _couple(self, i: int) -> None:
        """(Re)builds the cars from i on, each on the tip ahead of it, and gates each again; a car that
        no longer merges leaves the train (its tasks stay queued)."""
        while i < len(self.train):
            car = self.train[i]
            if car.job is not None:
                self.stop(car.job)
            car.job, car.passed = None, None
            below = self.train[i - 1].combined if i else None
            tip = below.parts[-1].tip if below is not None else self.layout.git().branch_head(car.own.base_branch)
            car.combined = rebuild(self.layout, car.own, tip) if tip is not None else None
            if car.combined is None:
                car.lane.done = True
                del self.train[i]
                continue
            car.job = Job(car.lane, (), car.combined, recheck=True)
            self.submit(car.job)
            i += 1

    def wanted(self, job: Job) -> bool:
        """A recheck of a car that was rebuilt (or left) after it ended, in the same wait, is stale."""
        return not job.recheck or any(car.job is job for car in self.train)

    def rechecked(self, job: Job, ev: gates.GateEvidence) -> None:
        i = next(k for k, car in enumerate(self.train) if car.job is job)
        car = self.train[i]
        car.job = None
        if not ev.passed:  # nobody is blamed: its lane stays queued; the cars behind it were built on it
            car.lane.done = True
            del self.train[i]
            self._couple(i)
            return
        car.passed = ev
        self._land_ahead()

    def _land_ahead(self) -> None:
        """Lands the cars at the head of the train whose rechecks passed, in order."""
        while self.train:
            car = self.train[0]
            if car.combined is None or car.passed is None:
                return
            self.train.pop(0)
            car.lane.done = True
            if not self.land(car.combined, car.passed):  # the base moved under it: the rest are rebuilt on where it is now
                self._couple(0)
                return


def gate_lanes(layout: Layout, store: Store, cands: list[QueueCandidate], opts: gate.GateOpts, fail: Fail, land: Land) -> None:
    LaneDrive(layout, store, cands, opts, fail, land).run()
