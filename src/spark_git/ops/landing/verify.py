"""`spark-git verify` (issue 34): every first-parent commit of the base branch checked from git
alone (ops/shared/verifying.py). `--fetch` verifies the remote's base with the remote's notes: what a
CI job on the forge checks. Bad input (a shallow clone, no attestation anywhere, an empty range) is
refused before anything is fetched or written."""

from __future__ import annotations

from spark_git.core import gitattest
from spark_git.core.errors import BadInput
from spark_git.core.git import Git, branch_ref
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.ops.shared import attest
from spark_git.ops.shared.verifying import NO_ATTESTATION, Files, VerifiedCommit, check, line

APPROVAL_NOTES = "refs/notes/spark"


class VerifyData(Model):
    base: str
    range: str
    commits: list[VerifiedCommit]
    landed: int
    accepted: int = 0
    failed: int
    before: int


def _fetch(git: Git, remote: str, branch: str) -> str:
    """The remote's base branch and notes, fetched; the ref its base now is here."""
    tracking = f"refs/remotes/{remote}/{branch}"
    spec = [f"+{branch_ref(branch)}:{tracking}", *(f"+{x}:{x}" for x in (gitattest.ATTEST_REF, APPROVAL_NOTES))]
    err = gitattest.fetch_refs(git, remote, spec)
    if err:
        raise BadInput(f"cannot fetch {branch} and the attestation notes from {remote}: {err}",
                       hint=f"git fetch {remote} '+refs/notes/*:refs/notes/*' (does {remote} have them?)")
    return tracking


def _rewritten(git: Git, res: list[VerifiedCommit], trees: dict[str, str]) -> None:
    """A commit without a note whose tree an attestation of a commit off the line names: a landing
    rewritten (the statement's tree is read unchecked: it only words the reason)."""
    missing = [r for r in res if r.status == "failed" and r.reason == NO_ATTESTATION]
    on_line = {r.sha for r in res}
    off = [(blob, sha) for blob, sha in gitattest.attested(git) if sha not in on_line] if missing else []
    by_tree: dict[str, str] = {}
    with git.objects() as reader:
        for blob, sha in off:
            obj = reader.read(blob)
            tree = attest.claimed_tree(obj[1]) if obj and obj[0] == "blob" else None
            if tree:
                by_tree[tree] = sha
    for r in missing:
        was = by_tree.get(trees[r.sha])
        if was:
            r.reason = f"{NO_ATTESTATION}; it rewrites the attested landing {was[:12]} (same tree): the base's history was rewritten or force-pushed"


def _refuse_shallow(git: Git) -> None:
    if gitattest.is_shallow(git):
        raise BadInput("this is a shallow clone: the parents whose committed landers and approvers vouch for each landing are missing",
                       hint="git fetch --unshallow", next=["git fetch --unshallow", "spark-git verify"])


def verify(layout: Layout, rev_range: str | None = None, fetch: str | None = None) -> VerifyData:
    git = layout.git()
    _refuse_shallow(git)  # before anything is fetched
    base = _fetch(git, fetch, layout.base_branch()) if fetch else branch_ref(layout.base_branch())
    if gitattest.ref_value(git, gitattest.ATTEST_REF) is None:
        raise BadInput("no landing attestation here at all: nothing spark-git landed, or the notes were not fetched",
                       hint="spark-git verify --fetch", next=["spark-git verify --fetch"])
    shown, commits, before = line(git, layout, rev_range, base)
    if rev_range and not commits:
        raise BadInput(f"the range {rev_range} holds no commit", hint="spark-git verify <from>..<to>", next=["spark-git verify"])
    if before == len(commits) or (rev_range and not any(c.note for c in commits)):
        raise BadInput(f"no landing attestation in {shown}: nothing spark-git landed there, or the notes were not fetched",
                       hint="spark-git verify (the whole base branch: which commits are from before adoption, which bypassed the queue)",
                       next=["spark-git verify", "spark-git verify --fetch"])
    with git.objects() as reader:
        files = Files(reader, layout.config.approval.allowed_signers)
        res = [VerifiedCommit(sha=c.sha, status="before") for c in commits[:before]]
        res += [check(git, files, c) for c in commits[before:]]
    _rewritten(git, res, {c.sha: c.tree for c in commits})
    n = {s: sum(r.status == s for r in res) for s in ("landed", "accepted", "failed", "before")}
    return VerifyData(base=base, range=shown, commits=res, **n)
