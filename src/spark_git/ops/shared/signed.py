"""Signed approvals (issue 23): what `approve` signs with the human's key, and the one check that an
approval in task.json is a valid signature of the human for the task head. A hand-written or edited
`checkpoint` has no signature, or one that does not verify: it counts for nothing.

The signed record is canonical JSON: task, kind, the exact commit and its tree, the patch id
(`git patch-id --verbatim` of base...commit), the base branch (full ref) and the merge base, time, who
and the signer's principal. Allowed approvers: the keys recorded in the user's state directory, plus
the team's `[approval] allowed_signers` file as committed on the base branch (never a worktree's)."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark_git.clients import registry
from spark_git.core import gatebox, sshsig
from spark_git.core.errors import Blocked
from spark_git.core.git import Git, branch_ref
from spark_git.core.layout import Layout
from spark_git.state.models import Checkpoint, TaskFile


@dataclass(frozen=True)
class Approver:
    key: sshsig.Key
    protection: str  # sshsig.PASSPHRASE, AGENT, HARDWARE or UNPROTECTED

    @property
    def unprotected(self) -> bool:
        return self.protection == sshsig.UNPROTECTED

    def describe(self) -> str:
        """The key as the approval screen shows it."""
        return {sshsig.PASSPHRASE: f"{self.key.path} (protected by a passphrase: ssh-keygen asks for it)",
                sshsig.AGENT: f"{self.key.path} through ssh-agent (hold it there with `ssh-add -c`: spark-git cannot see the confirmation)",
                sshsig.HARDWARE: f"{self.key.path} (a FIDO2 key: touch it when it blinks)",
                sshsig.UNPROTECTED: f"{self.key.path}: UNPROTECTED KEY, no passphrase (accepted because [approval] unprotected_key = true): "
                                    "any process of this user could sign with it"}[self.protection]


def approver(git: Git, layout: Layout, *, interactive: bool, again: str) -> Approver:
    """The human's key (user.signingkey, else the one spark-git keeps, created with a passphrase at the
    first approval) and how its secret is kept; refused if no secret is needed to sign with it, unless
    the committed config accepts that (`[approval] unprotected_key = true`)."""
    accept = layout.config.approval.unprotected_key
    key = sshsig.configured_key(git.config_get("user.signingkey"), git.config_get("gpg.format")) or \
        sshsig.own_key(principal(git), interactive=interactive, unprotected_ok=accept, again=again)
    how = sshsig.protection(key)
    if how == sshsig.UNPROTECTED and not accept:
        raise Blocked(f"the approval key {key.path} has no passphrase: any process of yours could sign with it, so it cannot approve; nothing was recorded",
                      hint="give it one (ssh-keygen -p), or name a key that needs your secret: an ssh-agent key added with `ssh-add -c`, a FIDO2 "
                           "key (-sk): git config --global user.signingkey KEY; [approval] unprotected_key = true in the committed config accepts it (CI, demos)",
                      next=[f"ssh-keygen -p -f {key.path}", again])
    return Approver(key, how)


@dataclass(frozen=True)
class Signed:
    payload: str
    signature: str
    key: sshsig.Key
    allowed_added: bool  # the key was recorded as an allowed approver by this approval


def principal(git: Git) -> str:
    """Who signs: git's user.email, else user@host (allowed-signers principals have no spaces)."""
    email = git.config_get("user.email")
    if email and not any(c.isspace() for c in email):
        return email
    try:
        user = getpass.getuser()
    except Exception:  # no passwd entry (containers)
        user = os.environ.get("USER", "unknown")
    return f"{user}@{os.uname().nodename}"  # gethostname(), without importing socket (≈ 2 ms)


def record(git: Git, tf: TaskFile, kind: str, target: str, task_md_sha256: str | None, by: str, at: str, signer: Approver) -> dict[str, Any]:
    """The record the human signs; `key` says how the signing key's secret is kept, and `unprotected_key`
    is true when it is kept by nothing (verify and audit read it here, signed)."""
    base = branch_ref(tf.base_branch)
    base_commit = git.out("merge-base", base, target) if git.branch_head(tf.base_branch) else tf.base_commit
    return {"v": 1, "approval": kind, "task": tf.task_name, "commit": target, "tree": git.tree_of(target),
            "patch_id": git.patch_id(base, target) if kind == "changes" else None, "base": base, "base_commit": base_commit,
            "task_md_sha256": task_md_sha256, "at": at, "by": by, "signer": principal(git),
            "key": signer.protection, "unprotected_key": signer.unprotected}


def sign(rec: dict[str, Any], signer: Approver) -> Signed:
    """Signs `rec` with the human's key (a passphrase, ssh-agent's confirmation or a touch is asked on
    the terminal) and records that key as an allowed approver of this user."""
    payload = json.dumps(rec, sort_keys=True, separators=(",", ":"))
    signature = sshsig.sign(signer.key, payload.encode())
    return Signed(payload, signature, signer.key, sshsig.allow(rec["signer"], signer.key.public))


def inside_repo(layout: Layout) -> bool:
    """The state directory lies inside the repository (a worktree, the git dir, the tasks root): where
    an agent can read and write, so no key is made and no approver is trusted there."""
    real = Path(os.path.realpath(sshsig.state_dir()))
    return any(real.is_relative_to(os.path.realpath(p)) for p in (layout.main_worktree, layout.repo.common_dir, layout.tasks_root))


