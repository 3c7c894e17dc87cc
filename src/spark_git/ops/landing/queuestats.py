"""`spark-git queue --stats`: the queue's figures from its own log (state/queuelog.py). Throughput and
wait times are over the recent outcomes the log keeps (OUTCOMES_KEPT); the ratios over its counters."""

from __future__ import annotations

import math

from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.state.backends import open_store
from spark_git.state.models import parse_time
from spark_git.state.queuelog import QueueLog, QueueOutcome
from spark_git.state.queuerefs import ref_seq


class QueueStats(Model):
    outcomes: int  # recent outcomes the figures below are taken from
    landed: int  # of them, landed
    landed_per_hour: float | None  # landed / hours from the first of them queued to the last landed (None: nothing landed)
    wait_p50_s: float | None  # queued → outcome, over the landed ones (nearest rank)
    wait_p95_s: float | None
    counted_since: str  # the counters below start here
    gate_runs: int  # final-gate runs of the queue (retries included)
    landed_total: int
    gate_runs_per_landed: float | None  # gate_runs / landed_total
    flaky: int  # gates that failed, then passed on a retry
    flaky_rate: float | None  # flaky / gate_runs


def stats(layout: Layout) -> QueueStats:
    return figures(open_store(layout).read_queue_log())


def figures(log: QueueLog) -> QueueStats:
    landed = [o for o in log.outcomes if o.result == "landed"]
    waits = sorted(w for w in (_wait_s(o) for o in landed) if w is not None)
    c = log.counts
    return QueueStats(
        outcomes=len(log.outcomes), landed=len(landed), landed_per_hour=_per_hour(landed), wait_p50_s=nearest_rank(waits, 0.50),
        wait_p95_s=nearest_rank(waits, 0.95), counted_since=c.since, gate_runs=c.gate_runs, landed_total=c.landed,
        gate_runs_per_landed=round(c.gate_runs / c.landed, 3) if c.landed else None, flaky=c.flaky,
        flaky_rate=round(c.flaky / c.gate_runs, 4) if c.gate_runs else None,
    )


def _queued_s(o: QueueOutcome) -> float | None:
    seq = ref_seq(o.ref)
    return int(seq) / 1e9 if seq.isdigit() else None  # the seq is the enqueue time in ns


def _wait_s(o: QueueOutcome) -> float | None:
    q = _queued_s(o)
    return None if q is None else round(max(0.0, parse_time(o.at).timestamp() - q), 3)


def _per_hour(landed: list[QueueOutcome]) -> float | None:
    starts = [q for q in (_queued_s(o) for o in landed) if q is not None]
    if not starts:
        return None
    span = max(parse_time(o.at).timestamp() for o in landed) - min(starts)
    return round(len(landed) * 3600 / max(span, 1.0), 2)  # a span under a second counts as one


def nearest_rank(sorted_vals: list[float], q: float) -> float | None:
    """The q-quantile of sorted values by nearest rank (None: no values); the queue's figures and the model's alike."""
    if not sorted_vals:
        return None
    return sorted_vals[max(0, math.ceil(q * len(sorted_vals)) - 1)]
