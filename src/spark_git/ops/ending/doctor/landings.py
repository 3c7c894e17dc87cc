"""Doctor's look at the base branch (issue 34): a first-parent commit after the first attested landing
that carries no note on refs/notes/spark-attest moved the base behind spark-git's back. Only the notes'
presence is read here (one `git log`); whether attestations hold is `spark-git verify`'s longer check."""

from __future__ import annotations

from spark_git.core import gitattest
from spark_git.core.git import branch_ref
from spark_git.ops.ending.doctor.scan import Ctx, Finding
from spark_git.ops.shared import verifying


def check_base(ctx: Ctx) -> None:
    if not ctx.attested:
        return  # spark-git never attested a landing here: no git process spent
    git, base = ctx.git, branch_ref(ctx.layout.base_branch())
    if base not in ctx.heads or gitattest.is_shallow(git):
        return  # no base branch, or the history to read is missing
    _, commits, before = verifying.line(git, ctx.layout, None, base)
    for c in commits[before:]:
        if c.note is not None:
            continue
        ctx.add(Finding(where=ctx.layout.base_branch(), kind="base-unattested",
                        problem=f"{ctx.layout.base_branch()} moved to {c.sha[:12]}, which no landing recorded ({verifying.NO_ATTESTATION})",
                        repair=f"spark-git accept {c.sha} --why TEXT  (or revert it through a task: spark-git start revert-{c.sha[:7]}, "
                               f"`git revert {c.sha[:12]}` in its worktree, then complete it)",
                        details={"commits": [c.sha]}))
