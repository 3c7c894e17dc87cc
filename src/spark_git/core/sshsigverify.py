"""Verifying an SSH signature (git's and `ssh-keygen -Y sign`'s SSHSIG format, PROTOCOL.sshsig) of an
ed25519 key in-process with `cryptography` (imported lazily): `verify` checks a landing's approval for
every commit of the base, where one ssh-keygen process each would cost ~15 ms. Other key types go to
ssh-keygen (core/sshsig.py)."""

from __future__ import annotations

import base64
import hashlib
import struct

ED25519 = b"ssh-ed25519"
HASHES = {b"sha512": hashlib.sha512, b"sha256": hashlib.sha256}


def _strings(data: bytes) -> list[bytes]:
    out, i = [], 0
    while i < len(data):
        (n,) = struct.unpack(">I", data[i:i + 4])
        if i + 4 + n > len(data):
            raise ValueError("truncated")
        out.append(data[i + 4:i + 4 + n])
        i += 4 + n
    return out


def _allowed(allowed: str, principal: str, namespace: str) -> set[bytes]:
    """The public key blobs `allowed` (git's allowed-signers format) lists for `principal` and `namespace`."""
    res = set()
    for ln in allowed.splitlines():
        f = ln.split()
        if len(f) < 3 or ln.lstrip().startswith("#") or principal not in f[0].split(","):
            continue
        opts = " ".join(f[1:-2])
        if "namespaces=" in opts and namespace not in opts:
            continue
        try:
            res.add(base64.b64decode(f[-1]))
        except ValueError:
            continue
    return res


def verify(allowed: str, principal: str, namespace: str, payload: bytes, armored: str) -> str | None:
    """None when `armored` is `principal`'s ed25519 signature of `payload` in `namespace` by a key
    `allowed` lists; otherwise what is wrong (the same cases ssh-keygen refuses)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        body = "".join(ln for ln in armored.strip().splitlines() if not ln.startswith("-----"))
        blob = base64.b64decode(body, validate=True)
        if blob[:6] != b"SSHSIG" or struct.unpack(">I", blob[6:10])[0] != 1:
            return "not an SSH signature"
        pub, ns, reserved, halg, sig = _strings(blob[10:])
        kind, key = _strings(pub)
        sig_kind, raw = _strings(sig)
    except (ValueError, struct.error):
        return "the signature is not a readable SSH signature (corrupt or truncated)"
    if kind != ED25519 or sig_kind != ED25519 or halg not in HASHES:
        return f"unsupported signature type {kind.decode(errors='replace')}/{halg.decode(errors='replace')}"
    if ns != namespace.encode():
        return f"the signature is for namespace {ns.decode(errors='replace')!r}, not {namespace!r}"
    if pub not in _allowed(allowed, principal, namespace):
        return f"the signing key is not an allowed signer of {principal}"
    signed = b"SSHSIG" + b"".join(struct.pack(">I", len(x)) + x for x in (ns, reserved, halg, HASHES[halg](payload).digest()))
    try:
        Ed25519PublicKey.from_public_bytes(key).verify(raw, signed)
    except (InvalidSignature, ValueError):
        return "the signature does not verify"
    return None
