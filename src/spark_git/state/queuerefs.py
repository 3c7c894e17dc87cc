"""The merge queue's refs: one `refs/spark/queue/<seq>-<task>` per queued task, ordered by name (the
record beside them, candidate and outcomes, is state/queuelog.py)."""

from __future__ import annotations

import time
from typing import Literal, NamedTuple

QUEUE_PREFIX = "refs/spark/queue/"
SEQ_DIGITS = 20  # a normal entry's seq: its enqueue time in ns, zero-padded; a high-priority one has one more leading 0
Priority = Literal["normal", "high"]


def new_seq(priority: Priority = "normal") -> str:
    """Refs sort by name: a high-priority seq ("00…", 21 digits) sorts before every normal one ("01…"
    until 2286), and int(seq) is the enqueue time in both (one fact, no second field)."""
    seq = f"{time.time_ns():0{SEQ_DIGITS}d}"
    return "0" + seq if priority == "high" else seq


def seq_priority(seq: str) -> Priority:
    return "high" if len(seq) > SEQ_DIGITS else "normal"


def ref_seq(ref: str) -> str:
    return ref[len(QUEUE_PREFIX):].partition("-")[0] if ref.startswith(QUEUE_PREFIX) else ""


class QueueEntry(NamedTuple):
    ref: str  # refs/spark/queue/<seq>-<task>
    seq: str  # orders the queue (zero-padded nanoseconds)
    task: str
    sha: str  # the task head that was queued
