"""Gate kinds by name (like pre-commit's languages): adding a kind is one module plus one line here."""

from __future__ import annotations

from spark_git.gates.attribution import AttributionGate
from spark_git.gates.base import Gate
from spark_git.gates.clean import CleanGate
from spark_git.gates.command import CommandGate

GATES: dict[str, type[Gate]] = {
    "clean": CleanGate,
    "attribution": AttributionGate,
    "command": CommandGate,
}
