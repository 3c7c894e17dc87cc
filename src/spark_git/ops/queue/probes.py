"""Gating a batch of more than one task with `[queue] parallel` runners: the planner (speculate.py)
says which candidates ("probes") to gate; each is built on the batch's base (a prefix reuses the
batch's own merge commits, the batch without a culprit is built again by candidate.build), gated
in its own scratch worktree (`scratch-<pid>-<n>`) by a runner thread, and listed in the queue log's
`running` while it runs (recover and doctor see what a killed drain left). This thread alone writes
the queue log: the gate run counts, the retries (`[queue] retries`) and the flaky records.
Lanes (lanedrive.py) are several batches driven at once on the same runners."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import count

from spark_git.core import proc
from spark_git.core.layout import Layout
from spark_git.gates import command as gates
from spark_git.ops.queue import candidate, gate, retry
from spark_git.ops.queue.runners import Runners
from spark_git.ops.queue.speculate import Outcome, Probe, Speculation, prefix
from spark_git.state.queuelog import QueueCandidate
from spark_git.state.queuerefs import QueueEntry
from spark_git.state.store import Store


@dataclass
class Gated:
    outcome: Outcome
    cands: dict[Probe, QueueCandidate] = field(default_factory=dict)  # each probe gated, as built
    evs: dict[Probe, gates.GateEvidence] = field(default_factory=dict)  # its last run (after retries)


@dataclass(eq=False)
class Lane:
    cand: QueueCandidate  # its batch, built on the base
    sp: Speculation
    gated: Gated = field(default_factory=lambda: Gated(Outcome((), False, (), ())))
    decided: bool = False  # the planner's outcome is in
    done: bool = False  # nothing more to run for it


@dataclass(eq=False)
class Job:
    lane: Lane
    probe: Probe
    cand: QueueCandidate
    recheck: bool = False  # the combined tree of a lane whose base moved (lanedrive.py)
    failures: int = 0
    first: gates.GateEvidence | None = None  # the first failing run, when retried


class Drive:
    def __init__(self, layout: Layout, store: Store, cands: list[QueueCandidate], opts: gate.GateOpts) -> None:
        self.layout, self.store = layout, store
        self.n = layout.config.queue.runners()
        self.lanes = [Lane(c, Speculation(len(c.parts), self.n)) for c in cands]
        self.opts = opts if self.n == 1 else replace(opts, ticker=None)  # one ticker line cannot show two gates
        self.runners: Runners[Job, gates.GateEvidence] = Runners(self.n)
        self.names = count(1)

    def run(self) -> None:
        try:
            with proc.subreaper(), self.runners:  # one subreaper for all runs: a run ending must not turn it off under another
                while self.more():
                    self._start()
                    for job, ev in self.runners.done():
                        self._finished(job, ev)
                    self._settle()
        finally:
            self._persist()  # the runners are all stopped and waited for by now: none left running

    def more(self) -> bool:
        """A lane is still to be decided or landed (pipeline.py opens new ones here)."""
        return not all(lane.done for lane in self.lanes)

    def decided(self, lane: Lane) -> None:
        """The lane's outcome is in (lanedrive lands it here)."""
        lane.done = True

    def rechecked(self, job: Job, ev: gates.GateEvidence) -> None:
        raise AssertionError("no recheck without lanes")

    def wanted(self, job: Job) -> bool:
        """False for a run whose verdict nobody asks for any more (it ended just as it was stopped)."""
        return True

    def _start(self) -> None:
        """Fills the free runners, one probe per lane in turn (each lane's batch first; a lane with a
        failure to find before one whose batch may still pass)."""
        free = self.n - len(self.runners.running())
        order = sorted((x for x in self.lanes if not x.decided), key=lambda x: all(ev.passed for ev in x.gated.evs.values()))
        while free > 0:
            started = 0
            for lane in order:
                for p in lane.sp.start(limit=1) if free > started else []:
                    started += self._probe(lane, p)
            free -= started
            if not started:
                break
        if not self.runners.running() and not all(lane.done or lane.sp.outcome() is not None for lane in self.lanes):
            raise AssertionError(f"the queue's planner is stuck: {[lane.sp.results for lane in self.lanes]}")

    def _probe(self, lane: Lane, p: Probe) -> int:
        built = self._build(lane.cand, p)
        if built is None:  # the batch without a culprit does not merge cleanly: no such candidate
            lane.sp.finish(p, False)
            return 0
        lane.gated.cands[p] = built
        self.submit(Job(lane, p, built))
        return 1

    def _build(self, cand: QueueCandidate, p: Probe) -> QueueCandidate | None:
        parts = cand.parts
        if p == prefix(len(p)):
            return cand.model_copy(update={"parts": parts[: len(p)]})
        return rebuild(self.layout, cand.model_copy(update={"parts": [parts[i] for i in p]}), cand.old_base)

    def submit(self, job: Job) -> None:
        name = gate.scratch_name(next(self.names))
        job.cand = job.cand.model_copy(update={"scratch": name})
        tip, tasks = job.cand.parts[-1].tip, [p.task for p in job.cand.parts]
        opts = replace(self.opts, rerun=self.opts.rerun or job.failures > 0)
        self.runners.submit(job, f"SPARK_WORKTREE={gate.scratch_path(self.layout, name)}",
                            lambda: gate.run(self.layout, self.store, tip, tasks, opts, name, count=False))
        self._persist()

    def _finished(self, job: Job, ev: gates.GateEvidence) -> None:
        gate.count(self.store, ev)
        if not self.wanted(job):
            return
        tasks, tip = [p.task for p in job.cand.parts], job.cand.parts[-1].tip
        confirming = job.probe in job.lane.sp.fails and not job.recheck  # gated again to confirm a failure: no retries (speculate.CONFIRM)
        if retry.again(ev, job.failures, 0 if confirming else self.layout.config.queue.retries):
            job.first, job.failures = job.first or ev, job.failures + 1
            self.submit(job)
            return
        if confirming:  # the failure it was gated again for: a pass now makes that one a flake
            retry.passed_on_retry(self.store, job.lane.gated.evs[job.probe], ev, 1, tasks, tip)
        else:
            retry.passed_on_retry(self.store, job.first or ev, ev, job.failures, tasks, tip)
        self._persist()
        if job.recheck:
            self.rechecked(job, ev)
            return
        job.lane.gated.evs[job.probe] = ev
        job.lane.sp.finish(job.probe, ev.passed)

    def _settle(self) -> None:
        """Stops the runs no longer needed, then hands over each lane whose outcome is in."""
        for lane in self.lanes:
            for p in lane.sp.cancel():
                for job in self.runners.running():
                    if job.lane is lane and job.probe == p and not job.recheck:
                        self.stop(job)
            o = lane.sp.outcome()
            if o is not None and not lane.decided:
                lane.decided, lane.gated.outcome = True, o
                self._persist()
                self.decided(lane)

    def stop(self, job: Job) -> None:
        """Kills a run the planner no longer needs. It ran, if not to its end: counted as a gate run, and
        as stopped (`queue.json` had counted one run fewer than the gate saw)."""
        if self.runners.stop(job):
            log = self.store.read_queue_log()
            log.gate_runs += 1
            log.counts.gate_runs += 1
            log.stopped_runs += 1
            self.store.write_queue_log(log)

    def _persist(self) -> None:
        log = self.store.read_queue_log()
        log.running = [job.cand for job in self.runners.running()]
        self.store.write_queue_log(log)


def rebuild(layout: Layout, cand: QueueCandidate, base: str) -> QueueCandidate | None:
    """`cand`'s tasks merged again, in order, on `base`; None unless every one merges cleanly and unchanged."""
    entries = [QueueEntry(p.ref, "", p.task, p.head) for p in cand.parts]
    built = candidate.build(layout.git(), base, entries)
    if len(built.parts) != len(entries):
        return None
    return cand.model_copy(update={"parts": built.parts, "old_base": base})


def gate_batch(layout: Layout, store: Store, cand: QueueCandidate, opts: gate.GateOpts) -> Gated:
    """The planner's outcome for the batch `cand`, each probe's candidate and gate evidence."""
    d = Drive(layout, store, [cand], opts)
    d.run()
    return d.lanes[0].gated
