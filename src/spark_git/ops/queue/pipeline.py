"""Lanes across batches (`[queue] lanes = true` and `pipeline = true`, more than one runner): instead
of one batch split into lanes at a time, a lane is opened whenever a runner is free, for waiting
entries whose paths overlap no entry in flight (partitioned with them: `lanes.partition` over the
entries in flight and the first 2 × batch_max waiting), each built on the base as it is then, gated
by its own planner, and landed as lanedrive.py lands a lane (chained combined rechecks), without
waiting for the lanes opened before it. The drain (drain.py) says which entries may be opened."""

from __future__ import annotations

from collections.abc import Callable

from spark_git.core.layout import Layout
from spark_git.ops.queue import gate
from spark_git.ops.queue.lanedrive import Fail, Land, LaneDrive
from spark_git.ops.queue.probes import Lane
from spark_git.ops.queue.speculate import Speculation
from spark_git.state.queuelog import QueueCandidate
from spark_git.state.store import Store

Admit = Callable[[set[str], int], list[QueueCandidate]]  # (queue refs in flight, free runners) -> new lanes, built on the base now


class PipeDrive(LaneDrive):
    def __init__(self, layout: Layout, store: Store, opts: gate.GateOpts, fail: Fail, land: Land, admit: Admit) -> None:
        super().__init__(layout, store, [], opts, fail, land)
        self.admit = admit

    def more(self) -> bool:
        """After each settle (and at the start): new lanes for the free runners, then whether any lane is left."""
        busy = {p.ref for lane in self.lanes if not lane.done for p in lane.cand.parts}
        self.lanes += [Lane(c, Speculation(len(c.parts), self.n)) for c in self.admit(busy, self.n - len(self.runners.running()))]
        return super().more()


def drive(layout: Layout, store: Store, opts: gate.GateOpts, fail: Fail, land: Land, admit: Admit) -> None:
    """Until no lane is left and none can be opened."""
    PipeDrive(layout, store, opts, fail, land, admit).run()
