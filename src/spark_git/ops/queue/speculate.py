"""The queue's decisions for one batch, pure (no I/O, no clock, no git): which candidates ("probes") to
gate, up to `parallel` at once, and what lands once the verdicts are in. A probe is a tuple of batch
indexes in queue order whose merges are chained on the base; prefix(k) = (0..k-1). A gate is taken
as monotone in prefixes: prefix(k) fails once an entry before k breaks it.

parallel=1 is today's batch-and-bisect (bisect.py): the batch, then binary search of the prefixes;
the longest passing prefix lands, the first entry of the first failing prefix is the culprit, the
ones behind it stay queued. parallel=N gates the batch with speculative prefixes at once (each free
runner takes the midpoint of the widest gap still unknown: a k-ary search), and, once the culprit is
named (or while runners are idle and few suspects are left), the batch without it ("skip" probes):
when that passes it lands whole. A second culprit (the skip probe fails too): the first is named,
the passing prefix before it lands and the rest stays queued for the next batch, which finds it.
A culprit is named on two failing runs that hold it, never on one: when the only failure holding it
is one run (it is the batch's last entry, or alone), that probe is gated once more first, so a gate
that flaked on every retry of one run sends nobody back (`CONFIRM`)."""

from __future__ import annotations

from itertools import pairwise
from typing import NamedTuple

Probe = tuple[int, ...]
CONFIRM = 2  # failing runs holding an entry before it is named a culprit


class Outcome(NamedTuple):
    land: Probe  # exactly a probe that passed (empty: nothing lands)
    land_probe_passed: bool  # False only when nothing lands
    culprits: tuple[int, ...]  # back to IMPLEMENTATION
    requeue: tuple[int, ...]  # stay queued for the next batch
    suspect: int | None = None  # requeued unblamed, its own prefix failed once: that tree is gated again (stack.py)


def prefix(k: int) -> Probe:
    return tuple(range(k))


def skip(n: int, c: int) -> Probe:
    """The batch without entry c: the candidates behind it on top of the ones ahead."""
    return tuple(i for i in range(n) if i != c)


