"""Landing attestations (issue 34): an in-toto Statement v1 in a DSSE envelope on each landing commit
(`refs/notes/spark-attest`), signed with the coordinator's landing key: ed25519, made in the user's
state directory on first landing, not the approval key. Its public half must be listed in the
committed `.spark-landers` (allowed-signers format, beside the approvers' file) for `verify` to trust it.

DSSE's PAE and the Statement are written here to their specs (a few lines); `cryptography` (imported
lazily) does the ed25519 arithmetic."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_git.core.paths import state_dir

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
PREDICATE_TYPE = "https://github.com/spark-git/spark-git/landing/v1"
LANDERS_FILE = ".spark-landers"
LANDER_NAMESPACE = "spark-git-landing"
KEY_FILE = "landing_ed25519.pem"


@dataclass(frozen=True)
class Lander:
    key: Ed25519PrivateKey
    public: str  # "ssh-ed25519 AAAA…", the line `.spark-landers` lists
    created: bool


def pae(payload_type: str, body: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding: what the signature covers."""
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)


def keyid(public: str) -> str:
    """ssh-keygen's fingerprint of an "ssh-ed25519 AAAA…" key: SHA256:<unpadded base64>."""
    blob = base64.b64decode(public.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _public_line(key: Ed25519PrivateKey) -> str:
    from cryptography.hazmat.primitives import serialization

    return key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()


def lander(directory: Path | None = None) -> Lander:
    """This machine's landing key, created (create-exclusive: a concurrent first landing uses the winner's) if missing."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    d = directory or state_dir()
    path, created = d / KEY_FILE, False
    if not path.is_file():
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        pem = Ed25519PrivateKey.generate().private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(pem)
            created = True
        except FileExistsError:
            pass
    key = serialization.load_pem_private_key(path.read_bytes(), None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path} is not an ed25519 key")
    return Lander(key, _public_line(key), created)


def landers_line(principal: str, public: str) -> str:
    return f'{principal} namespaces="{LANDER_NAMESPACE}" {public}'


def statement(commit: str, tree: str, predicate: dict[str, Any]) -> dict[str, Any]:
    return {"_type": STATEMENT_TYPE, "subject": [{"name": "landing", "digest": {"gitCommit": commit, "gitTree": tree}}],
            "predicateType": PREDICATE_TYPE, "predicate": predicate}


def envelope(who: Lander, stmt: dict[str, Any]) -> str:
    """The DSSE envelope (one JSON line) of `stmt`, signed by `who`."""
    body = json.dumps(stmt, sort_keys=True, separators=(",", ":")).encode()
    sig = who.key.sign(pae(PAYLOAD_TYPE, body))
    return json.dumps({"payload": base64.b64encode(body).decode(), "payloadType": PAYLOAD_TYPE,
                       "signatures": [{"keyid": keyid(who.public), "sig": base64.b64encode(sig).decode()}]}, sort_keys=True) + "\n"


def allowed_keys(text: str | None, namespace: str) -> dict[str, tuple[str, str]]:
    """keyid -> (principal, public key) of the allowed-signers lines valid for `namespace`."""
    res: dict[str, tuple[str, str]] = {}
    for ln in (text or "").splitlines():
        f = ln.split()
        if len(f) < 3 or ln.lstrip().startswith("#"):
            continue
        opts = " ".join(f[1:-2])
        if "namespaces=" in opts and namespace not in opts:
            continue
        try:
            res[keyid(" ".join(f[-2:]))] = (f[0], " ".join(f[-2:]))
        except (ValueError, IndexError):
            continue  # a line that is not a key
    return res


def claimed_tree(note: bytes) -> str | None:
    """The tree a note's statement names, read without checking anything (for a message only)."""
    try:
        subj = json.loads(base64.b64decode(json.loads(note)["payload"]))["subject"][0]["digest"]
        return str(subj["gitTree"])
    except (ValueError, KeyError, TypeError, IndexError):
        return None


def open_envelope(note: str, landers: dict[str, tuple[str, str]]) -> tuple[dict[str, Any], str] | str:
    """(the Statement, the lander's principal) if `note` is a DSSE envelope signed by a listed lander;
    else what is wrong with it."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        env = json.loads(note)
        body = base64.b64decode(env["payload"], validate=True)
        sigs = [(s["keyid"], base64.b64decode(s["sig"], validate=True)) for s in env["signatures"]]
        ptype = env["payloadType"]
    except (ValueError, KeyError, TypeError):
        return "the attestation note is not a DSSE envelope (corrupt, truncated or written by hand)"
    if ptype != PAYLOAD_TYPE:
        return f"the envelope's payload type is {ptype!r}, not an in-toto statement"
    known = [(k, s) for k, s in sigs if k in landers]
    if not known:
        return f"signed by {', '.join(k for k, _ in sigs) or 'no key'}, which {LANDERS_FILE} does not list at that point"
    for k, s in known:
        pub = Ed25519PublicKey.from_public_bytes(base64.b64decode(landers[k][1].split()[1])[-32:])
        try:
            pub.verify(s, pae(ptype, body))
        except InvalidSignature:
            continue
        try:
            stmt = json.loads(body)
        except ValueError:
            return "the signed payload is not JSON"
        return (stmt, landers[k][0]) if isinstance(stmt, dict) else "the signed payload is not a statement"
    return "the lander's signature does not verify (the statement was changed after signing)"
