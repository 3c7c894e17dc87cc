"""Stacked batches (`[queue] pipeline = true` without `lanes`, more than one runner): while runners
are free, the next batch is built on top of what the batch ahead is expected to land
(`Speculation.expected`: all of it while none of its runs failed, what it decided once decided) and
gated at the same time. It lands right after the one under it, by compare-and-swap of its own tip:
no recheck, its candidate holds the tree that lands. A batch here gates no "batch without the
culprit": once the culprit is named, the prefix before it lands and the rest goes to the next batch
at once (`skips=False`), which with the runners free for it is faster than a second round. A task
backed as the culprit only by longer prefixes (a second culprit may fail those) is not blamed: it
stays queued, out of the batches, while its own prefix's candidate is gated again beside them.

Its verdicts count only once the batch under it landed exactly what it stood on. Until then a
decided batch holds its outcome (nobody is blamed on a base that may not land). When the one under
it is expected to land anything else, or lands anything else, it falls with everything stacked on
it: its runs are stopped and its tasks stay queued, with nothing recorded against them."""

from __future__ import annotations

from collections.abc import Callable

from spark_git.core.layout import Layout
from spark_git.gates import command as gates
from spark_git.ops.queue import gate
from spark_git.ops.queue.lanedrive import Fail, Land, LaneDrive
from spark_git.ops.queue.probes import Job, Lane
from spark_git.ops.queue.speculate import Probe, Speculation, prefix
from spark_git.state.queuelog import CandidatePart, QueueCandidate
from spark_git.state.store import Store

Admit = Callable[[str | None, set[str]], QueueCandidate | None]  # (tip to build on, None: the base now; queue refs in flight) -> the next batch


class StackDrive(LaneDrive):
    def __init__(self, layout: Layout, store: Store, opts: gate.GateOpts, fail: Fail, land: Land, admit: Admit) -> None:
        super().__init__(layout, store, [], opts, fail, land)
        self.admit = admit
        self.floor: dict[Lane, tuple[Lane, Probe]] = {}  # a stacked batch: the one under it and the probe of it it stands on
        self.held: set[Lane] = set()  # decided before the batch under it landed
        self.fallen: set[Lane] = set()
        self.confirms: dict[Job, CandidatePart] = {}  # a suspect's own prefix gated again, off the stack

    def more(self) -> bool:
        """New batches on top while runners are free once the ones in flight took what they ask for
        (each takes its runners at once), then whether any is left."""
        self._start()
        while len(self.runners.running()) < self.n and self._open():
            self._start()
        return super().more() or bool(self.confirms)

    def _open(self) -> bool:
        top = next((lane for lane in reversed(self.lanes) if not lane.done), None)
        on = self._expected(top) if top is not None else ()
        tip = self._tip(top, on) if top is not None and on else None
        if top is not None and tip is None:
            return False
        busy = {p.ref for lane in self.lanes if not lane.done for p in lane.cand.parts} | {p.ref for p in self.confirms.values()}
        cand = self.admit(tip, busy)
        if cand is None:
            return False
        lane = Lane(cand, Speculation(len(cand.parts), self.n, skips=False))
        self.lanes.append(lane)
        if top is not None and on:
            self.floor[lane] = (top, on)
        return True

    def _expected(self, lane: Lane) -> Probe | None:
        if lane.decided:
            return lane.gated.outcome.land if lane in self.held else None
        return lane.sp.expected()

    def _tip(self, lane: Lane, p: Probe) -> str | None:
        """The commit of probe p as the lane gates it (as it will land), if it is built."""
        built = lane.gated.cands.get(p) or (lane.cand if p == prefix(len(lane.cand.parts)) else None)
        return built.parts[-1].tip if built is not None else None

    def _above(self, lane: Lane) -> Lane | None:
        return next((x for x, (under, _) in self.floor.items() if under is lane), None)

    def _settle(self) -> None:
        super()._settle()
        for lane in list(self.lanes):
            above = self._above(lane)
            if above is not None and self._expected(lane) != self.floor[above][1]:
                self._fall(above)

    def decided(self, lane: Lane) -> None:
        if lane in self.floor:  # the batch under it has not landed yet
            self.held.add(lane)
            return
        super().decided(lane)
        c = lane.gated.outcome.suspect
        if c is not None:  # requeued unblamed: the same candidate gated again names it or clears it
            job = Job(lane, prefix(c + 1), lane.gated.cands[prefix(c + 1)], recheck=True)
            self.confirms[job] = lane.cand.parts[c]
            self.submit(job)
        above = self._above(lane)
        if above is not None:  # it did not land what the batch on top stands on (_land_now moves that one down)
            self._fall(above)

    def _land_now(self, lane: Lane, cand: QueueCandidate | None, ev: gates.GateEvidence) -> None:
        landed = cand is not None and self.land(cand, ev)
        lane.done = True
        above = self._above(lane)
        if above is None or not landed or lane.gated.outcome.land != self.floor[above][1]:
            return  # decided() makes the one on top fall
        del self.floor[above]
        if above in self.held:
            self.held.discard(above)
            self.decided(above)

    def _fall(self, lane: Lane | None) -> None:
        """lane and everything stacked on it: runs stopped, tasks still queued, nothing recorded."""
        while lane is not None:
            for job in self.runners.running():
                if job.lane is lane:
                    self.stop(job)
            lane.decided = lane.done = True
            self.fallen.add(lane)
            self.held.discard(lane)
            above = self._above(lane)
            self.floor.pop(lane, None)
            lane = above

    def wanted(self, job: Job) -> bool:
        return job.lane not in self.fallen and (job in self.confirms or super().wanted(job))

    def rechecked(self, job: Job, ev: gates.GateEvidence) -> None:
        part = self.confirms.pop(job, None)
        if part is None:
            super().rechecked(job, ev)
        elif not ev.passed:  # its own prefix failed twice: the culprit (passed: a flake, it stays queued)
            self.fail(part, ev, [p.task for p in job.cand.parts])


def drive(layout: Layout, store: Store, opts: gate.GateOpts, fail: Fail, land: Land, admit: Admit) -> None:
    """Until no batch is left and none can be opened."""
    StackDrive(layout, store, opts, fail, land, admit).run()
