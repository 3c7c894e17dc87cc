"""Gating a batch of more than one task with `[queue] parallel` runners: the planner (speculate.py)
says which candidates ("probes") to gate; each is built on the batch's base (a prefix reuses the
batch's own merge commits, the batch without a culprit is built again by candidate.build), gated
in its own scratch worktree (`scratch-<pid>-<n>`) by a runner thread, and listed in the queue log's
`running` while it runs (recover and doctor see what a killed drain left). This thread alone writes
the queue log: the gate run counts, the retries (`[queue] retries`) and the flaky records."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import count

from spark_git.core import proc
from spark_git.core.layout import Layout
from spark_git.gates import command as gates
from spark_git.ops.shared.queue import candidate, gate, retry
from spark_git.ops.shared.queue.runners import Runners
from spark_git.ops.shared.queue.speculate import Outcome, Probe, Speculation, prefix
from spark_git.state.queuelog import QueueCandidate, QueueEntry
from spark_git.state.store import Store


@dataclass
class Gated:
    outcome: Outcome
    cands: dict[Probe, QueueCandidate] = field(default_factory=dict)  # each probe gated, as built
    evs: dict[Probe, gates.GateEvidence] = field(default_factory=dict)  # its last run (after retries)


@dataclass
class _Job:
    probe: Probe
    cand: QueueCandidate
    failures: int = 0
    first: gates.GateEvidence | None = None  # the first failing run, when retried


class _Drive:
    def __init__(self, layout: Layout, store: Store, cand: QueueCandidate, opts: gate.GateOpts) -> None:
        self.layout, self.store, self.cand = layout, store, cand
        n = layout.config.queue.runners()
        self.sp = Speculation(len(cand.parts), n)
        self.opts = opts if n == 1 else replace(opts, ticker=None)  # one ticker line cannot show two gates
        self.runners: Runners[_Job, gates.GateEvidence] = Runners(n)
        self.gated = Gated(Outcome((), False, (), ()))
        self.names = count(1)

    def run(self) -> Gated:
        try:
            with proc.subreaper(), self.runners:  # one subreaper for all runs: a run ending must not turn it off under another
                while (o := self.sp.outcome()) is None:
                    self._start()
                    for job, ev in self.runners.done():
                        self._finished(job, ev)
                    for p in self.sp.cancel():
                        self._stop(p)
                for p in self.sp.cancel():
                    self._stop(p)
        finally:
            self._persist()  # the runners are all stopped and waited for by now: none left running
        self.gated.outcome = o
        return self.gated

    def _start(self) -> None:
        for p in self.sp.start():
            built = self._build(p)
            if built is None:  # the batch without a culprit does not merge cleanly: no such candidate
                self.sp.finish(p, False)
                continue
            self.gated.cands[p] = built
            self._submit(_Job(p, built))
        if not self.runners.running() and self.sp.outcome() is None:
            raise AssertionError(f"the queue's planner is stuck: {self.sp.results}")

    def _build(self, p: Probe) -> QueueCandidate | None:
        parts = self.cand.parts
        if p == prefix(len(p)):
            return self.cand.model_copy(update={"parts": parts[: len(p)]})
        entries = [QueueEntry(parts[i].ref, "", parts[i].task, parts[i].head) for i in p]
        built = candidate.build(self.layout.git(), self.cand.old_base, entries)
        if len(built.parts) != len(p):
            return None
        return self.cand.model_copy(update={"parts": built.parts})

    def _submit(self, job: _Job) -> None:
        name = gate.scratch_name(next(self.names))
        job.cand = job.cand.model_copy(update={"scratch": name})
        tip, tasks = job.cand.parts[-1].tip, [p.task for p in job.cand.parts]
        opts = replace(self.opts, rerun=self.opts.rerun or job.failures > 0)
        self.runners.submit(job, f"SPARK_WORKTREE={gate.scratch_path(self.layout, name)}",
                            lambda: gate.run(self.layout, self.store, tip, tasks, opts, name, count=False))
        self._persist()

    def _finished(self, job: _Job, ev: gates.GateEvidence) -> None:
        gate.count(self.store, ev)
        tasks, tip = [p.task for p in job.cand.parts], job.cand.parts[-1].tip
        if retry.again(ev, job.failures, self.layout.config.queue.retries):
            job.first, job.failures = job.first or ev, job.failures + 1
            self._submit(job)
            return
        retry.passed_on_retry(self.store, job.first or ev, ev, job.failures, tasks, tip)
        self.gated.evs[job.probe] = ev
        self.sp.finish(job.probe, ev.passed)
        self._persist()

    def _stop(self, p: Probe) -> None:
        for job in self.runners.running():
            if job.probe == p:
                self.runners.stop(job)
        self._persist()

    def _persist(self) -> None:
        log = self.store.read_queue_log()
        log.running = [job.cand for job in self.runners.running()]
        self.store.write_queue_log(log)


def gate_batch(layout: Layout, store: Store, cand: QueueCandidate, opts: gate.GateOpts) -> Gated:
    """The planner's outcome for the batch `cand`, each probe's candidate and gate evidence."""
    return _Drive(layout, store, cand, opts).run()