def allowed_signers(layout: Layout, base_branch: str) -> str:
    """The user's recorded approvers (unless the state dir is inside the repository) and the team's
    file committed on the base branch."""
    own = sshsig.allowed_path()
    try:
        text = own.read_text(errors="replace") if not inside_repo(layout) and own.is_file() else ""
    except OSError:  # unreadable here (an agent's sandbox denies the state directory): none of this user's approvers counts
        text = ""
    team = layout.config.approval.allowed_signers
    if team:
        text += "\n" + (layout.git().blob_at(branch_ref(base_branch), team) or "")
    return text


def signed_commit(cp: Checkpoint) -> str | None:
    """The commit the signed record names (an `update` moves `cp.commit_sha` to the rebased head)."""
    try:
        rec = json.loads(cp.signed or "")
    except ValueError:
        return None
    return rec.get("commit") if isinstance(rec, dict) and isinstance(rec.get("commit"), str) else None


def _signed_record(layout: Layout, tf: TaskFile, cp: Checkpoint, kind: str) -> dict[str, Any] | str:
    """THE verifier of every approval (changes and plan): the record `cp` carries, if it is the human's
    signature by an allowed key of an approval of `kind` for this task; else what is wrong with it."""
    signed, signature = cp.signed, cp.signature
    if not signed or not signature:
        return "the approval is not signed (a hand-written or edited record, or one from before approvals were signed)"
    try:
        rec = json.loads(signed)
    except ValueError:
        rec = None
    if not isinstance(rec, dict) or rec.get("task") != tf.task_name or rec.get("approval") != kind or not isinstance(rec.get("signer"), str):
        return f"the signed record is not an approval of the {kind} of {tf.task_name}"
    bad = sshsig.verify(allowed_signers(layout, tf.base_branch), rec["signer"], signed.encode(), signature)
    if bad is not None:
        return f"the approval's signature does not verify: {bad}"
    return rec


def problem(layout: Layout, tf: TaskFile, cp: Checkpoint, head: str, patch_of_head: str | None = None) -> str | None:
    """What is wrong with `cp` as the human's signed approval of the changes at `head` (None: it holds).
    `patch_of_head`: the head's patch id if the caller has it."""
    rec = _signed_record(layout, tf, cp, "changes")
    if isinstance(rec, str):
        return rec
    if rec.get("commit") == head:
        return None
    got = patch_of_head or layout.git().patch_id(branch_ref(tf.base_branch), head)
    if got is None or got != rec.get("patch_id"):
        return f"the approval is for {str(rec.get('commit'))[:12]}, but the task head is now {head[:12]} with another patch (a change in content voids it)"
    return None


def plan_problem(layout: Layout, tf: TaskFile, cp: Checkpoint) -> str | None:
    """What is wrong with `cp` as the human's signed approval of the plan whose task.md digest it records
    (None: it holds). Whether that is still task.md's digest is the protocol's check (protocol/guards.py,
    which gets this function as `Ctx.verify_plan`)."""
    rec = _signed_record(layout, tf, cp, "plan")
    if isinstance(rec, str):
        return rec
    if not cp.task_md_sha256 or rec.get("task_md_sha256") != cp.task_md_sha256:
        return f"the signature is for task.md with sha256 {str(rec.get('task_md_sha256'))[:12]}, not the {str(cp.task_md_sha256)[:12]} task.json records"
    return None


def approvers_note(layout: Layout) -> list[str]:
    """Without a committed approvers' file, approvals are verified against the user's own file, which
    any process of the user outside a box can extend (the key's passphrase still guards the signing)."""
    if layout.config.approval.allowed_signers:
        return []
    # the path last and alone: it can be longer than the screen and is copied whole
    return ["approvals are verified against your own allowed-signers file, which any process of yours outside a box can add a "
            "key to; commit the approvers instead (`spark-git init --approvers FILE`): then only a landed, approved commit "
            f"changes them. Your file: {sshsig.allowed_path()}"]


def unguarded(main: Path) -> list[str]:
    """The clients in use here (their directory in the main worktree; else the default one) whose
    agent sessions spark-git cannot keep away from the approval key, said plainly."""
    used = [c for c in registry.every() if (main / c.facts.config_dir).is_dir()] or [registry.get(registry.DEFAULT)]
    out = []
    for c in used:
        sb = c.facts.sandbox
        if not c.facts.own_box:  # `agent run` boxes it in bubblewrap (ops/life/agentbox.py); a session started by hand is not
            boxed = "sessions `spark-git agent run` starts run in bubblewrap without it, but " if gatebox.bwrap() else ""
            out.append(f"{c.facts.title}: {boxed}a session started by hand has no OS sandbox, so nothing guarantees it cannot read "
                       f"the approval key in {sshsig.state_dir()}")
            continue
        if sb is None:
            boxed = "sessions `spark-git agent run` starts run in bubblewrap, but " if gatebox.bwrap() else ""
            out.append(f"{c.facts.title}: {boxed}a session started by hand has only the sandbox its launch flags leave it (one can switch it "
                       f"off), so nothing guarantees it cannot read the approval key in {sshsig.state_dir()}")
            continue
        missing = [n for n in sb.needs if shutil.which(n) is None] if sys.platform.startswith("linux") else []
        if missing:
            out.append(f"{c.facts.title}: {', '.join(missing)} is not on PATH, so its sandbox cannot keep agent sessions from reading "
                       f"the approval key in {sshsig.state_dir()}")
    return out
