"""The check of one first-parent commit of the base (issue 34), shared by `verify` and `doctor`: it
carries a landing attestation that holds — signed by a lander `.spark-landers` listed at its parent,
for exactly this commit and tree, approved by an approver the committed approvers' file listed there,
for this second parent (or a byte-identical rebuild of it), vouched for by gates that passed on the
landed tree — or a human's signed acceptance of exactly this commit (`spark-git accept`).
Reads only git: no state directory, no secret."""

from __future__ import annotations

import json
import posixpath
from typing import Any, Literal

from spark_git.core import gitattest, sshsig, sshsigverify
from spark_git.core.git import Git, ObjectReader
from spark_git.core.gitattest import LineCommit
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.ops.shared import attest

ACCEPTANCE = "spark_acceptance"  # the key of an acceptance note (a landing note is a DSSE envelope)
NO_ATTESTATION = "no landing attestation: pushed to the base branch behind spark-git's back"


class VerifiedCommit(Model):
    sha: str
    status: Literal["landed", "accepted", "failed", "before"]  # before: from before spark-git was adopted
    task: str | None = None
    reason: str | None = None  # failed: what is wrong; accepted: who accepted it and why
    noted: bool = False  # failed: it carries a note (that does not verify), which `accept` will not hide


class Files:
    """The committed landers' and approvers' files at a commit, read through one cat-file process."""

    def __init__(self, reader: ObjectReader, approvers: str | None) -> None:
        self.reader, self.approvers = reader, approvers
        self.landers = posixpath.join(posixpath.dirname(approvers), attest.LANDERS_FILE) if approvers else attest.LANDERS_FILE

    def text(self, commit: str, path: str | None) -> str:
        obj = self.reader.read(f"{commit}:{path}") if path else None
        return obj[1].decode(errors="replace") if obj and obj[0] == "blob" else ""

    def tree(self, commit: str) -> str | None:
        obj = self.reader.read(commit)
        return obj[1].split(b"\n", 1)[0].decode().removeprefix("tree ") if obj and obj[0] == "commit" else None


def _signature(files: Files, at: str, signer: object, payload: str, signature: object) -> str | None:
    """What is wrong with `signature` as `signer`'s over `payload`, by the approvers committed at `at`."""
    approvers = files.text(at, files.approvers)
    if not approvers.strip():
        return f"no approvers' file is committed at {at[:12]} ([approval] allowed_signers)"
    bad = sshsigverify.verify(approvers, str(signer), sshsig.NAMESPACE, payload.encode(), str(signature))
    return None if bad is None else f"the signature does not verify against the approvers committed at {at[:12]}: {bad}"


def _approval(git: Git, files: Files, c: LineCommit, pred: dict[str, Any]) -> str | None:
    a = pred.get("approval") or {}
    try:
        rec = json.loads(a.get("record") or "")
    except ValueError:
        rec = None
    if not isinstance(rec, dict) or rec.get("approval") != "changes" or rec.get("task") != pred.get("task"):
        return "the attestation carries no signed approval of this task's changes"
    bad = _signature(files, c.parents[0], rec.get("signer"), a["record"], a.get("signature"))
    if bad is not None:
        return f"the approval: {bad}"
    second = c.parents[1] if len(c.parents) > 1 else None
    if second is None or pred.get("approved_head") != second:
        return f"the second parent {str(second)[:12]} is not the approved head the attestation names"
    if rec.get("commit") != second and git.patch_id(c.parents[0], second) != rec.get("patch_id"):
        return f"the second parent {second[:12]} is neither the approved head {str(rec.get('commit'))[:12]} nor a byte-identical rebuild of it"
    return None


def _gates(files: Files, pred: dict[str, Any]) -> str | None:
    tip = str((pred.get("batch") or {}).get("tip") or "")
    tree = files.tree(tip)
    for g in pred.get("gates") or []:
        if not g.get("passed"):
            return f"the {g.get('kind')} gate did not pass"
        if tree is None or g.get("tree") != tree:
            return f"the {g.get('kind')} gate ran on tree {str(g.get('tree'))[:12]}, not on the landed tree {str(tree)[:12]}"
    return None


