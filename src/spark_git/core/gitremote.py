"""git plumbing for the shared-remote backend: commits built from in-memory files, pushes by lease,
fetches of the spark namespaces. Every process is started by `core/git.py`'s runner."""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_git.core.errors import Blocked, GitError
from spark_git.core.git import Git, Sha

TRACKING = "refs/spark-remote/"  # where the remote's refs/spark/* are mirrored (a cache, never pushed)
# The remote namespaces read by every command: task locks, the main lock, the queue (not the archive).
SPARK_SPECS = ("tasks/*", "queue/*", "main-lock*", "ended/*")
# Identity for the state commits: they record spark-git's state, not anyone's work.
COMMIT_ENV = {
    "GIT_AUTHOR_NAME": "spark-git", "GIT_AUTHOR_EMAIL": "spark-git@localhost",
    "GIT_COMMITTER_NAME": "spark-git", "GIT_COMMITTER_EMAIL": "spark-git@localhost",
}


class Unreachable(Blocked):
    """The remote did not answer: nothing was changed there, and nothing falls back to local state."""


@dataclass
class PushResult:
    ok: bool
    rejected: list[str] = field(default_factory=list)  # refs the remote (or the lease check) refused
    stderr: str = ""
    stale: list[str] = field(default_factory=list)  # refs whose lease the remote's advertisement already failed


def tracking(ref: str) -> str:
    """`refs/spark/tasks/x` -> its local mirror `refs/spark-remote/tasks/x`."""
    return TRACKING + ref.removeprefix("refs/spark/")


# --refmap= (empty): only the refspecs given are written. Without it git also updates the user's
# refs/remotes/<remote>/* "opportunistically", and a push of this clone moving the same tracking ref
# at that moment failed the fetch ("cannot lock ref … is at X but expected Y": a 3 x 10 race).
FETCH = ("fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--refmap=")


class Remote:
    """One named remote of the repository `git` runs in."""

    def __init__(self, git: Git, name: str) -> None:
        self.git, self.name = git, name

    def url(self) -> str:
        r = self.git.run("remote", "get-url", self.name, check=False)
        if r.returncode != 0:
            raise Blocked(f"remote mode is on but there is no remote {self.name!r}: {r.stderr}",
                          hint=f"add it (`git remote add {self.name} URL`), or, with no task running here, `spark-git remote disable`")
        return r.stdout.strip()

    def _unreachable(self, what: str, stderr: str) -> Unreachable:
        return Unreachable(f"remote {self.name!r} is unreachable ({what}); nothing was changed, and remote mode never "
                           f"falls back to local state:\n{stderr}", hint="check the network and the remote, then run the command again",
                           details={"remote": self.name, "stderr": stderr})

    def fetch_spark(self) -> None:
        """Mirrors the remote's task locks, main lock and queue (deleted ones pruned) under TRACKING."""
        specs = [f"+refs/spark/{s}:{TRACKING}{s}" for s in SPARK_SPECS]
        r = self.git.run(*FETCH, "--prune", self.name, *specs, check=False)
        if r.returncode != 0:
            raise self._unreachable("fetch", r.stderr)

    def fetch_refs(self, refs: dict[str, str], *, force: bool = True, prune: bool = False) -> None:
        """Fetches remote ref -> local ref (forced: mirrors; not forced: only created or fast-forwarded);
        a plain ref must exist on the remote, a glob need not (with `prune`, its vanished ones go)."""
        plus, pruning = "+" if force else "", ["--prune"] if prune else []
        r = self.git.run(*FETCH, *pruning, self.name,
                         *(f"{plus}{a}:{b}" for a, b in refs.items()), check=False)
        if r.returncode != 0:
            raise self._unreachable("fetch", r.stderr)

    def fetch_notes(self) -> None:
        """Mirrors the remote's `refs/notes/spark*` (attribution notes and verdicts) under TRACKING."""
        r = self.git.run(*FETCH, self.name, f"+refs/notes/spark*:{TRACKING}notes/spark*", check=False)
        if r.returncode != 0:
            raise self._unreachable("fetch", r.stderr)

    def push(self, updates: dict[str, str | None], leases: dict[str, str | None]) -> PushResult:
        """One atomic push: `updates` ref -> new sha (None: delete); `leases` ref -> the value it must
        still have on the remote (None: must not exist). All move or none."""
        argv = ["push", "--porcelain", "--atomic", "--no-verify", self.name]
        argv += [f"--force-with-lease={ref}:{old or ''}" for ref, old in leases.items()]
        argv += [f"{new}:{ref}" if new else f":{ref}" for ref, new in updates.items()]
        r = self.git.run(*argv, check=False)
        lines = [ln.split("\t") for ln in r.stdout.splitlines() if "\t" in ln]
        rejected = [parts[1].partition(":")[2] for parts in lines if parts[0] == "!"]
        if r.returncode == 0:
            return PushResult(True)
        if rejected:
            # porcelain's summary: "[rejected] (stale info)" is git-push's own lease refusal (see its OUTPUT)
            stale = [parts[1].partition(":")[2] for parts in lines if parts[0] == "!" and parts[2:3] == ["[rejected] (stale info)"]]
            return PushResult(False, rejected, r.stderr, stale)
        if not lines:
            raise self._unreachable("push", r.stderr)
        raise GitError(["git", *argv], r.returncode, r.stderr, str(self.git.cwd), r.stdout)

    def ls(self, pattern: str) -> dict[str, Sha]:
        """The remote's refs matching `pattern`, read from the remote itself (one round trip)."""
        r = self.git.run("ls-remote", self.name, pattern, check=False)
        if r.returncode != 0:
            raise self._unreachable("ls-remote", r.stderr)
        res: dict[str, Sha] = {}
        for line in r.lines:
            sha, _, ref = line.partition("\t")
            res[ref] = Sha(sha)
        return res


def make_commit(git: Git, files: dict[str, str], parents: list[str], message: str) -> Sha:
    """A commit whose tree holds `files` (name -> ASCII text), on top of `parents`; touches no ref."""
    entries = []
    for name, text in sorted(files.items()):
        blob = git.run("hash-object", "-w", "--stdin", input=text).stdout.strip()
        entries.append(f"100644 blob {blob}\t{name}")
    tree = git.run("mktree", input="\n".join(entries) + "\n").stdout.strip()
    return git.commit_tree(tree, parents, message, COMMIT_ENV)


def read_files(git: Git, rev: str, names: list[str]) -> dict[str, str | None]:
    """`names` of the tree at `rev` in one `cat-file --batch` (files are ASCII: sizes are characters)."""
    out = git.run("cat-file", "--batch", input="".join(f"{rev}:{n}\n" for n in names)).stdout
    res: dict[str, str | None] = {}
    pos = 0
    for n in names:
        end = out.index("\n", pos)
        header = out[pos:end].split(" ")
        if len(header) != 3:  # "<name> missing"
            res[n], pos = None, end + 1
            continue
        size = int(header[2])
        res[n] = out[end + 1:end + 1 + size]
        pos = end + 1 + size + 1
    return res
