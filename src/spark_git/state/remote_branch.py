"""Remote state on one branch (`[sync] state_branch`), for hosts that refuse custom ref namespaces.

The branch's tree holds one file, a ref table (`<sha> <ref>` lines) standing in for the remote's
refs/spark/* and refs/notes/*; each of its commits has the commits the table gained as extra
parents, so pushing the branch carries them and fetching it brings them. A push checks the leases
against the table it read, then moves the branch with a lease on that very commit (atomic with any
real branch in the same push): the branch's update is the compare-and-swap of every table entry.
The rest of the backend is unchanged: the table is mirrored into the same refs/spark-remote/* refs."""

from __future__ import annotations

import fnmatch
import random
import time

from spark_git.core.errors import BadInput
from spark_git.core.git import ZERO_SHA, Sha
from spark_git.core.gitremote import TRACKING, PushResult, Remote, make_commit, read_files, tracking
from spark_git.core.layout import Layout
from spark_git.state.locks import mutex

FETCH_MUTEX = "remote-fetch"  # fetches and cache updates of one clone touch the same tracking refs
VIRTUAL = ("refs/spark/", "refs/notes/")  # what the table stands in for
TABLE = "refs"
STATE = TRACKING + "state-branch"  # the state branch as last fetched or pushed by this clone
SPARK_MIRRORED = ("tasks/", "queue/", "ended/", "main-lock")  # what fetch_spark mirrors (as Remote.fetch_spark)
RETRIES = 16  # the branch moved under us this many times in a row: every task of every machine writes it


def is_virtual(ref: str) -> bool:
    return ref.startswith(VIRTUAL)


def _notes_tracking(ref: str) -> str:
    return TRACKING + ref.removeprefix("refs/")  # as the notes sync names the mirror of refs/notes/spark*


def parse_table(text: str) -> dict[str, Sha]:
    table: dict[str, Sha] = {}
    for line in text.splitlines():
        sha, _, ref = line.partition(" ")
        if ref:
            table[ref] = Sha(sha)
    return table


def format_table(table: dict[str, str]) -> str:
    return "".join(f"{sha} {ref}\n" for ref, sha in sorted(table.items()))


