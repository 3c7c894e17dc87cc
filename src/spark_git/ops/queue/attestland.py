"""The attestation of each commit a candidate put on the base (issue 34): what it landed, which gate
vouched for the landed tree, the human's signed approval, signed by this machine's landing key and
kept as a note on `refs/notes/spark-attest`. Idempotent: `recover` re-runs it after a kill."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from spark_git.core import gitattest, statekeys
from spark_git.core.git import Git, branch_ref
from spark_git.core.layout import Layout
from spark_git.ops.shared import attest, signed
from spark_git.state.locks import NOTES, mutex
from spark_git.state.queuelog import CandidatePart, QueueCandidate
from spark_git.state.store import Store


def _log_digest(path: str | None) -> str | None:
    try:
        return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None
    except OSError:
        return None


def _gates(cand: QueueCandidate) -> list[dict[str, Any]]:
    g = cand.gate or {}
    if not g.get("ran"):
        return []
    return [{"kind": g.get("gate"), "command": g.get("command"), "fingerprint": g.get("fingerprint"), "tree": g.get("tree"),
             "commit": g.get("commit"), "passed": bool(g.get("passed")), "exit_code": g.get("exit_code"),
             "reused_from": g.get("reused_from"), "log_digest": _log_digest(g.get("log_path"))}]


def _signer(record: str) -> str | None:
    try:
        rec = json.loads(record)
    except ValueError:
        return None
    return rec.get("signer") if isinstance(rec, dict) else None


def _agents(git: Git, before: str, head: str) -> dict[str, list[str]]:
    res: dict[str, list[str]] = {}
    for sha, who in git.log_fields(f"{before}..{head}", ["%H", "%an <%ae>"], "--reverse"):
        res.setdefault(who, []).append(sha)
    return res


def predicate(layout: Layout, store: Store, cand: QueueCandidate, p: CandidatePart, lander: str, before: str) -> dict[str, Any]:
    git = layout.git()
    tf = store.read_task(p.task)
    cp = tf.checkpoint if tf is not None else None
    approval = {"signer": _signer(cp.signed), "record": cp.signed, "signature": cp.signature} if cp and cp.signed else None
    return {"task": p.task, "base": branch_ref(cand.base_branch), "base_before": before, "approved_head": p.head,
            "patch_id": git.patch_id(before, p.head), "agents": _agents(git, before, p.head), "gates": _gates(cand),
            "approval": approval, "batch": {"tasks": [x.task for x in cand.parts], "old_base": cand.old_base, "tip": cand.landing},
            "lander": lander}


def record(layout: Layout, store: Store, cand: QueueCandidate) -> None:
    """Signs and notes the attestation of every part of a landed candidate that has none yet. Not when
    the state directory (where the landing key lives) lies inside the repository, where an agent could
    read the key: the landing is left unattested (`verify` and `doctor` then name it)."""
    if statekeys.inside([layout.main_worktree, layout.repo.common_dir, layout.tasks_root]):
        return
    git, key = layout.git(), attest.lander()
    who = signed.principal(git)
    with mutex(layout, NOTES):
        for p in cand.parts:
            if git.notes_show(gitattest.ATTEST_REF, p.tip) is not None:
                continue  # attested already (a re-run after a kill)
            tree, before = git.out("show", "-s", "--format=%T %P", p.tip).split()[:2]  # before: the tip's first parent
            stmt = attest.statement(p.tip, tree, predicate(layout, store, cand, p, who, before))
            gitattest.note_add(git, p.tip, attest.envelope(key, stmt))
