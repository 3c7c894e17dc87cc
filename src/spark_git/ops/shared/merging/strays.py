"""Aborting a rebase that a kill cut short. The killed rebase may have written files of the commits it
was checking out without recording them in the index: they are untracked now, and `git rebase --abort`
refuses to overwrite them ("untracked working tree files would be overwritten by reset"). Such a file is
removed only when byte-identical to the blob of the commit it came from (git keeps that content)."""

from __future__ import annotations

from pathlib import Path

from spark_git.core.git import Git

# What `git rebase --abort` reads first. Git writes them before it moves HEAD or any file.
BASIC_STATE = ("head-name", "onto", "orig-head")


def _state_dirs(wt: Git) -> list[Path]:
    paths = [Path(p) for p in wt.run("rev-parse", "--git-path", "rebase-merge", "--git-path", "rebase-apply").lines]
    return [p if p.is_absolute() else Path(wt.cwd) / p for p in paths]


def rebase_commits(wt: Git) -> list[str]:
    """The pre-rebase head and the onto commit of the rebase in progress (what the killed one checked out)."""
    files = [d / name for d in _state_dirs(wt) for name in ("orig-head", "onto")]
    return [f.read_text().strip() for f in files if f.is_file()]


def _cut_before_it_began(wt: Git) -> bool:
    """A rebase killed while git wrote its own state: some of BASIC_STATE is missing (so `--abort`
    cannot run) and HEAD is still on the branch, so nothing was moved yet."""
    started = [d for d in _state_dirs(wt) if d.is_dir()]
    partial = any(not (d / name).is_file() for d in started for name in BASIC_STATE)
    return partial and wt.run("symbolic-ref", "-q", "HEAD", check=False).returncode == 0


def drop_identical_untracked(wt: Git, commits: list[str]) -> list[str]:
    """Removes untracked files byte-identical to their blob in one of `commits`; returns their paths."""
    untracked = [e.path for e in wt.status() if e.code == "??" and not e.path.endswith("/")]
    dropped: list[str] = []
    for commit in commits:
        if not untracked:
            break
        out = wt.run("ls-tree", "-r", "-z", "--format=%(objectname) %(path)", commit, "--", *untracked).stdout
        known = {path: sha for sha, _, path in (item.partition(" ") for item in out.split("\0") if item)}
        if not known:
            continue
        hashes = wt.run("hash-object", "--stdin-paths", input="".join(p + "\n" for p in known)).lines
        for rel, sha in zip(known, hashes, strict=True):
            if known[rel] == sha:
                (Path(wt.cwd) / rel).unlink()
                dropped.append(rel)
        untracked = [u for u in untracked if u not in dropped]
    return dropped


def abort_rebase(wt: Git) -> None:
    """`git rebase --abort` after a kill: strays identical to the pre-rebase head or the onto commit are
    removed first (else the abort's reset refuses), and the onto commit's leftovers after it."""
    if _cut_before_it_began(wt):
        wt.rebase_abort(keep_head=True)  # the half-written state goes; the branch, index and files are as before
        return
    commits = rebase_commits(wt)
    drop_identical_untracked(wt, commits)
    wt.rebase_abort()
    drop_identical_untracked(wt, commits)
