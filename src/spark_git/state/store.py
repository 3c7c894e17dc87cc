"""The `Store` seam: everything spark-git persists, behind one interface made of the roles commands
use: `Locks` (mutexes, task locks and state, the main lock), `Records` (agent reports, the audit
trail, notes and verdicts, archive refs, ports), `Queue` (the merge queue). Remote mode's extras
(machines, leases, take-over, notes sync) are a role of their own, `Shared`, reached as
`store.remote` (None in local mode), not by checking the backend's class.

Commands (ops/) talk to a `Store`, never to the files and refs behind it, so a second backend (the
shared git remote) is one class plus one registry line in `state/backends.py`. The local backend
(`state/local.py`) keeps today's layout: lock files beside the worktrees, refs and notes in the repo.
Each command opens one Store (`open_store`) and every part of it reads through that one.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from spark_git.core.layout import Layout
from spark_git.state.models import AuditSnapshot, AuditTrail, MainLock, PortsFile, TaskFile
from spark_git.state.queuerefs import Priority, QueueEntry

if TYPE_CHECKING:
    from spark_git.state.queuelog import QueueLog
    from spark_git.state.remote_refs import Lease
    from spark_git.state.report_evidence import AgentStatus

NoteEntry = tuple[str, dict[str, Any]]  # (commit, JSON object)
# Archive refs are named `refs/spark/archive/<task>/<name>/<sha12>` in every backend: users type them.
ARCHIVE_PREFIX = "refs/spark/archive/"
# Gate verdicts are notes on tree objects: a tree that passed a gate needs no second run of it.
VERDICTS_REF = "refs/notes/spark-verdicts"


def archive_ref_for(task: str, name: str, sha: str) -> str:
    """Where every backend keeps an archived commit (a 12-digit prefix collision adds `-<8 more>`)."""
    return f"{ARCHIVE_PREFIX}{task}/{name}/{sha[:12]}"


class ArchiveRecord(NamedTuple):
    ref: str
    task: str
    name: str
    sha: str
    date: str  # committer date, ISO 8601
    subject: str


class Locks(Protocol):
    """Who holds what: process mutexes, the tasks' ownership locks with their state, the main lock."""

    layout: Layout

    # -- process mutexes (short-lived, released when the process dies) ------------------------
    def mutex(self, name: str, timeout: float = 3600.0) -> AbstractContextManager[None]: ...
    def try_mutex(self, name: str) -> AbstractContextManager[bool]:
        """Takes the mutex if it is free (True inside), never waits (False: another process holds it)."""

    # -- ownership locks and task state ----------------------------------------------------
    def create_task(self, tf: TaskFile) -> bool:
        """Takes the task lock with its full content, atomically; False if the task exists."""
    def read_task(self, task: str) -> TaskFile | None:
        """None if there is no lock; CorruptState if it cannot be read."""
    def write_task(self, tf: TaskFile) -> None: ...
    def release_task(self, task: str) -> None:
        """Ends the ownership lock (cleanup, abandon, an undone start); records stay."""
    def read_task_here(self, task: str) -> TaskFile | None:
        """This machine's copy of the task's state: no fetch, no holder check (`status`, `doctor` and
        the branch checks read it; remote mode's mirror can be stale, which `status` says). None if
        there is none; CorruptState if it cannot be read."""
    def has_task(self, task: str) -> bool:
        """The task's lock exists (readable or not)."""
    def task_names(self) -> list[str]: ...

    # -- the main-worktree lock ------------------------------------------------------------
    def create_main_lock(self, lock: MainLock) -> bool: ...
    def read_main_lock(self) -> MainLock | None: ...
    def write_main_lock(self, lock: MainLock) -> None: ...
    def release_main_lock(self) -> None: ...
    def await_main_lock(self, reason: str, timeout: float) -> MainLock | None:
        """The main lock once no other machine holds it for `reason` (remote mode waits, polling the
        remote, at most `timeout` s); local: at once (a lock here is a live session's or a killed one's)."""


