"""The only module that runs git. Small plain methods on one class bound to a directory.

Every git process is started here with `subprocess` (GitPython's conventions kept: LANGUAGE=C and
LC_ALL=C, stdin closed, stderr without its last newline); `ObjectReader` keeps one `git cat-file
--batch` for commands that read many objects. Refs move only by compare-and-swap
(`update-ref <ref> <new> <old>`).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from spark_git.core import faults, paths
from spark_git.core.errors import BadInput, GitError
from spark_git.core.gitlite import no_submodules
from spark_git.core.gitobjects import ObjectReader
from spark_git.core.gittypes import (
    GIT_LOCATION_ENV,
    ZERO_SHA,
    LocalBranch,
    Out,
    RepoInfo,
    Sha,
    StatusEntry,
    Worktree,
    branch_ref,
    plainly_valid_branch,
)

# The git layer's types live in gittypes.py; callers import them from here with the runner.
__all__ = [
    "GIT_LOCATION_ENV", "ZERO_SHA", "Git", "LocalBranch", "ObjectReader", "Out", "RepoInfo", "Sha", "StatusEntry", "Worktree",
    "branch_ref", "clean_env",
]


class Git:
    """git, run in one directory. Cheap to create; holds no open processes."""

    def __init__(self, cwd: Path | str, env: dict[str, str] | None = None) -> None:
        self.cwd = Path(cwd)
        self.env = env or {}

    # -- running -----------------------------------------------------------------------------

    def run(self, *args: str, check: bool = True, input: str | None = None, env: dict[str, str] | None = None) -> Out:
        argv = ["git", *args]
        p = _spawn(argv, self.cwd, self._env(env), input=None if input is None else input.encode("utf-8", "surrogateescape"))
        faults.after_git()
        result = Out(p.returncode, _decode(p.stdout), _decode(p.stderr).removesuffix("\n"))
        if check and p.returncode != 0:
            raise GitError(argv, p.returncode, result.stderr, cwd=str(self.cwd), stdout=result.stdout)
        return result

    def _env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        # English messages whatever the user's locale: git's stderr is shown and sometimes parsed.
        return no_submodules({**os.environ, "LANGUAGE": "C", "LC_ALL": "C", **self.env, **(extra or {})})

    def objects(self) -> ObjectReader:
        return ObjectReader(self.cwd, self._env())

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

    def admin_dir(self) -> Path:
        """The worktree's git dir, from its `.git` as git reads it (no process); asked of git when the
        worktree has no `.git` of its own (a subdirectory)."""
        return paths.git_dir_of(self.cwd) or self.discover().git_dir

    # -- refs --------------------------------------------------------------------------------

    def rev_parse(self, rev: str) -> Sha | None:
        r = self.run("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False)
        return Sha(r.stdout.strip()) if r.returncode == 0 else None

    def current_branch(self) -> LocalBranch | None:
        # The full name, shortened here: `--short` says "heads/main" when a tag `main` exists too.
        r = self.run("symbolic-ref", "--quiet", "HEAD", check=False)
        name = r.stdout.strip()
        return LocalBranch(name.removeprefix("refs/heads/")) if r.returncode == 0 and name.startswith("refs/heads/") else None

    def files_at(self, ref: str, names: tuple[str, ...]) -> tuple[Sha | None, dict[str, str | None]]:
        """The commit `ref` (a full ref name) points at and the text of each file named at its root
        there (None: not there, or not a file); (None, all None) when the ref does not exist."""
        tip = self.rev_parse(ref)
        texts: dict[str, str | None] = dict.fromkeys(names)
        if tip is None:
            return None, texts
        with self.objects() as r:
            for name in names:
                obj = r.read(f"{tip}:{name}")
                texts[name] = obj[1].decode("utf-8", "replace") if obj and obj[0] == "blob" else None
        return tip, texts

    def is_valid_branch_name(self, name: str) -> bool:
        if plainly_valid_branch(name):
            return True  # saves a git process per name; anything unusual still goes to git
        return self.run("check-ref-format", "--branch", name, check=False).returncode == 0

    def refs(self, *patterns: str) -> dict[str, Sha]:
        out = self.run("for-each-ref", "--format=%(objectname) %(refname)", *patterns).stdout
        res: dict[str, Sha] = {}
        for line in out.splitlines():
            sha, _, ref = line.partition(" ")
            res[ref] = Sha(sha)
        return res

    def unmerged(self, into: str, refs: list[str]) -> set[str]:
        """Which of the full ref names `refs` that exist point at commits not contained in `into`, in
        one git process (for-each-ref patterns also match below a slash: exact names kept)."""
        if not refs:
            return set()
        out = self.run("for-each-ref", "--format=%(refname)", f"--no-merged={into}", *refs).stdout
        return set(out.splitlines()) & set(refs)

    def branch_head(self, branch: str) -> Sha | None:
        return self.rev_parse(branch_ref(branch))

    def update_ref(self, ref: str, new: str, old: str, message: str = "spark-git") -> None:
        """Compare-and-swap: moves `ref` to `new` only if it is still `old` (ZERO_SHA: must not exist)."""
        self.run("update-ref", "-m", message, ref, new, old)

    def delete_ref(self, ref: str, old: str, message: str = "spark-git") -> None:
        self.run("update-ref", "-m", message, "-d", ref, old)

    # -- history -----------------------------------------------------------------------------

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        r = self.run("merge-base", "--is-ancestor", ancestor, descendant, check=False)
        if r.returncode > 1:
            raise GitError(["git", "merge-base", "--is-ancestor", ancestor, descendant], r.returncode, r.stderr, str(self.cwd))
        return r.returncode == 0

    def ahead_behind(self, branch: str, upstream: str) -> tuple[int, int]:
        left, right = self.out("rev-list", "--left-right", "--count", f"{branch}...{upstream}").split()
        return int(left), int(right)

    def count(self, rev_range: str) -> int:
        return int(self.out("rev-list", "--count", rev_range))

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

    def worktree_add(self, path: Path, branch: str, *, checkout: bool = True, lock_reason: str | None = None) -> None:
        opts = ([] if checkout else ["--no-checkout"]) + (["--lock", "--reason", lock_reason] if lock_reason else [])
        self.run("worktree", "add", "--quiet", *opts, str(path), branch)

    def worktree_unlock(self, path: Path) -> None:
        self.run("worktree", "unlock", str(path))

    def hook_path(self, name: str) -> Path | None:
        """The hook `name` if it exists and is executable (honours core.hooksPath)."""
        p = Path(self.out("rev-parse", "--git-path", f"hooks/{name}"))
        p = p if p.is_absolute() else self.cwd / p
        return p if p.is_file() and os.access(p, os.X_OK) else None

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

    def config_set(self, key: str, value: str) -> None:
        self.run("config", key, value)

    def config_get(self, key: str) -> str | None:
        r = self.run("config", "--get", key, check=False)
        return r.stdout.strip() if r.returncode == 0 else None

    def blob_at(self, ref: str, path: str) -> str | None:
        """The committed content of `path` at `ref` (None: no such file there); never a worktree's copy."""
        r = self.run("cat-file", "blob", f"{ref}:{path}", check=False)
        return r.stdout if r.returncode == 0 else None

    # -- merging (gated-merge issue) -----------------------------------------------------------

    def git_path(self, name: str) -> Path:
        p = Path(self.out("rev-parse", "--git-path", name))
        return p if p.is_absolute() else self.cwd / p

    def rebase_in_progress(self) -> bool:
        paths = self.run("rev-parse", "--git-path", "rebase-merge", "--git-path", "rebase-apply").lines
        return any((Path(p) if Path(p).is_absolute() else self.cwd / p).exists() for p in paths)

    def branch_and_status(self) -> tuple[LocalBranch | None, list[StatusEntry]]:
        """The checked-out branch (None: detached) and `status()`, in one git call."""
        out = self.run("status", "--porcelain=v1", "-z", "--branch", "--untracked-files=all").stdout
        header, _, rest = out.partition("\0")
        name = header.removeprefix("## ").split("...", 1)[0].split(" [", 1)[0]
        branch = None if name.startswith("HEAD (no branch)") else LocalBranch(name.removeprefix("No commits yet on "))
        entries: list[StatusEntry] = []
        parts: Iterator[str] = iter(rest.split("\0"))
        for item in parts:
            if not item:
                continue
            if item[0] in "RC":
                next(parts, None)
            entries.append(StatusEntry(item[:2], item[3:]))
        return branch, entries

    def head_and_tree(self) -> tuple[Sha, str] | None:
        r = self.run("rev-parse", "--quiet", "HEAD", "HEAD^{tree}", check=False)
        lines = r.lines
        return (Sha(lines[0]), lines[1]) if r.returncode == 0 and len(lines) == 2 else None

    def messages(self, rev_range: str) -> dict[str, str]:
        """Full message of every commit in `rev_range`, oldest first (`rev-list --reverse` order)."""
        out = self.run("log", "--reverse", "--format=%H%x1f%B%x1e", rev_range).stdout
        res: dict[str, str] = {}
        for rec in out.split("\x1e"):
            sha, sep, msg = rec.lstrip("\n").partition("\x1f")
            if sep:
                res[sha] = msg
        return res

    def rebase(self, upstream: str) -> Out:
        """`git rebase upstream` in this worktree; never opens an editor, never stashes. Not checked:
        the caller looks at the return code and `rebase_in_progress()`."""
        return self.run(
            "-c", "rebase.autoStash=false", "-c", "rebase.updateRefs=false", "-c", "rebase.autoSquash=false",
            "rebase", "--no-fork-point", upstream, check=False, env={"GIT_EDITOR": "true", "GIT_SEQUENCE_EDITOR": "true"},
        )

    def rebase_abort(self, *, keep_head: bool = False) -> None:  # keep_head: --quit drops the state unread, HEAD and files stay
        self.run("rebase", "--quit" if keep_head else "--abort")

    def patch_id(self, base: str, head: str) -> str | None:
        """`git diff base...head | git patch-id --verbatim` (None: no change); equal ids ⇔ the same patch,
        byte for byte but for line numbers (`--stable` ignores whitespace: `rm -rf ./b` = `rm -rf . /b`)."""
        diff = self.run("diff", "--no-color", "--no-ext-diff", "--full-index", "--binary", f"{base}...{head}").stdout
        words = self.run("patch-id", "--verbatim", input=diff).stdout.split() if diff else []
        return words[0] if words else None

    def move_checked_out_branch(self, branch: str, new: str, old: str, message: str = "spark-git") -> None:
        """CAS-moves `branch`, checked out in this clean worktree, and its files (`read-tree -m -u`; undone on failure)."""
        self.update_ref(branch_ref(branch), new, old, message=message)
        if (r := self.run("read-tree", "-m", "-u", old, new, check=False)).returncode != 0:
            self.update_ref(branch_ref(branch), old, new, message=f"{message}: undone")
            raise GitError(["git", "read-tree", "-m", "-u", old, new], r.returncode, r.stderr, str(self.cwd))

    def changed_paths(self, base: str, head: str) -> frozenset[str]:
        """The paths `head` changes since it forked from `base` (`base...head`; a rename: both names)."""
        return frozenset(self.run("diff", "--name-only", "--no-renames", "-z", f"{base}...{head}").stdout.split("\0")[:-1])

    def conflicted_files(self) -> list[str]:
        return self.run("diff", "--name-only", "--diff-filter=U", "-z").stdout.split("\0")[:-1] or []

    def merge_ff_only(self, sha: str) -> None:
        self.run("merge", "--ff-only", "--no-edit", "--quiet", sha, env={"GIT_EDITOR": "true"})

    def tree_of(self, rev: str) -> str:
        return self.out("rev-parse", "--verify", f"{rev}^{{tree}}")

    def head(self) -> Sha | None:
        return self.rev_parse("HEAD")

    def commit_object(self, sha: str) -> tuple[dict[str, list[str]], str]:
        """(headers, message) of a commit; headers map a key to its values in order."""
        raw = self.run("cat-file", "commit", sha).stdout
        head, _, message = raw.partition("\n\n")
        headers: dict[str, list[str]] = {}
        for line in head.splitlines():
            if line.startswith(" "):
                continue  # continuation of a multi-line header (gpgsig, mergetag): not replayed
            k, _, v = line.partition(" ")
            headers.setdefault(k, []).append(v)
        return headers, message

    def commit_tree(self, tree: str, parents: list[str], message: str, env: dict[str, str]) -> Sha:
        args = ["commit-tree", tree]
        for p in parents:
            args += ["-p", p]
        return Sha(self.run(*args, "-F", "-", input=message, env=env).stdout.strip())

    def notes_show(self, notes_ref: str, sha: str) -> str | None:
        r = self.run("notes", f"--ref={notes_ref}", "show", sha, check=False)
        return r.stdout if r.returncode == 0 else None

    def notes_set(self, notes_ref: str, sha: str, text: str) -> None:
        self.run("notes", f"--ref={notes_ref}", "add", "-f", "-F", "-", sha, input=text)

    def notes_of(self, notes_ref: str, rev_range: str) -> dict[str, str]:
        """Note text of every commit in `rev_range` that has one."""
        out = self.run("log", f"--notes={notes_ref}", "--format=%H%x1f%N%x1e", rev_range).stdout
        res: dict[str, str] = {}
        for rec in out.split("\x1e"):
            sha, _, note = rec.strip("\n").partition("\x1f")
            if sha and note.strip():
                res[sha] = note
        return res

    def log_fields(self, rev_range: str, fields: list[str], *extra: str) -> list[list[str]]:
        """One list of `fields` (pretty-format placeholders) per commit, newest first."""
        fmt = "%x1f".join(fields) + "%x1e"
        out = self.run("log", f"--format={fmt}", *extra, rev_range).stdout
        return [rec.strip("\n").split("\x1f") for rec in out.split("\x1e") if rec.strip("\n")]

    def numstat(self, rev_range: str) -> dict[str, list[tuple[int, int, str]]]:
        """Per commit: (added, removed, path) for each file it changes (binary files count 0)."""
        return {sha: files for sha, (_subject, files) in self.changes(rev_range).items()}

    def changes(self, rev_range: str) -> dict[str, tuple[str, list[tuple[int, int, str]]]]:
        """Per commit: (subject, numstat files), in one git call."""
        out = self.run("log", "--numstat", "--format=%x1e%H%x1f%s", "--no-renames", rev_range).stdout
        res: dict[str, tuple[str, list[tuple[int, int, str]]]] = {}
        for rec in out.split("\x1e"):
            lines = [ln for ln in rec.splitlines() if ln]
            if not lines:
                continue
            sha, _, subject = lines[0].partition("\x1f")
            files = []
            for ln in lines[1:]:
                a, d, path = ln.split("\t", 2)
                files.append((int(a) if a.isdigit() else 0, int(d) if d.isdigit() else 0, path))
            res[sha] = (subject, files)
        return res

    # -- archiving (cleanup issue) -------------------------------------------------------------

    def full_state_tree(self) -> str:
        """Tree of this worktree's whole state (tracked changes and untracked, not ignored, files), built
        in a temporary copy of its index so the user's index and files are untouched."""
        import shutil
        import tempfile

        index = self.git_path("index")
        with tempfile.TemporaryDirectory(prefix="spark-index-") as d:
            tmp = Path(d) / "index"
            if index.exists():
                shutil.copyfile(index, tmp)  # keeps stat data: `add -A` rehashes only what changed
            env = {"GIT_INDEX_FILE": str(tmp)}
            top = self.out("rev-parse", "--show-toplevel")
            Git(top, self.env).run("add", "-A", "--", ".", env=env)
            return self.run("write-tree", env=env).stdout.strip()

    def abort_operation(self, what: str) -> None:
        self.run(what, "--abort")

    # -- provisioning (real-agents issue) ------------------------------------------------------

    def untracked_matching(self, patterns: list[str], pattern_file: Path | None = None) -> list[str]:
        """Untracked paths of this worktree matching gitignore-syntax `patterns` (whole matching
        directories shown once, as `dir/`)."""
        if not patterns and pattern_file is None:
            return []
        # (no --no-empty-directory: with it, git skips files inside untracked directories)
        args = ["ls-files", "-z", "--others", "--ignored", "--directory"]
        if pattern_file is not None:
            args.append(f"--exclude-from={pattern_file}")
        args += [f"--exclude={p}" for p in patterns]
        return [p for p in self.run(*args).stdout.split("\0") if p]

    def ignored(self, paths: list[str]) -> set[str]:
        """The subset of `paths` git ignores (.gitignore, info/exclude, core.excludesFile)."""
        if not paths:
            return set()
        r = self.run("check-ignore", "-z", "--stdin", input="\0".join(paths) + "\0", check=False)
        if r.returncode not in (0, 1):
            raise GitError(["git", "check-ignore", "-z", "--stdin"], r.returncode, r.stderr, str(self.cwd))
        return {p for p in r.stdout.split("\0") if p}


def clean_env() -> dict[str, str]:
    """The process environment without variables that would redirect git to another repository."""
    return {k: v for k, v in os.environ.items() if k not in GIT_LOCATION_ENV}


def _decode(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _spawn(argv: list[str], cwd: Path, env: dict[str, str], *, input: bytes | None) -> subprocess.CompletedProcess[bytes]:
    if not cwd.is_dir():
        raise BadInput(f"not a directory: {cwd}")  # never fall back to the process's own directory
    try:
        return subprocess.run(argv, cwd=cwd, env=env, input=input, stdin=subprocess.DEVNULL if input is None else None, capture_output=True)
    except FileNotFoundError as e:
        if not cwd.is_dir():
            raise BadInput(f"not a directory: {cwd}") from e
        raise BadInput("git is not installed or not on PATH", hint="install git, or put it on PATH, and retry") from e
