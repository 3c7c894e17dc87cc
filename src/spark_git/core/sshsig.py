"""The only module that runs ssh-keygen: approvals signed and verified in git's SSH signature format
(`ssh-keygen -Y sign` / `-Y verify`, namespace `spark-git-approval`), and the approver's own key.

The key is `user.signingkey` (with `gpg.format = ssh`: a key file, a public key whose private half is
in ssh-agent, or `key::<public key>`), else `approval_ed25519` in the user's state directory
($XDG_STATE_HOME/spark-git, default ~/.local/state/spark-git), created at the first approval with the
passphrase the human types at ssh-keygen's prompt (issue 31: no file on disk is enough to approve);
without one only where the committed config says `[approval] unprotected_key = true`. `protection`
says how a key's secret is kept. The public key of every key that signed an approval here is recorded in that directory's
`allowed_signers` (git's format): the approvers of this user. Agents' sandboxes deny that directory.

ssh-keygen runs short and starts nothing, so it goes through `subprocess.run` with a timeout instead of
core/proc.py's gate runner (whose watchdog costs a process per run)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from spark_git.core.errors import BadInput, Blocked
from spark_git.core.paths import state_dir as state_dir  # spelled once, where the hook can read it

NAMESPACE = "spark-git-approval"
KEY_FILE = "approval_ed25519"
ALLOWED_FILE = "allowed_signers"
TIMEOUT_S = 60.0  # a passphrase typed at the terminal counts against it


def allowed_path() -> Path:
    return state_dir() / ALLOWED_FILE


@dataclass(frozen=True)
class Key:
    path: Path  # what `ssh-keygen -Y sign -f` takes: a private key, or a public key ssh-agent holds
    public: str  # "ssh-ed25519 AAAA…"
    created: bool = False  # made by this call (approve says where)


def _run(argv: list[str], data: bytes | None = None, tty: bool = False) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(argv, input=data, stdin=None if data is not None or tty else subprocess.DEVNULL,
                              capture_output=True, timeout=TIMEOUT_S)
    except FileNotFoundError as e:
        raise BadInput("ssh-keygen is not installed or not on PATH: approvals are signed with it",
                       hint="install OpenSSH's client tools (ssh-keygen 8.2 or later) and retry") from e
    except subprocess.TimeoutExpired as e:
        raise Blocked(f"ssh-keygen did not finish in {TIMEOUT_S:.0f}s: {' '.join(argv)}") from e


def _err(p: subprocess.CompletedProcess[bytes]) -> str:
    return p.stderr.decode("utf-8", "replace").strip() or f"exit code {p.returncode}"


def configured_key(signingkey: str | None, fmt: str | None) -> Key | None:
    """`user.signingkey` when git signs with SSH (`gpg.format = ssh`); None otherwise."""
    if not signingkey or (fmt or "").lower() != "ssh":
        return None
    if signingkey.startswith("key::"):  # a literal public key: ssh-agent signs with its private half
        state_dir().mkdir(parents=True, exist_ok=True, mode=0o700)
        pub = state_dir() / "signingkey.pub"
        pub.write_text(signingkey.removeprefix("key::").strip() + "\n")
        return Key(pub, signingkey.removeprefix("key::").strip())
    path = Path(os.path.expanduser(signingkey))
    if not path.is_file():
        raise BadInput(f"user.signingkey names {path}, which is not a file", hint="git config user.signingkey /path/to/key (gpg.format = ssh)")
    return Key(path, public_of(path))


def public_of(path: Path) -> str:
    """The public key of the key file `path` (a .pub file beside it, or the file itself if public)."""
    for cand in (path, path.with_name(path.name + ".pub")):
        text = cand.read_text(errors="replace").strip() if cand.is_file() else ""
        if text.startswith(("ssh-", "ecdsa-", "sk-")):
            return " ".join(text.split()[:2])
    p = _run(["ssh-keygen", "-y", "-f", str(path)], tty=True)
    if p.returncode != 0:
        raise Blocked(f"cannot read the public key of {path}: {_err(p)}")
    return " ".join(p.stdout.decode().split()[:2])


def own_key(principal: str, *, interactive: bool, unprotected_ok: bool, again: str) -> Key:
    """The approver's key in the state directory, created (ed25519) if missing: with the passphrase
    the human sets at ssh-keygen's prompt, or none if `unprotected_ok` (CI, demos)."""
    d = state_dir()
    path = d / KEY_FILE
    if path.is_file():
        return Key(path, public_of(path))
    if not (interactive or unprotected_ok):
        raise Blocked("there is no approval key yet, and spark-git creates one only at a terminal, where you set its passphrase; nothing was recorded",
                      hint="run the command yourself in a terminal, or name your key: git config --global user.signingkey KEY (with gpg.format = ssh)",
                      next=[again])
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = d / f".{KEY_FILE}.{os.getpid()}"
    no_passphrase = ["-N", ""] if unprotected_ok else []  # else ssh-keygen asks for one on the terminal
    p = _run(["ssh-keygen", "-q", "-t", "ed25519", *no_passphrase, "-C", f"spark-git approvals of {principal}", "-f", str(tmp)], tty=not unprotected_ok)
    if p.returncode == 0 and not unprotected_ok and protection(Key(tmp, "")) == UNPROTECTED:
        _drop(tmp)
        raise Blocked("the new approval key got no passphrase (an empty one was typed): no key was kept and nothing was recorded",
                      hint="approve again and set a passphrase: it is the secret that makes an approval yours", next=[again])
    if p.returncode != 0:
        _drop(tmp)
        raise Blocked(f"cannot create an approval key in {d}: {_err(p)}; nothing was recorded", next=[again])
    try:  # create-exclusive: a concurrent approve that made one first wins, both use its key
        os.link(tmp.with_name(tmp.name + ".pub"), path.with_name(KEY_FILE + ".pub"))
        os.link(tmp, path)
        created = True
    except FileExistsError:
        created = False
    finally:
        _drop(tmp)
    return Key(path, public_of(path), created)