class BranchRemote(Remote):
    """A `Remote` whose refs/spark/* and refs/notes/* live in the table of one branch."""

    def __init__(self, layout: Layout, name: str, branch: str) -> None:
        super().__init__(layout.git(), name)
        self.layout, self.branch = layout, f"refs/heads/{branch}"

    # -- reading -------------------------------------------------------------------------

    def _fetch_state(self) -> Sha | None:
        """The remote's state branch into STATE (the caller holds FETCH_MUTEX). A glob refspec, so a
        missing branch is no error; --prune drops a state branch deleted on the remote."""
        self.fetch_refs({f"{self.branch}*": f"{STATE}*"}, prune=True)
        return self.git.rev_parse(STATE)

    def table(self, state: str | None) -> dict[str, Sha]:
        return parse_table(read_files(self.git, state, [TABLE])[TABLE] or "") if state else {}

    def _sync_mirrors(self, wanted: dict[str, Sha], patterns: list[str], prune: bool) -> None:
        """Moves the local mirrors under `patterns` to `wanted` in one transaction (CAS on each)."""
        have = self.git.refs(*patterns)
        lines = [f"update {ref} {sha} {have.get(ref, ZERO_SHA)}" for ref, sha in wanted.items() if have.get(ref) != sha]
        if prune:
            lines += [f"delete {ref} {sha}" for ref, sha in have.items() if ref not in wanted]
        if lines:
            self.git.run("update-ref", "--stdin", input="".join(f"{ln}\n" for ln in ["start", *lines, "commit"]))

    def fetch_spark(self) -> None:
        table = self.table(self._fetch_state())
        wanted = {tracking(ref): sha for ref, sha in table.items() if ref.removeprefix("refs/spark/").startswith(SPARK_MIRRORED)}
        self._sync_mirrors(wanted, [TRACKING + p for p in SPARK_MIRRORED], prune=True)

    def fetch_notes(self) -> None:
        table = self.table(self._fetch_state())
        wanted = {_notes_tracking(ref): sha for ref, sha in table.items() if ref.startswith("refs/notes/spark")}
        self._sync_mirrors(wanted, [TRACKING + "notes/"], prune=False)

    def fetch_refs(self, refs: dict[str, str], *, force: bool = True, prune: bool = False) -> None:
        if any(is_virtual(ref) for ref in refs):
            raise BadInput(f"{', '.join(refs)}: in state-branch mode these live in {self.branch}'s table, not as refs")
        super().fetch_refs(refs, force=force, prune=prune)

    def ls(self, pattern: str) -> dict[str, Sha]:
        if not is_virtual(pattern):
            return super().ls(pattern)
        with mutex(self.layout, FETCH_MUTEX):
            table = self.table(self._fetch_state())
        return {ref: sha for ref, sha in table.items() if ref == pattern or fnmatch.fnmatchcase(ref, pattern)}

    # -- writing -------------------------------------------------------------------------

    def push(self, updates: dict[str, str | None], leases: dict[str, str | None]) -> PushResult:
        """Real refs go as they are; virtual ones become one new state commit pushed with them,
        with a lease on the state whose table their leases were checked against."""
        if not any(is_virtual(r) for r in [*updates, *leases]):
            return super().push(updates, leases)
        state, stderr = self.git.rev_parse(STATE), ""
        for attempt in range(RETRIES):
            table = self.table(state)
            stale = [r for r, old in leases.items() if is_virtual(r) and table.get(r) != old]
            if stale and attempt == 0:  # our copy may be old: judge on the remote's current state
                state = self._fresh_state()
                continue
            if stale:
                return PushResult(False, stale, f"{', '.join(stale)}: the table of {self.branch} differs from the lease", stale)
            res = self._push_state(state, table, updates, leases)
            if res.ok or [r for r in res.stale if r != self.branch]:
                return res  # done, or a real ref's lease failed
            stderr = res.stderr
            if attempt:  # several writers in lockstep: back off a random moment
                time.sleep(random.uniform(0, 0.01 * attempt))
            fresh = self._fresh_state()
            if fresh == state:
                return res  # the branch did not move: the remote refused for its own reasons
            state = fresh
        return PushResult(False, [r for r in updates if is_virtual(r)], f"{self.branch} kept moving under this push:\n{stderr}")

    def _fresh_state(self) -> Sha | None:
        with mutex(self.layout, FETCH_MUTEX):
            return self._fetch_state()

    def _push_state(self, state: Sha | None, table: dict[str, Sha], updates: dict[str, str | None],
                    leases: dict[str, str | None]) -> PushResult:
        new_table: dict[str, str] = dict(table)
        for ref, sha in updates.items():
            if is_virtual(ref) and sha is None:
                new_table.pop(ref, None)
            elif is_virtual(ref) and sha:
                new_table[ref] = sha
        carried = sorted({sha for ref, sha in updates.items() if is_virtual(ref) and sha and sha not in table.values()})
        parents = [*([state] if state else []), *carried]
        commit = make_commit(self.git, {TABLE: format_table(new_table)}, parents, "spark-git: state")
        real_updates = {r: v for r, v in updates.items() if not is_virtual(r)}
        real_leases = {r: v for r, v in leases.items() if not is_virtual(r)}
        res = super().push({self.branch: commit, **real_updates}, {self.branch: state, **real_leases})
        if res.ok:
            with mutex(self.layout, FETCH_MUTEX):
                if self.git.rev_parse(STATE) == state:  # else another process of this clone saw a newer one
                    self.git.update_ref(STATE, commit, state or ZERO_SHA, message="spark-git remote: state branch")
        return res


def open_remote(layout: Layout, name: str) -> Remote:
    """The remote as the backend sees it: plain refs, or the state branch `[sync] state_branch` names."""
    branch = layout.config.sync.state_branch
    if not branch:
        return Remote(layout.git(), name)
    if not layout.git().is_valid_branch_name(branch):
        raise BadInput(f"[sync] state_branch {branch!r} is not a valid branch name")
    return BranchRemote(layout, name, branch)
