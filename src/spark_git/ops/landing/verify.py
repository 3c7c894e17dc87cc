"""`spark-git verify` (issue 34): every first-parent commit of the base branch checked from git
alone (ops/shared/verifying.py); `spark-git accept`: the human's signed decision to keep a commit
that reached the base without a landing, which `verify` then shows as accepted."""

from __future__ import annotations

from spark_git.core import gitattest
from spark_git.core.errors import BadInput
from spark_git.core.git import branch_ref
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.ops.shared.verifying import Files, VerifiedCommit, check, line

APPROVAL_NOTES = "refs/notes/spark"


class VerifyData(Model):
    base: str
    range: str
    commits: list[VerifiedCommit]
    landed: int
    accepted: int = 0
    failed: int
    before: int


def _fetch(layout: Layout, remote: str) -> None:
    err = gitattest.fetch_notes(layout.git(), remote, [gitattest.ATTEST_REF, APPROVAL_NOTES])
    if err:
        raise BadInput(f"cannot fetch the attestation notes from {remote}: {err}", hint=f"git fetch {remote} '+refs/notes/*:refs/notes/*'")


def verify(layout: Layout, rev_range: str | None = None, fetch: str | None = None) -> VerifyData:
    git = layout.git()
    if fetch:
        _fetch(layout, fetch)
    if gitattest.is_shallow(git):
        raise BadInput("this is a shallow clone: the parents whose committed landers and approvers vouch for each landing are missing",
                       hint="git fetch --unshallow")
    base = branch_ref(layout.base_branch())
    shown, commits, before = line(git, layout, rev_range, base)
    if before == len(commits):
        raise BadInput(f"no landing attestation in {shown}: nothing spark-git landed there, or the notes were not fetched",
                       hint="spark-git verify --fetch")
    with git.objects() as reader:
        files = Files(reader, layout.config.approval.allowed_signers)
        res = [VerifiedCommit(sha=c.sha, status="before") for c in commits[:before]]
        res += [check(git, files, c) for c in commits[before:]]
    n = {s: sum(r.status == s for r in res) for s in ("landed", "accepted", "failed", "before")}
    return VerifyData(base=base, range=shown, commits=res, **n)
