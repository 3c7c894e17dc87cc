"""The transition_log's hash chain: each entry carries `hash` = sha256(previous hash + the entry's
canonical JSON), so an entry written by hand (or edited, or removed from the middle) no longer fits,
and `mac` = HMAC of that hash with the user's records key (state/recordmac.py), so a log rewritten
with a recomputed chain does not verify either: whoever runs the code can recompute a hash, only the
holder of the key a MAC.

Entries written before the chain existed are hashed the first time spark-git appends to the log
(docs/decisions.md: "transition_log hash chain"), but never MAC'd: only spark-git's own appends are."""

from __future__ import annotations

import hashlib
import json

from spark_git.state import recordmac
from spark_git.state.models import Transition


def entry_hash(prev: str, t: Transition) -> str:
    # None values are left out so that a field added later (default None) keeps old hashes valid.
    body = t.model_dump(mode="json", by_alias=True, exclude={"hash", "mac"}, exclude_none=True)
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{prev}\n{text}".encode()).hexdigest()


def append(log: list[Transition], t: Transition, key: bytes | None, task: str) -> None:
    """Appends `t` sealed to the chain and MAC'd with `key` (None: no MAC can be made here, and the
    entry will not verify where the key is readable); unsealed (pre-chain) entries before it are hashed first."""
    prev = ""
    for e in log:
        if not e.hash:
            e.hash = entry_hash(prev, e)
        prev = e.hash
    t.hash = entry_hash(prev, t)
    t.mac = recordmac.transition_mac(key, task, t.hash) if key else None
    log.append(t)


def seal(log: list[Transition], key: bytes | None, task: str) -> None:
    """Seals and MACs every entry afresh (a log rebuilt from the audit trail by a human's `lock break`)."""
    prev = ""
    for e in log:
        e.hash = entry_hash(prev, e)
        e.mac = recordmac.transition_mac(key, task, e.hash) if key else None
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


def unauthentic_at(log: list[Transition], key: bytes | None, task: str) -> int | None:
    """Index of the first entry whose MAC does not verify with `key` (None: every one does, or there
    is no key here to check with: an agent's box)."""
    if key is None:
        return None
    for i, e in enumerate(log):
        if not recordmac.verifies(e.mac, recordmac.transition_mac(key, task, e.hash or "")):
            return i
    return None
