"""Reading what an agent hands in with `report --evidence FILE`: each file is a seed-004 Universal
Output JSON or a seed-000 SPARK state JSON (told apart by shape), validated, digested, bound to the head."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from spark_git.core.config import format_validation_error
from spark_git.core.errors import BadInput
from spark_git.state.evidence_models import AgentOutput, Evidence, EvidenceFile, SparkState


def load_evidence(paths: list[str], cwd: Path, head: str | None) -> Evidence | None:
    if not paths:
        return None
    ev = Evidence(task_head=head)
    for raw in paths:
        p = Path(raw).expanduser()
        p = p if p.is_absolute() else cwd / p
        data, digest = _read(p)
        kind = "spark" if "quality" in data else "output"
        if (ev.spark if kind == "spark" else ev.output) is not None:
            raise BadInput(f"--evidence {p}: a second {kind} JSON (give at most one 004 output and one 000 state JSON)")
        try:
            if kind == "spark":
                ev.spark = SparkState.model_validate(data)
            else:
                ev.output = AgentOutput.model_validate(data)
        except ValidationError as e:
            what = "SPARK state JSON (seed 000)" if kind == "spark" else "agent output JSON (seed 004)"
            raise BadInput(format_validation_error(f"{p} (as {what})", e), hint="`spark-git schema evidence` prints the expected shape",
                           details={"errors": e.errors(include_url=False, include_context=False)}) from e
        ev.files.append(EvidenceFile(path=str(p), sha256=digest, kind=kind))
    return ev


def _read(p: Path) -> tuple[dict[str, Any], str]:
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise BadInput(f"--evidence {p}: cannot read it ({e.strerror or e})") from e
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadInput(f"--evidence {p}: not JSON ({e})") from e
    if not isinstance(data, dict):
        raise BadInput(f"--evidence {p}: expected a JSON object, got {type(data).__name__}")
    return data, hashlib.sha256(raw).hexdigest()
