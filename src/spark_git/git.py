"""The only module that runs git. Small plain methods on one class bound to a directory.

GitPython's command layer runs every git process (so its quoting, env and error conventions apply);
a `Repo` is only opened where its object model is needed, always in a `with` block because it starts
helper processes. Refs move only by compare-and-swap (`update-ref <ref> <new> <old>`).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, NewType

from . import faults
from .errors import BadInput, GitError

LocalBranch = NewType("LocalBranch", str)  # short name, e.g. "add-oauth"
Sha = NewType("Sha", str)

ZERO_SHA = Sha("0" * 40)

# Environment that would point git at some other repository than the one we were asked about.
GIT_LOCATION_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX")


@dataclass(frozen=True)
class Out:
    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return [ln for ln in self.stdout.splitlines() if ln]


@dataclass(frozen=True)
class RepoInfo:
    toplevel: Path | None  # worktree we stand in (None when bare)
    git_dir: Path
    common_dir: Path
    main_worktree: Path


@dataclass
class Worktree:
    path: Path
    head: Sha | None = None
    branch: LocalBranch | None = None
    detached: bool = False
    bare: bool = False
    locked: bool = False
    prunable: bool = False
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StatusEntry:
    code: str  # two-letter porcelain code, "??" for untracked
    path: str

    def __str__(self) -> str:
        return f"{self.code} {self.path}"


def branch_ref(branch: str) -> str:
    return branch if branch.startswith("refs/") else f"refs/heads/{branch}"


class Git:
    """git, run in one directory. Cheap to create; holds no open processes."""

    def __init__(self, cwd: Path | str, env: dict[str, str] | None = None) -> None:
        self.cwd = Path(cwd)
        self.env = env or {}

    # -- running -----------------------------------------------------------------------------

    def run(self, *args: str, check: bool = True, input: str | None = None, env: dict[str, str] | None = None) -> Out:
        from git.cmd import Git as _Cmd  # lazy: GitPython costs ~100 ms to import

        if not self.cwd.is_dir():
            # GitPython silently falls back to the process cwd for a missing directory; never do that.
            raise BadInput(f"not a directory: {self.cwd}")
        argv = ["git", *args]
        stdin = None
        if input is not None:
            stdin = tempfile.TemporaryFile()
            stdin.write(input.encode())
            stdin.seek(0)
        try:
            rc, out, err = _Cmd(str(self.cwd)).execute(
                argv,
                istream=stdin,
                with_extended_output=True,
                with_exceptions=False,
                strip_newline_in_stdout=False,
                env={**self.env, **(env or {})},
            )
        except FileNotFoundError as e:  # pragma: no cover - git missing from PATH
            raise BadInput("git is not installed or not on PATH") from e
        finally:
            if stdin is not None:
                stdin.close()
        faults.after_git()
        result = Out(rc, out if isinstance(out, str) else out.decode(errors="replace"), err or "")
        if check and rc != 0:
            raise GitError(argv, rc, result.stderr, cwd=str(self.cwd), stdout=result.stdout)
        return result

    def out(self, *args: str) -> str:
        return self.run(*args).stdout.strip()

    # -- discovery ---------------------------------------------------------------------------

    def discover(self) -> RepoInfo:
        r = self.run("rev-parse", "--is-bare-repository", "--absolute-git-dir", "--git-common-dir", "--show-toplevel", check=False)
        if r.returncode != 0:
            raise BadInput(
                f"not inside a git repository: {self.cwd}",
                hint="run spark-git from a worktree of the repository (or pass -C PATH)",
                details={"stderr": r.stderr.strip()},
            )
        lines = r.stdout.splitlines()
        bare = lines[0] == "true"
        git_dir = Path(lines[1])
        common = Path(lines[2])
        if not common.is_absolute():
            common = (self.cwd / common).resolve()
        toplevel = Path(lines[3]) if len(lines) > 3 and lines[3] else None
        if bare:
            raise BadInput(f"{common} is a bare repository; spark-git needs a main worktree")
        if common.name == ".git":
            main = common.parent
        else:  # separate git dir (`git init --separate-git-dir`): ask git
            main = self.worktrees()[0].path
        return RepoInfo(toplevel=toplevel, git_dir=git_dir, common_dir=common.resolve(), main_worktree=main.resolve())

    # -- refs --------------------------------------------------------------------------------

    def rev_parse(self, rev: str) -> Sha | None:
        r = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False)
        return Sha(r.stdout.strip()) if r.returncode == 0 else None

    def current_branch(self) -> LocalBranch | None:
        r = self.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        return LocalBranch(r.stdout.strip()) if r.returncode == 0 else None

    def is_valid_branch_name(self, name: str) -> bool:
        return self.run("check-ref-format", "--branch", name, check=False).returncode == 0

    def refs(self, *patterns: str) -> dict[str, Sha]:
        out = self.run("for-each-ref", "--format=%(objectname) %(refname)", *patterns).stdout
        res: dict[str, Sha] = {}
        for line in out.splitlines():
            sha, _, ref = line.partition(" ")
            res[ref] = Sha(sha)
        return res

    def branch_head(self, branch: str) -> Sha | None:
        return self.rev_parse(branch_ref(branch))

    def update_ref(self, ref: str, new: str, old: str, message: str = "spark-git") -> None:
        """Compare-and-swap: moves `ref` to `new` only if it is still `old` (ZERO_SHA: must not exist)."""
        self.run("update-ref", "-m", message, ref, new, old)

    def delete_ref(self, ref: str, old: str, message: str = "spark-git") -> None:
        self.run("update-ref", "-m", message, "-d", ref, old)

    def ref_transaction(self, lines: list[str], message: str = "spark-git") -> None:
        """All-or-nothing `update-ref --stdin` (lines like `update <ref> <new> <old>`, `verify <ref> <old>`)."""
        self.run("update-ref", "-m", message, "--stdin", input="".join(f"{ln}\n" for ln in lines))

    # -- history -----------------------------------------------------------------------------

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        r = self.run("merge-base", "--is-ancestor", ancestor, descendant, check=False)
        if r.returncode > 1:
            raise GitError(["git", "merge-base", "--is-ancestor", ancestor, descendant], r.returncode, r.stderr, str(self.cwd))
        return r.returncode == 0

    def count(self, rev_range: str) -> int:
        return int(self.out("rev-list", "--count", rev_range))

    def ahead_behind(self, branch: str, upstream: str) -> tuple[int, int]:
        left, right = self.out("rev-list", "--left-right", "--count", f"{branch}...{upstream}").split()
        return int(left), int(right)

    def commits(self, rev_range: str) -> list[Sha]:
        """Commits in `rev_range`, oldest first."""
        return [Sha(s) for s in self.run("rev-list", "--reverse", rev_range).lines]

    # -- worktrees ---------------------------------------------------------------------------

    def worktrees(self) -> list[Worktree]:
        out = self.run("worktree", "list", "--porcelain").stdout
        res: list[Worktree] = []
        for block in out.strip().split("\n\n"):
            wt: Worktree | None = None
            for line in block.splitlines():
                key, _, val = line.partition(" ")
                if key == "worktree":
                    wt = Worktree(path=Path(val))
                elif wt is None:
                    continue
                elif key == "HEAD":
                    wt.head = Sha(val)
                elif key == "branch":
                    wt.branch = LocalBranch(val.removeprefix("refs/heads/"))
                elif key in ("detached", "bare", "locked", "prunable"):
                    setattr(wt, key, True)
                    if val:
                        wt.extra[key] = val
            if wt is not None:
                res.append(wt)
        return res

    def worktree_add(self, path: Path, branch: str) -> None:
        self.run("worktree", "add", "--quiet", str(path), branch)

    def worktree_remove(self, path: Path, force: bool = False) -> None:
        self.run("worktree", "remove", *(["--force"] if force else []), str(path))

    def worktree_prune(self) -> None:
        self.run("worktree", "prune")

    def status(self) -> list[StatusEntry]:
        """Modified, staged and untracked-not-ignored files of the worktree at cwd."""
        out = self.run("status", "--porcelain=v1", "-z", "--untracked-files=all").stdout
        entries: list[StatusEntry] = []
        parts: Iterator[str] = iter(out.split("\0"))
        for item in parts:
            if not item:
                continue
            code, path = item[:2], item[3:]
            if code[0] in "RC":  # renames carry the source path as the next field
                next(parts, None)
            entries.append(StatusEntry(code, path))
        return entries

    # -- config ------------------------------------------------------------------------------

    def config_get(self, key: str) -> str | None:
        r = self.run("config", "--get", key, check=False)
        return r.stdout.strip() if r.returncode == 0 else None

    def config_set(self, key: str, value: str) -> None:
        self.run("config", key, value)


def clean_env() -> dict[str, str]:
    """The process environment without variables that would redirect git to another repository."""
    return {k: v for k, v in os.environ.items() if k not in GIT_LOCATION_ENV}