def acceptance_record(commit: str, tree: str, base: str, why: str, signer: str, at: str) -> dict[str, Any]:
    """What a human signs to accept a commit that reached the base without a landing."""
    return {"v": 1, "decision": "accept", "commit": commit, "tree": tree, "base": base, "why": why, "signer": signer, "at": at}


def acceptance_note(payload: str, signature: str) -> str:
    return json.dumps({ACCEPTANCE: payload, "signature": signature}, sort_keys=True) + "\n"


def _accepted(files: Files, c: LineCommit, note: dict[str, Any]) -> VerifiedCommit:
    def fail(reason: str) -> VerifiedCommit:
        return VerifiedCommit(sha=c.sha, status="failed", reason=f"the acceptance note: {reason}", noted=True)

    try:
        rec = json.loads(str(note.get(ACCEPTANCE)))
    except ValueError:
        rec = None
    if not isinstance(rec, dict) or rec.get("decision") != "accept":
        return fail("not a signed acceptance record (corrupt or written by hand)")
    if rec.get("commit") != c.sha or rec.get("tree") != c.tree:
        return fail(f"it accepts commit {str(rec.get('commit'))[:12]}, not this one (copied from another commit)")
    bad = _signature(files, c.parents[0] if c.parents else c.sha, rec.get("signer"), str(note[ACCEPTANCE]), note.get("signature"))
    if bad is not None:
        return fail(bad)
    return VerifiedCommit(sha=c.sha, status="accepted", reason=f"accepted by {rec.get('signer')}: {rec.get('why')}")


def _as_acceptance(note: str) -> dict[str, Any] | None:
    try:
        obj = json.loads(note)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and ACCEPTANCE in obj else None


def check(git: Git, files: Files, c: LineCommit) -> VerifiedCommit:
    """One first-parent commit: landed (with its task), accepted, or failed (with the reason)."""
    def fail(reason: str, task: str | None = None) -> VerifiedCommit:
        return VerifiedCommit(sha=c.sha, status="failed", task=task, reason=reason, noted=c.note is not None)

    if c.note is None:
        return fail(NO_ATTESTATION)
    if (acc := _as_acceptance(c.note)) is not None:
        return _accepted(files, c, acc)
    landers = attest.allowed_keys(files.text(c.parents[0], files.landers) if c.parents else "", attest.LANDER_NAMESPACE)
    opened = attest.open_envelope(c.note, landers)
    if isinstance(opened, str):
        return fail(opened)
    stmt, _lander = opened
    raw = stmt.get("predicate")
    pred: dict[str, Any] = raw if isinstance(raw, dict) else {}
    task = pred.get("task") if isinstance(pred.get("task"), str) else None
    subj = (stmt.get("subject") or [{}])[0].get("digest", {}) if isinstance(stmt.get("subject"), list) else {}
    if stmt.get("_type") != attest.STATEMENT_TYPE or stmt.get("predicateType") != attest.PREDICATE_TYPE:
        return fail("the envelope holds no spark-git landing statement", task)
    if subj.get("gitCommit") != c.sha:
        return fail(f"the attestation is for commit {str(subj.get('gitCommit'))[:12]}, not this one (a note copied from another commit)", task)
    if subj.get("gitTree") != c.tree:
        return fail(f"tree mismatch: the attestation names tree {str(subj.get('gitTree'))[:12]}, the commit has {c.tree[:12]}", task)
    if not c.parents:
        return fail("a root commit cannot be a landing", task)
    bad = _approval(git, files, c, pred) or _gates(files, pred)
    return fail(bad, task) if bad else VerifiedCommit(sha=c.sha, status="landed", task=task)


def line(git: Git, layout: Layout, rev_range: str | None, base: str) -> tuple[str, list[LineCommit], int]:
    """The range, its commits oldest first, and how many of the first are from before adoption
    (default range: the base from [verify] since, else from its first attested commit)."""
    since = layout.config.verify.since
    if rev_range:
        return rev_range, gitattest.first_parent_line(git, rev_range), 0
    if since:
        return f"{since}..{base}", gitattest.first_parent_line(git, f"{since}..{base}"), 0
    commits = gitattest.first_parent_line(git, base)
    first = next((i for i, c in enumerate(commits) if c.note is not None), len(commits))
    return base, commits, first
