"""Lock refs on the shared remote: each is a chain of commits whose tree holds one state file and the
holder's lease (`lease.json`); the chain is the transition log. Every move is a push with a lease on
the value this machine last saw, so the remote's ref update is the compare-and-swap."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

from pydantic import ConfigDict

from spark_git.core.errors import Blocked, CorruptState
from spark_git.core.git import ZERO_SHA, Sha
from spark_git.core.gitremote import make_commit, read_files, tracking
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.state.locks import mutex
from spark_git.state.models import now, parse_time
from spark_git.state.remote_branch import FETCH_MUTEX, open_remote

LEASE = "lease.json"
RETRIES = 8  # rejected pushes in a row before a refusal: each one means another writer moved first


class HeldElsewhere(CorruptState):
    """Another machine holds the lock: this clone's copy of the task must not be used (exit 3, the
    holder and the `lock break` reason named). A CorruptState, so every reader that reports an
    unusable task (the session-start hook, doctor) reports this one too."""

    def __init__(self, message: str, details: dict[str, Any]) -> None:
        Blocked.__init__(self, message, hint="see `spark-git remote status`", next=["spark-git remote status"], details=details)


class Lease(Model):
    """Who holds a remote lock: machine, session, process, and until when without a renewal."""

    model_config = ConfigDict(extra="allow")
    machine: str
    session: str | None = None
    pid: int
    renewed_at: str
    expires_at: str
    broken: dict[str, Any] | None = None  # the `lock break` that made this holder: previous holder, why, when
    ended: str | None = None  # set on the final commit of an ended lock

    def expired(self) -> bool:
        return parse_time(self.expires_at) < datetime.now(UTC)

    def age_s(self) -> float:
        return max(0.0, time.time() - parse_time(self.renewed_at).timestamp())

    def who(self) -> str:
        return f"machine {self.machine!r} (session {self.session}, pid {self.pid})"


def canonical(obj: Any) -> str:
    # ASCII: read_files counts characters as bytes; sorted keys: equal states give equal blobs.
    return json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=True) + "\n"


class RemoteRefs:
    """The remote lock refs of one clone, with their local mirror under refs/spark-remote/."""

    def __init__(self, layout: Layout, remote: str, machine: str | None, lease_s: float) -> None:
        self.layout, self.git = layout, layout.git()
        self.remote = open_remote(layout, remote)
        self.machine = machine or socket.gethostname()
        self.lease_s = lease_s
        self._fresh = False

    # -- reading -------------------------------------------------------------------------

    @contextmanager
    def _cache(self) -> Iterator[None]:
        with mutex(self.layout, FETCH_MUTEX):
            yield

    def refresh(self, force: bool = False) -> None:
        """Fetches the remote's lock refs (once per store unless `force`): an unreachable remote refuses."""
        if self._fresh and not force:
            return
        if not self._fresh:
            self.remote.url()  # a missing remote is named as such, not as unreachable
        with self._cache():
            self.remote.fetch_spark()
        self._fresh = True

    def head(self, ref: str) -> Sha | None:
        self.refresh()
        return self.git.rev_parse(tracking(ref))

    def read(self, ref: str, name: str, at: str | None = None) -> tuple[Sha, str, Lease] | None:
        sha = at or self.head(ref)
        if sha is None:
            return None
        files = read_files(self.git, sha, [name, LEASE])
        try:
            lease = Lease.model_validate_json(files[LEASE] or "{}")
        except ValueError as e:
            raise CorruptState(f"{ref} ({sha[:12]}) on remote {self.remote.name!r}: {LEASE}", str(e)) from e
        return Sha(sha), files[name] or "", lease

    def fetch_branch(self, branch: str) -> Sha | None:
        """The remote's `branch`, fetched into the mirror (None if the remote has none). A glob
        refspec, so a missing branch is no error and one round trip answers both questions."""
        ref, mirror = f"refs/heads/{branch}", tracking(f"refs/spark/heads/{branch}")
        with self._cache():
            self.remote.fetch_refs({f"{ref}*": f"{mirror}*"})
            return self.git.rev_parse(mirror)

    def names(self, prefix: str) -> dict[str, Sha]:
        """Every remote ref under `prefix` (e.g. refs/spark/tasks/) -> its commit, from the mirror."""
        self.refresh()
        local = tracking(prefix)
        return {ref.removeprefix(local): sha for ref, sha in self.git.refs(local).items()}

    def mirror(self, ref: str, new: str | None) -> None:
        """Our own push succeeded: the mirror follows without another fetch."""
        with self._cache():
            t = tracking(ref)
            old = self.git.rev_parse(t) or ZERO_SHA
            if new is None:
                if old != ZERO_SHA:
                    self.git.delete_ref(t, old, message="spark-git remote: mirror")
            elif old != new:
                self.git.update_ref(t, new, old, message="spark-git remote: mirror")

    # -- writing -------------------------------------------------------------------------

    def lease(self, session: str | None, **extra: Any) -> Lease:
        t = datetime.now(UTC)
        return Lease(machine=self.machine, session=session, pid=os.getpid(), renewed_at=now(),
                     expires_at=(t + timedelta(seconds=self.lease_s)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), **extra)

    def commit(self, name: str, text: str, lease: Lease, parent: str | None, message: str, extra: dict[str, str] | None = None) -> Sha:
        files = {**(extra or {}), name: text, LEASE: canonical(lease.model_dump(mode="json", exclude_none=True))}
        return make_commit(self.git, files, [parent] if parent else [], message)

    def create(self, ref: str, name: str, text: str, lease: Lease, message: str, also: dict[str, str] | None = None) -> bool:
        """Takes the lock: the ref must not exist on the remote; `also` (ref -> sha, each must not exist
        either) moves in the same atomic push. False if the lock exists; Blocked if only `also` clashed."""
        new = self.commit(name, text, lease, None, message)
        updates: dict[str, str | None] = {ref: new, **(also or {})}
        res = self.remote.push(updates, {r: None for r in updates})
        if res.ok:
            self.mirror(ref, new)
            return True
        if ref in res.stale or ref in self.remote.ls(ref):  # stale: the remote had it when we pushed; no second round trip
            return False
        raise Blocked(f"cannot take {ref} on remote {self.remote.name!r}: {', '.join(sorted(also or {}))} exists there already",
                      hint="choose another name, or delete the stale branches on the remote", details={"stderr": res.stderr})

    def advance(self, ref: str, name: str, make: Callable[[Lease | None], tuple[str, Lease] | None], message: str,
                delete_to: str | None = None, extra: dict[str, str] | None = None) -> Sha | None:
        """A new commit on top of the ref's head, pushed with a lease on that head; on a rejection the
        head is fetched again and `make` (which refuses by raising) runs on it again. `make` gets the
        holder's lease and returns the new state and lease (None: nothing to do). With `delete_to`,
        the live ref is deleted and the final commit kept under `delete_to` instead."""
        for _ in range(RETRIES):
            cur = self.read(ref, name)
            got = make(cur[2] if cur else None)
            if got is None or cur is None:
                return None
            new = self.commit(name, got[0], got[1], cur[0], message, extra)
            updates: dict[str, str | None] = {ref: None, delete_to: new} if delete_to else {ref: new}
            leases: dict[str, str | None] = {ref: cur[0], **({delete_to: None} if delete_to else {})}
            if self.remote.push(updates, leases).ok:
                self.mirror(ref, None if delete_to else new)
                return new
            self.refresh(force=True)
        raise Blocked(f"{ref} on remote {self.remote.name!r} kept moving under this command ({RETRIES} rejected pushes)",
                      hint="run the command again")

    def delete(self, ref: str, guard: Callable[[Lease], None]) -> None:
        """Deletes a lock ref with a lease on the head this machine saw (after `guard` accepts its holder)."""
        for _ in range(RETRIES):
            cur = self.read(ref, LEASE)
            if cur is None:
                return
            guard(cur[2])
            if self.remote.push({ref: None}, {ref: cur[0]}).ok:
                self.mirror(ref, None)
                return
            self.refresh(force=True)
        raise Blocked(f"{ref} on remote {self.remote.name!r} kept moving under this command", hint="run the command again")

    def push_new(self, ref: str, sha: str) -> bool:
        """Creates `ref` at `sha` on the remote unless it exists; True if it points at `sha` afterwards."""
        if self.remote.push({ref: sha}, {ref: None}).ok:
            return True
        return self.remote.ls(ref).get(ref) == sha

    def gone(self, what: str) -> NoReturn:
        raise Blocked(f"{what} has no lock on remote {self.remote.name!r} any more (ended or taken away)",
                      hint="see `spark-git remote status`", next=["spark-git remote status"])

    def holder_check(self, lease: Lease | None, what: str) -> None:
        """Refuses (exit 3) unless this machine holds the lock: who holds it, and why if it was broken."""
        if lease is None:
            self.gone(what)
        if lease.machine != self.machine:
            why = f"; taken over by `lock break`: {lease.broken.get('why')}" if lease.broken else ""
            raise HeldElsewhere(f"{what} is held on remote {self.remote.name!r} by {lease.who()}, not by this machine "
                                f"({self.machine!r}){why}", details={"holder": lease.model_dump(mode="json")})