def _drop(tmp: Path) -> None:
    for f in (tmp, tmp.with_name(tmp.name + ".pub")):
        f.unlink(missing_ok=True)


# How a key's secret is kept (`protection`): what an approval record and note say about its key.
PASSPHRASE, AGENT, HARDWARE, UNPROTECTED = "passphrase", "ssh-agent", "hardware", "unprotected"


def protection(key: Key) -> str:
    """HARDWARE for a FIDO2 (-sk) key (each signature needs a touch); for a private key file on disk,
    PASSPHRASE if it does not open with an empty passphrase (`ssh-keygen -y -P ''` fails), else
    UNPROTECTED; AGENT when only the public half is on disk: ssh-agent signs, and whether it asks for
    confirmation (`ssh-add -c`) cannot be seen from here (docs/decisions.md, "approval keys")."""
    if key.public.startswith("sk-"):
        return HARDWARE
    private = next((f for f in (key.path, key.path.with_name(key.path.name.removesuffix(".pub"))) if _is_private(f)), None)
    if private is None:
        return AGENT
    return UNPROTECTED if _run(["ssh-keygen", "-y", "-P", "", "-f", str(private)]).returncode == 0 else PASSPHRASE


def _is_private(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return b"PRIVATE KEY-----" in f.read(64)
    except OSError:  # absent or unreadable: not a key file spark-git can sign with
        return False


def allow(principal: str, public: str) -> bool:
    """Records `public` as an approver `principal` of this user (False: it was already there)."""
    line = f'{principal} namespaces="{NAMESPACE}" {public}\n'
    path = allowed_path()
    have = path.read_text() if path.is_file() else ""
    if any(ln.split()[-2:] == public.split() and ln.split()[0] == principal for ln in have.splitlines() if ln.strip() and not ln.startswith("#")):
        return False
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(path, "a") as f:
        f.write(line)
    return True


def sign(key: Key, payload: bytes) -> str:
    """The armored SSH signature of `payload` (a passphrase or ssh-agent's confirmation is asked on the terminal)."""
    p = _run(["ssh-keygen", "-Y", "sign", "-q", "-n", NAMESPACE, "-f", str(key.path)], data=payload)
    if p.returncode != 0:
        raise Blocked(f"ssh-keygen could not sign the approval with {key.path}: {_err(p)}; nothing was recorded")
    return p.stdout.decode()


def verify(allowed: str, principal: str, payload: bytes, signature: str) -> str | None:
    """None when `signature` is `principal`'s signature of `payload` by a key `allowed` lists for the
    namespace; otherwise what ssh-keygen says is wrong."""
    if not allowed.strip():
        return "no allowed approver key is known here (none recorded in the state directory, no [approval] allowed_signers)"
    with tempfile.TemporaryDirectory(prefix="spark-sig-") as d:
        (Path(d) / "allowed").write_text(allowed)
        (Path(d) / "sig").write_text(signature)
        p = _run(["ssh-keygen", "-Y", "verify", "-f", f"{d}/allowed", "-I", principal, "-n", NAMESPACE, "-s", f"{d}/sig"], data=payload)
    return None if p.returncode == 0 else _err(p)
