"""Bisecting a failed batch: test prefixes of the candidate (never the last remaining entry alone: it
is the culprit by elimination). Prefix 0 (the base) passed when it landed; prefix n just failed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from spark_git.gates import command as gates


@dataclass
class Split:
    passing: int  # the longest prefix known to pass (0: none)
    passing_ev: gates.GateEvidence | None  # its gate evidence
    culprit: int  # index of the first entry whose prefix fails
    culprit_ev: gates.GateEvidence  # the failing run that names it


def bisect(n: int, failed: gates.GateEvidence, gate_prefix: Callable[[int], gates.GateEvidence]) -> Split:
    """`gate_prefix(k)` gates the first k entries; `failed` is the run of all n. Binary search for the
    first failing prefix: about log2(n) runs."""
    lo, hi = 0, n
    lo_ev: gates.GateEvidence | None = None
    hi_ev = failed
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ev = gate_prefix(mid)
        if ev.passed:
            lo, lo_ev = mid, ev
        else:
            hi, hi_ev = mid, ev
    return Split(passing=lo, passing_ev=lo_ev, culprit=hi - 1, culprit_ev=hi_ev)
