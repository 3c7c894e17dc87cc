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
import secrets
from pathlib import Path
from typing import Any

from spark_git.core.sshsig import state_dir as state_dir  # the user's state directory, spelled once (the approval key lives there too)

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
    """The repository's key, created on first use (racers agree: the first link wins). None when the
    state dir lies inside the repository (`repo_paths`: its worktrees, git dir, tasks root), where an
    agent could read it: then no verdict verifies, and every gate runs."""
    path = key_path(common_dir)
    real = Path(os.path.realpath(path.parent.parent))
    if any(real.is_relative_to(os.path.realpath(p)) for p in repo_paths):
        return None
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        pass
    except OSError:  # unreadable here (an agent's sandbox denies the state directory): no verdict verifies
        return None
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(f".{KEY_NAME}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (secrets.token_hex(32) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # never replaces a key a racer created: verdicts it signed stay valid
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return bytes.fromhex(path.read_text().strip())


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
