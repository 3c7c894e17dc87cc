"""Git for landing attestations (issue 34): the notes ref `refs/notes/spark-attest`, written by
compare-and-swap (the caller holds the notes mutex), and the one read `verify` needs: the base's
first-parent line with each commit's tree, parents and note, in one process."""

from __future__ import annotations

from dataclasses import dataclass

from spark_git.core.errors import BadInput
from spark_git.core.git import ZERO_SHA, Git

ATTEST_REF = "refs/notes/spark-attest"


@dataclass(frozen=True)
class LineCommit:
    sha: str
    tree: str
    parents: tuple[str, ...]
    note: str | None


def ref_value(git: Git, ref: str) -> str | None:
    r = git.run("rev-parse", "--verify", "-q", ref, check=False)
    return r.stdout.strip() or None if r.returncode == 0 else None


def note_add(git: Git, sha: str, text: str, ref: str = ATTEST_REF) -> bool:
    """Adds `text` as `sha`'s note unless it has one (False then); the ref moves by compare-and-swap
    from the value the note was built on, through a scratch ref (`git notes` itself does not). The
    caller holds the notes mutex, so the scratch ref is its own."""
    old, scratch, moved = ref_value(git, ref), f"{ref}-tmp", False
    git.run("update-ref", scratch, old) if old else git.run("update-ref", "-d", scratch, check=False)  # -d: a killed run's
    try:
        if git.run("notes", f"--ref={scratch}", "add", "-F", "-", sha, input=text, check=False).returncode != 0:
            return False  # it has a note (`git notes add` refuses to overwrite one)
        new = git.out("rev-parse", "--verify", scratch)
        git.run("update-ref", "--stdin", input=f"start\nupdate {ref} {new} {old or ZERO_SHA}\ndelete {scratch} {new}\ncommit\n")
        moved = True  # the scratch ref went in the same transaction
    finally:
        if not moved:
            git.run("update-ref", "-d", scratch, check=False)
    return True


def first_parent_line(git: Git, rev_range: str, ref: str = ATTEST_REF) -> list[LineCommit]:
    """The first-parent commits of `rev_range`, oldest first, each with its note on `ref`: read as
    blobs through one cat-file process (a note's text never reaches a parsed log line)."""
    r = git.run("log", "--first-parent", "--reverse", "--format=%H %T %P", rev_range, check=False)
    if r.returncode != 0:
        raise BadInput(f"cannot read the range {rev_range}: {r.stderr.strip()}", hint="spark-git verify <from>..<to> (commits of this clone; `git fetch` first)")
    blobs = {obj: blob for blob, obj in attested(git, ref)}
    res = []
    with git.objects() as reader:
        for f in (ln.split() for ln in r.stdout.splitlines()):
            obj = reader.read(blobs[f[0]]) if f[0] in blobs else None
            note = obj[1].decode(errors="replace").strip() if obj and obj[0] == "blob" else None
            res.append(LineCommit(f[0], f[1], tuple(f[2:]), note or None))
    return res


def is_shallow(git: Git) -> bool:
    return git.out("rev-parse", "--is-shallow-repository") == "true"


def fetch_refs(git: Git, remote: str, refspecs: list[str]) -> str | None:
    """Fetches `refspecs` from `remote` (forced: the remote's are the ones to verify); None, or what git said."""
    r = git.run("fetch", "-q", remote, *refspecs, check=False)
    return None if r.returncode == 0 else r.stderr.strip()


def attested(git: Git, ref: str = ATTEST_REF) -> list[tuple[str, str]]:
    """(note blob, annotated object) of every note on `ref`."""
    r = git.run("notes", f"--ref={ref}", "list", check=False)
    return [(f[0], f[1]) for f in (ln.split() for ln in r.stdout.splitlines()) if len(f) == 2]
