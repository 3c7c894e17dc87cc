"""Lanes in the real drain (`[queue] lanes = true`, more than one runner): the batch's tasks split by
lanes.partition (changed paths that overlap, `[queue] shared`), at most one lane group per runner,
each gated as its own batch by the planner on the same runners and landed as soon as its outcome
is in, without waiting for the others. A lane whose candidate passed on a base another lane has
since moved is merged again on the new base (disjoint paths: cleanly) and, with `[queue] recheck =
"combined"`, gated again on that combined tree before its compare-and-swap; with "none" it lands
on its lane's verdict (the combined tree itself was never gated)."""

from __future__ import annotations

from collections.abc import Callable

from spark_git.core.layout import Layout
from spark_git.gates import command as gates
from spark_git.ops.shared.queue import gate, lanes
from spark_git.ops.shared.queue.probes import Drive, Job, Lane, rebuild
from spark_git.ops.shared.queue.speculate import prefix
from spark_git.state.queuelog import CandidatePart, QueueCandidate
from spark_git.state.store import Store

Fail = Callable[[CandidatePart, gates.GateEvidence, list[str]], None]  # a culprit back to IMPLEMENTATION
Land = Callable[[QueueCandidate, gates.GateEvidence], bool]  # compare-and-swap; False: nothing landed, its tasks stay queued


def groups(layout: Layout, cand: QueueCandidate) -> list[list[int]]:
    """The batch's lanes (part indexes, queue order), merged into at most one group per runner (lanes.grouped)."""
    git, cfg = layout.git(), layout.config.queue
    found = lanes.partition([git.changed_paths(cand.old_base, p.head) for p in cand.parts], cfg.shared)
    return lanes.grouped(found, cfg.runners())


class LaneDrive(Drive):
    def __init__(self, layout: Layout, store: Store, cands: list[QueueCandidate], opts: gate.GateOpts, fail: Fail, land: Land) -> None:
        super().__init__(layout, store, cands, opts)
        self.fail, self.land = fail, land

    def decided(self, lane: Lane) -> None:
        o, parts = lane.gated.outcome, lane.cand.parts
        tasks = [p.task for p in parts]
        for c in o.culprits:
            self.fail(parts[c], lane.gated.evs[prefix(c + 1)], tasks)
        if not o.land:
            lane.done = True
            return
        self._land(lane, lane.gated.cands[o.land], lane.gated.evs[o.land])

    def _land(self, lane: Lane, cand: QueueCandidate, ev: gates.GateEvidence) -> None:
        """Lands `cand` if the base is where it was built; else merges it again on the new base and
        gates that (recheck "combined") or lands it on `ev` ("none")."""
        head = self.layout.git().branch_head(cand.base_branch)
        if head is not None and head != cand.old_base:
            moved = rebuild(self.layout, cand, head)
            if moved is None:  # cannot happen for disjoint paths; if it does, they stay queued for the next batch
                lane.done = True
                return
            if self.layout.config.queue.recheck == "combined":
                self.submit(Job(lane, (), moved, recheck=True))
                return
            cand = moved
        self.land(cand, ev)
        lane.done = True

    def rechecked(self, job: Job, ev: gates.GateEvidence) -> None:
        if ev.passed:
            self._land(job.lane, job.cand.model_copy(update={"scratch": None}), ev)
        else:  # the lanes interact after all (or a flake beyond the retries): nobody is blamed, they stay queued
            job.lane.done = True


def gate_lanes(layout: Layout, store: Store, cands: list[QueueCandidate], opts: gate.GateOpts, fail: Fail, land: Land) -> None:
    LaneDrive(layout, store, cands, opts, fail, land).run()
