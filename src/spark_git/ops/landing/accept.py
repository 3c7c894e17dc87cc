"""`spark-git accept <commit> --why TEXT`: the human's signed decision to keep a commit that reached the
base branch without a landing (a push behind spark-git's back). The record (commit, tree, base, why,
signer) is signed with the approval key and kept as the commit's note on refs/notes/spark-attest;
`verify` then shows the commit as accepted, checked against the approvers committed at its parent.
Nothing is written unless the acceptance would verify."""

from __future__ import annotations

import json
from dataclasses import replace

from spark_git.core import gitattest, sshsig
from spark_git.core.errors import BadInput, Blocked
from spark_git.core.git import Git, branch_ref
from spark_git.core.gitattest import LineCommit
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.ops.shared import signed
from spark_git.ops.shared.verifying import Files, acceptance_note, acceptance_record, check
from spark_git.state.locks import NOTES, mutex
from spark_git.state.models import now
from spark_git.state.store import Store


class AcceptData(Model):
    commit: str
    base: str
    signer: str
    why: str
    pushed: bool = False  # remote mode: pushed to the remote with the other notes


def _on_line(git: Git, base: str, commit: str) -> LineCommit:
    r = git.run("rev-parse", "--verify", "-q", f"{commit}^{{commit}}", check=False)
    if r.returncode != 0:
        raise BadInput(f"no commit {commit!r} in this clone", hint="git fetch", next=["spark-git verify"])
    sha = r.stdout.strip()
    found = next((c for c in gitattest.first_parent_line(git, base) if c.sha == sha), None)
    if found is None:
        raise BadInput(f"{sha[:12]} is not a first-parent commit of {base}: only what the base branch moved to is accepted",
                       next=["spark-git verify"])
    return found


def _refuse_noted(git: Git, files: Files, c: LineCommit) -> None:
    now_is = check(git, files, c)
    if now_is.status in ("landed", "accepted"):
        raise BadInput(f"{c.sha[:12]} verifies already ({now_is.status}): nothing to accept", next=["spark-git verify"])
    if c.note is not None:
        raise BadInput(f"{c.sha[:12]} carries a note that does not verify ({now_is.reason}); accepting it would hide that note",
                       hint="look at it, remove it, then accept the commit",
                       next=[f"git notes --ref={gitattest.ATTEST_REF} show {c.sha}", f"git notes --ref={gitattest.ATTEST_REF} remove {c.sha}"])


def accept(layout: Layout, store: Store, commit: str, why: str, *, interactive: bool) -> AcceptData:
    git, base = layout.git(), branch_ref(layout.base_branch())
    again = f"spark-git accept {commit} --why {json.dumps(why)}"
    if not why.strip():
        raise BadInput("say why the commit is kept: --why TEXT is recorded and signed", next=[f"spark-git accept {commit} --why TEXT"])
    if gitattest.is_shallow(git):
        raise BadInput("this is a shallow clone: the commit's parent and its committed approvers may be missing", hint="git fetch --unshallow")
    if not interactive and not layout.config.approval.allow_non_interactive:
        raise Blocked("accepting a commit is the human's decision, taken at a terminal; nothing was recorded",
                      hint="run it yourself in a terminal ([approval] allow_non_interactive = true allows it elsewhere)", next=[again])
    c = _on_line(git, base, commit)
    with git.objects() as reader:
        files = Files(reader, layout.config.approval.allowed_signers)
        _refuse_noted(git, files, c)
        signer = signed.approver(git, layout, interactive=interactive, again=again)
        rec = acceptance_record(c.sha, c.tree, base, why, signed.principal(git), now())
        payload = json.dumps(rec, sort_keys=True, separators=(",", ":"))
        note = acceptance_note(payload, sshsig.sign(signer.key, payload.encode()))
        would = check(git, files, replace(c, note=note))
    if would.status != "accepted":
        raise Blocked(f"your acceptance would not verify, so nothing was recorded: {would.reason}",
                      hint=f"list your key ({signer.key.path}.pub) under {rec['signer']} in the committed approvers' file first",
                      next=["spark-git verify"])
    with mutex(layout, NOTES):
        if not gitattest.note_add(git, c.sha, note):
            raise Blocked(f"{c.sha[:12]} got a note meanwhile; nothing was recorded", next=["spark-git verify", again])
    shared = store.remote
    if shared is not None:  # remote mode: the decision goes where the forge's `verify --fetch` reads
        shared.sync_notes(gitattest.ATTEST_REF)
    return AcceptData(commit=c.sha, base=base, signer=str(rec["signer"]), why=why, pushed=shared is not None)
