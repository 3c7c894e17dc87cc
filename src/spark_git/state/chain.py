"""The transition_log's hash chain: each entry carries `hash` = sha256(previous hash + the entry's
canonical JSON), so an entry written by hand (or edited, or removed from the middle) no longer fits.

This is tamper evidence against hand edits, not a signature: whoever runs the code can recompute it.
Entries written before the chain existed are sealed the first time spark-git appends to the log
(docs/decisions.md: "transition_log hash chain")."""

from __future__ import annotations

import hashlib
import json

from spark_git.state.models import Transition


def entry_hash(prev: str, t: Transition) -> str:
    # None values are left out so that a field added later (default None) keeps old hashes valid.
    body = t.model_dump(mode="json", by_alias=True, exclude={"hash"}, exclude_none=True)
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{prev}\n{text}".encode()).hexdigest()


def append(log: list[Transition], t: Transition) -> None:
    """Appends `t` sealed to the chain; unsealed (pre-chain) entries before it are sealed first."""
    prev = ""
    for e in log:
        if not e.hash:
            e.hash = entry_hash(prev, e)
        prev = e.hash
    t.hash = entry_hash(prev, t)
    log.append(t)


def seal(log: list[Transition]) -> None:
    """Seals every entry afresh (a log rebuilt from the audit trail by `lock break`)."""
    prev = ""
    for e in log:
        e.hash = entry_hash(prev, e)
        prev = e.hash


def chained(log: list[Transition]) -> bool:
    return any(e.hash for e in log)


def broken_at(log: list[Transition]) -> int | None:
    """Index of the first entry that does not fit the chain (None: it holds). A log with no hash at all
    is a pre-chain log: the caller decides whether that is acceptable."""
    if not chained(log):
        return None
    prev = ""
    for i, e in enumerate(log):
        if e.hash != entry_hash(prev, e):
            return i
        prev = e.hash
    return None
