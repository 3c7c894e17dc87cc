"""The key that authenticates gate verdicts: a per-repository secret in the user's state directory
(`$XDG_STATE_HOME/spark-git/<repo-id>/verdict.key`, default `~/.local/state/spark-git/`), created
0600 on first use, never in the repository or a worktree, so a line copied or written into
refs/notes/spark-verdicts by an agent does not verify. An agent that can read this file can forge a
verdict: keeping it out of agents' reach is the OS boundary's job (docs/merging.md)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

from spark_git.core import statekeys
from spark_git.core.paths import state_dir as state_dir  # the user's state directory, spelled once (the approval key lives there too)

KEY_NAME = "verdict.key"
MAC_FIELD = "mac"  # the verdict's own field holding its HMAC (hex)


def repo_id(common_dir: Path) -> str:
    """`<name>-<digest of the common git dir's real path>`: one key per repository on this machine."""
    real = os.path.realpath(common_dir)
    name = Path(real).parent.name if Path(real).name == ".git" else Path(real).name
    return f"{name or 'repo'}-{hashlib.sha256(real.encode()).hexdigest()[:16]}"


def key_path(common_dir: Path) -> Path:
    return state_dir() / repo_id(common_dir) / KEY_NAME


def load_key(common_dir: Path, repo_paths: list[Path]) -> bytes | None:
    """The repository's key, created on first use. None when the state dir lies inside the repository
    (`repo_paths`: its worktrees, git dir, tasks root), where an agent could read it, or cannot be read
    here: then no verdict verifies, and every gate runs."""
    return statekeys.load(key_path(common_dir), repo_paths)


def _message(tree: str, verdict: dict[str, Any]) -> bytes:
    body = {k: v for k, v in verdict.items() if k != MAC_FIELD}
    return json.dumps({"tree": tree, "verdict": body}, sort_keys=True, separators=(",", ":")).encode()


def sign(key: bytes | None, tree: str, verdict: dict[str, Any]) -> dict[str, Any]:
    """`verdict` with its MAC over the tree and every other field (gate, command, fingerprint, result...)."""
    if key is None:
        return verdict
    return {**verdict, MAC_FIELD: hmac.new(key, _message(tree, verdict), hashlib.sha256).hexdigest()}


def verifies(key: bytes | None, tree: str, verdict: dict[str, Any]) -> bool:
    mac = verdict.get(MAC_FIELD)
    if key is None or not isinstance(mac, str):
        return False
    return hmac.compare_digest(mac, hmac.new(key, _message(tree, verdict), hashlib.sha256).hexdigest())
