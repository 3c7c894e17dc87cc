"""`spark-git verify` (issue 34): every first-parent commit of the base branch carries a landing
attestation that holds — signed by a lander `.spark-landers` listed at its parent, for exactly this
commit and tree, approved by an approver the committed approvers' file listed there, for this second
parent (or a byte-identical rebuild of it), vouched for by gates that passed on the landed tree.
Reads only git: no state directory, no secret."""

from __future__ import annotations

import json
import posixpath
from typing import Any, Literal

from spark_git.core import gitattest, sshsig, sshsigverify
from spark_git.core.errors import BadInput
from spark_git.core.git import Git, ObjectReader, branch_ref
from spark_git.core.gitattest import LineCommit
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.ops.shared import attest

APPROVAL_NOTES = "refs/notes/spark"


class VerifiedCommit(Model):
    sha: str
    status: Literal["landed", "failed", "before"]  # before: from before spark-git was adopted
    task: str | None = None
    reason: str | None = None


class VerifyData(Model):
    base: str
    range: str
    commits: list[VerifiedCommit]
    landed: int
    failed: int
    before: int


class _Files:
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


def _approval(git: Git, files: _Files, c: LineCommit, pred: dict[str, Any]) -> str | None:
    a = pred.get("approval") or {}
    try:
        rec = json.loads(a.get("record") or "")
    except ValueError:
        rec = None
    if not isinstance(rec, dict) or rec.get("approval") != "changes" or rec.get("task") != pred.get("task"):
        return "the attestation carries no signed approval of this task's changes"
    approvers = files.text(c.parents[0], files.approvers)
    if not approvers.strip():
        return f"no approvers' file is committed at {c.parents[0][:12]} ([approval] allowed_signers)"
    bad = sshsigverify.verify(approvers, str(rec.get("signer")), sshsig.NAMESPACE, a["record"].encode(), str(a.get("signature")))
    if bad is not None:
        return f"the approval's signature does not verify against the approvers committed at {c.parents[0][:12]}: {bad}"
    second = c.parents[1] if len(c.parents) > 1 else None
    if second is None or pred.get("approved_head") != second:
        return f"the second parent {str(second)[:12]} is not the approved head the attestation names"
    if rec.get("commit") != second and git.patch_id(c.parents[0], second) != rec.get("patch_id"):
        return f"the second parent {second[:12]} is neither the approved head {str(rec.get('commit'))[:12]} nor a byte-identical rebuild of it"
    return None


def _gates(files: _Files, pred: dict[str, Any]) -> str | None:
    tip = str((pred.get("batch") or {}).get("tip") or "")
    tree = files.tree(tip)
    for g in pred.get("gates") or []:
        if not g.get("passed"):
            return f"the {g.get('kind')} gate did not pass"
        if tree is None or g.get("tree") != tree:
            return f"the {g.get('kind')} gate ran on tree {str(g.get('tree'))[:12]}, not on the landed tree {str(tree)[:12]}"
    return None


def check(git: Git, files: _Files, c: LineCommit) -> VerifiedCommit:
    """One first-parent commit: landed (with its task) or failed (with the reason)."""
    def fail(reason: str, task: str | None = None) -> VerifiedCommit:
        return VerifiedCommit(sha=c.sha, status="failed", task=task, reason=reason)

    if c.note is None:
        return fail("no landing attestation: pushed to the base branch behind spark-git's back")
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
    bad = _approval(git, files, c, pred) or _gates(files, pred)
    return fail(bad, task) if bad else VerifiedCommit(sha=c.sha, status="landed", task=task)


def _line(git: Git, layout: Layout, rev_range: str | None, base: str) -> tuple[str, list[LineCommit], int]:
    """The range, its commits oldest first, and how many of the first are from before adoption."""
    since = layout.config.verify.since
    if rev_range:
        line = gitattest.first_parent_line(git, rev_range)
        return rev_range, line, 0
    if since:
        return f"{since}..{base}", gitattest.first_parent_line(git, f"{since}..{base}"), 0
    line = gitattest.first_parent_line(git, base)
    first = next((i for i, c in enumerate(line) if c.note is not None), len(line))
    return base, line, first


def verify(layout: Layout, rev_range: str | None = None, fetch: str | None = None) -> VerifyData:
    git = layout.git()
    if fetch:
        err = gitattest.fetch_notes(git, fetch, [gitattest.ATTEST_REF, APPROVAL_NOTES])
        if err:
            raise BadInput(f"cannot fetch the attestation notes from {fetch}: {err}", hint=f"git fetch {fetch} '+refs/notes/*:refs/notes/*'")
    if gitattest.is_shallow(git):
        raise BadInput("this is a shallow clone: the parents whose committed landers and approvers vouch for each landing are missing",
                       hint="git fetch --unshallow")
    base = branch_ref(layout.base_branch())
    shown, line, before = _line(git, layout, rev_range, base)
    if before == len(line):
        raise BadInput(f"no landing attestation in {shown}: nothing spark-git landed there, or the notes were not fetched",
                       hint="spark-git verify --fetch")
    with git.objects() as reader:
        files = _Files(reader, layout.config.approval.allowed_signers)
        res = [VerifiedCommit(sha=c.sha, status="before") for c in line[:before]]
        res += [check(git, files, c) for c in line[before:]]
    n = {s: sum(r.status == s for r in res) for s in ("landed", "failed", "before")}
    return VerifyData(base=base, range=shown, commits=res, landed=n["landed"], failed=n["failed"], before=n["before"])
