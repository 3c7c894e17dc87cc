"""Gate kinds by name (like pre-commit's languages): adding a kind is one module plus one line here.
A merge runs every kind's `for_merge` checks, in this order, before it changes anything. The command
gates (gates.build before a merge, gates.final before landing) are configured commands, not kinds:
they run through gates.verdicts.run_configured."""

from __future__ import annotations

from spark_git.core.git import Git
from spark_git.gates.attribution import AttributionGate
from spark_git.gates.base import Gate, MergeSubject
from spark_git.gates.clean import CleanGate

GATES: dict[str, type[Gate]] = {
    "clean": CleanGate,
    "attribution": AttributionGate,
}


def merge_checks(subject: MergeSubject) -> list[tuple[Gate, Git]]:
    return [check for kind in GATES.values() for check in kind.for_merge(subject)]