class Speculation:
    def __init__(self, n: int, parallel: int, skips: bool = True) -> None:
        """`skips=False` (stacked batches): no batch without a suspect is gated; once the culprit is
        named the prefix before it lands and the rest stays queued at once. A culprit is then named
        only on failing runs of its own prefix; backed by longer prefixes alone (which a second
        culprit may fail), it is requeued unblamed as the outcome's `suspect`."""
        if n < 1 or parallel < 1:
            raise ValueError(f"a batch of {n} with {parallel} runners")
        self.n, self.parallel, self.skips, self.stacked = n, parallel, skips and parallel > 1, not skips
        self.results: dict[Probe, bool] = {prefix(0): True}  # the base passed when it landed
        self.running: list[Probe] = []
        self.dropped: set[Probe] = set()  # cancelled: not started again unless useful again (a failure that was a flake)
        self.fails: dict[Probe, int] = {}  # failing runs of each probe (a probe gated again to confirm counts twice)

    def start(self, limit: int | None = None) -> list[Probe]:
        """`limit`: at most this many now (runners shared with other lanes)."""
        if self.outcome() is not None:
            return []
        new: list[Probe] = []
        while len(self.running) < self.parallel and (limit is None or len(new) < limit):
            p = self._next()
            if p is None:
                break
            self.running.append(p)
            new.append(p)
        return new

    def finish(self, probe: Probe, passed: bool) -> None:
        if probe not in self.running:
            raise ValueError(f"probe {probe} is not running")
        self.running.remove(probe)
        self.results[probe] = passed  # gated again to confirm: the fresh verdict stands (a pass: the failure was a flake)
        if not passed:
            self.fails[probe] = self.fails.get(probe, 0) + 1

    def cancel(self) -> list[Probe]:
        """Running probes whose verdict can no longer change the outcome (all of them once decided)."""
        done = self.outcome() is not None
        useless = [p for p in self.running if done or not self._useful(p)]
        for p in useless:
            self.running.remove(p)
            self.dropped.add(p)
        return useless

    def outcome(self) -> Outcome | None:
        n, lo, hi = self.n, self._lo(), self._hi()
        if lo == n:
            return Outcome(prefix(n), True, (), ())
        if hi is not None and hi <= lo:  # a gate that is not monotone (flaky): land what passed, blame nobody
            return Outcome(prefix(lo), True, (), tuple(range(lo, n)))
        if hi is None or hi != lo + 1:
            return None
        c, rest = lo, tuple(range(lo + 1, n))
        if self._evidence(c) < CONFIRM:
            return None  # `_confirm` gates the failing probe again
        if self.stacked and self.fails.get(prefix(c + 1), 0) < CONFIRM:
            return Outcome(prefix(c), c > 0, (), (c, *rest), suspect=c)
        if self.skips and rest:
            s = self.results.get(skip(n, c))
            if s is None:
                return None
            if s:
                return Outcome(skip(n, c), True, (c,), ())
        return Outcome(prefix(lo), lo > 0, (c,), rest)

    def expected(self) -> Probe | None:
        """What it will land unless a run still to come fails: the batch while no run failed, the batch
        without the named culprit once only that is left to gate (and it runs), the outcome once
        decided; None while that is not known (stack.py builds the next batch on it)."""
        o = self.outcome()
        if o is not None:
            return o.land
        if all(self.results.values()):
            return prefix(self.n)
        lo, hi, p = self._lo(), self._hi(), skip(self.n, self._lo())
        if not self.skips or hi != lo + 1 or hi == self.n or self._evidence(lo) < CONFIRM:
            return None
        return p if p in self.running or self.results.get(p) else None

    def _lo(self) -> int:
        """The longest prefix known to pass (0: the base)."""
        return max(len(p) for p, ok in self.results.items() if ok and p == prefix(len(p)))

    def _hi(self) -> int | None:
        """The shortest prefix known to fail."""
        return min((len(p) for p, ok in self.results.items() if not ok and p == prefix(len(p))), default=None)

    def _known(self, p: Probe) -> bool:
        """Run, running, or cancelled while nothing could make it useful again: a confirming run that
        passes turns a failure into a flake, and the longer prefixes cancelled for it are needed again."""
        return p in self.results or p in self.running or (p in self.dropped and not self._useful(p))

    def _next(self) -> Probe | None:
        """The most useful probe not yet run: the batch, then a split of the suspects, then a skip probe."""
        if not self._known(prefix(self.n)):
            return prefix(self.n)
        split = self._split()
        if split is not None:
            return split
        return self._skip() or self._confirm()

    def _confirming(self) -> Probe | None:
        """The shortest failing prefix, while its last suspect has fewer than CONFIRM failing runs
        (a spare runner takes it early: the culprit may turn out to be that last suspect)."""
        hi = self._hi()
        return prefix(hi) if hi is not None and self._evidence(hi - 1) < CONFIRM else None

    def _evidence(self, c: int) -> int:
        """Failing runs of the probes that hold entry c and stand failed."""
        return sum(k for p, k in self.fails.items() if c in p and not self.results[p])

    def _confirm(self) -> Probe | None:
        """prefix(c + 1) once more, when it would be the one failing run that names c (not running already)."""
        p = self._confirming()
        return None if p is None or p in self.running else p

    def _split(self) -> Probe | None:
        """The midpoint of the widest gap between prefixes known or in flight in (lo, hi): with one
        runner, bisect.py's mid = (lo + hi) // 2."""
        lo, hi = self._lo(), self._hi()
        top = self.n if hi is None else hi
        points = sorted({lo, top} | {len(p) for p in self.running if p == prefix(len(p)) and lo < len(p) < top})
        gaps = [(b - a, a, b) for a, b in pairwise(points) if b - a > 1]
        if not gaps:
            return None
        _, a, b = max(gaps, key=lambda g: (g[0], -g[1]))
        return prefix((a + b) // 2)

    def _skip(self) -> Probe | None:
        """With runners to spare (parallel > 1), the batch without a suspect: the named culprit first,
        else each suspect in turn, so the probe that lands is often running before it is named."""
        if not self.skips:
            return None
        for c in self._suspects():
            p = skip(self.n, c)
            if c < self.n - 1 and not self._known(p):
                return p
        return None

    def _suspects(self) -> list[int]:
        """Entries that may be the first culprit: c with prefix(c) not known to fail and prefix(c+1) not known to pass."""
        lo, hi = self._lo(), self._hi()
        return list(range(lo, self.n if hi is None else hi))

    def _useful(self, p: Probe) -> bool:
        lo, hi = self._lo(), self._hi()
        if p == self._confirming():
            return True
        if p == prefix(len(p)):
            return lo < len(p) < (self.n + 1 if hi is None else hi)
        missing = [i for i in range(self.n) if i not in p]
        return len(missing) == 1 and missing[0] in self._suspects()