class Records(Protocol):
    """What stays after a command: agent reports, the audit trail, notes and gate verdicts, archive refs, ports."""

    # -- agent reports -------------------------------------------------------------------
    def read_status(self, task: str, agent: str) -> AgentStatus | None: ...
    def write_status(self, st: AgentStatus) -> None: ...
    def create_status(self, st: AgentStatus) -> bool:
        """Writes the agent's first report unless it has one (even an unreadable one); False then."""

    # -- audit trail (append-only, kept after the task ends) --------------------------------
    def audit(self, task: str, section: str, entry: dict[str, Any], session: str | None = None) -> None: ...
    def event(self, task: str, kind: str, session: str | None = None, **payload: Any) -> None: ...
    def audit_many(self, task: str, entries: list[tuple[str, dict[str, Any]]], session: str | None = None) -> None: ...
    def read_audit(self, task: str) -> AuditTrail | None: ...
    def read_snapshot(self, task: str) -> AuditSnapshot | None: ...
    def write_snapshot(self, task: str, snap: AuditSnapshot) -> None: ...
    def retire_records(self, task: str, stamp: str) -> str | None:
        """Moves an ended task's records (audit trail, snapshot, logs, reports) to
        `<task>/history/<stamp>/` so a new task of that name starts with none; returns where."""

    # -- git notes (attribution, evidence, approvals) ---------------------------------------
    def keep_notes_on_rewrite(self) -> None:
        """Notes follow `git rebase` / `commit --amend` of annotated commits; before a task's first note."""
    def add_notes(self, entries: Iterable[NoteEntry]) -> None: ...
    def notes(self, sha: str) -> list[dict[str, Any]]: ...
    def notes_in(self, rev_range: str) -> dict[str, list[dict[str, Any]]]: ...

    # -- gate verdicts: notes on tree objects (refs/notes/spark-verdicts) ---------------------
    def verdicts(self, tree: str) -> list[dict[str, Any]]:
        """Every verdict recorded on `tree`, oldest first (one JSON object per gate run)."""
    def add_verdict(self, tree: str, verdict: dict[str, Any]) -> None:
        """Appends one verdict to `tree`'s note, as a canonical JSON line, under the notes mutex."""

    # -- archive refs: written before anything could drop a commit; never moved or deleted --
    def archive(self, task: str, name: str, sha: str, what: str, session: str | None = None, *, event: bool = True) -> str:
        """Keeps `sha` reachable; returns the archive ref. Idempotent. `event`: log a new ref in the
        audit trail (a merge's pre-rebase safety ref, dropped again on a conflict, is not logged)."""
    def archived(self, task: str | None = None) -> list[ArchiveRecord]:
        """Every archive ref (of `task`), sorted by ref."""
    def archived_sha(self, ref: str) -> str | None:
        """The commit an archive ref keeps; None if there is no such ref."""

    # -- ports --------------------------------------------------------------------------
    def read_ports(self) -> PortsFile: ...
    def write_ports(self, pf: PortsFile) -> None: ...


class Queue(Protocol):
    """The merge queue: its entries, the base it lands on, its log."""

    # -- the merge queue: entries are refs created and deleted by compare-and-swap -----------
    def enqueue(self, task: str, sha: str, priority: Priority = "normal") -> QueueEntry:
        """Appends `task` at `sha` to the queue, or puts it ahead of every normal entry (`high`); its
        existing entry if it is queued already."""
    def queue_entries(self) -> list[QueueEntry]:
        """Every entry, in queue order."""
    def dequeue(self, entry: QueueEntry) -> bool:
        """Removes the entry if it still points at its sha; False if it was gone already."""
    def sync_base(self, branch: str) -> None:
        """Brings the local base branch up to the shared one before a batch is built (local: nothing)."""
    def publish_base(self, branch: str, new: str, old: str, entries: list[QueueEntry], notes: tuple[str, ...] = ()) -> bool:
        """Moves the shared base from `old` (the gated base) to `new` together with the removal of the
        landed queue entries and our `notes` refs (merged with the remote's first), all or nothing; False
        if the base (or one of those notes refs) moved (local: True, nothing shared)."""
    def read_queue_log(self) -> QueueLog: ...
    def write_queue_log(self, log: QueueLog) -> None:
        """Written only by the process holding the queue-drain mutex."""


class Shared(Protocol):
    """Remote mode's extras: the machines sharing the remote, their leases, a take-over, the notes sync."""

    @property
    def machine(self) -> str: ...
    @property
    def remote_name(self) -> str: ...
    def remote_tasks(self) -> dict[str, tuple[TaskFile | None, Lease]]:
        """Every task locked on the remote, by any machine: its state and its holder's lease."""
    def main_lock_lease(self) -> Lease | None: ...
    def heartbeat(self, task: str) -> Lease:
        """Renews this machine's lease on `task` (long gates); refuses if another machine holds it."""
    def take_over(self, task: str, session: str, why: str) -> tuple[Lease, TaskFile]:
        """`lock break`: this machine and `session` become the holder, with a lease on the commit seen."""
    def sync_notes(self, ref: str) -> None: ...


class Store(Locks, Records, Queue, Protocol):
    @property
    def remote(self) -> Shared | None:
        """Remote mode's role (None in local mode)."""
