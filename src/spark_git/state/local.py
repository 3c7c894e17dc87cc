"""The local backend: task locks and state as JSON files under the tasks root (temp → fsync →
rename, create-exclusive by link(2)), notes and archive refs in the repository, mutexes as kernel
flocks under `<git-common-dir>/spark/`."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spark_git.core.errors import GitError
from spark_git.core.git import ZERO_SHA
from spark_git.core.layout import Layout
from spark_git.core.paths import PORTS_FILE
from spark_git.state import audit as _audit
from spark_git.state import notes as _notes
from spark_git.state import recordmac
from spark_git.state.files import create_exclusive, read_optional, write_atomic
from spark_git.state.locks import NOTES, mutex, try_mutex
from spark_git.state.models import AuditSnapshot, AuditTrail, MainLock, PortsFile, TaskFile
from spark_git.state.queuerefs import QUEUE_PREFIX, Priority, QueueEntry, new_seq
from spark_git.state.store import ARCHIVE_PREFIX, VERDICTS_REF, ArchiveRecord, NoteEntry, Shared, archive_ref_for

if TYPE_CHECKING:
    from spark_git.state.queuelog import QueueLog
    from spark_git.state.report_evidence import AgentStatus

HISTORY = "history"  # <task>/history/<created_at>/: the records of ended tasks of the same name


class LocalStore:
    def __init__(self, layout: Layout) -> None:
        self.layout = layout

    @property
    def remote(self) -> Shared | None:
        return None  # local mode: no other machine

    @contextmanager
    def mutex(self, name: str, timeout: float = 3600.0) -> Iterator[None]:
        with mutex(self.layout, name, timeout):
            yield

    @contextmanager
    def try_mutex(self, name: str) -> Iterator[bool]:
        with try_mutex(self.layout, name) as got:
            yield got

    # -- task locks ------------------------------------------------------------------------

    def create_task(self, tf: TaskFile) -> bool:
        return create_exclusive(self.layout.task_json(tf.task_name), tf)

    def read_task(self, task: str) -> TaskFile | None:
        return read_optional(self.layout.task_json(task), TaskFile)

    def read_task_here(self, task: str) -> TaskFile | None:
        return LocalStore.read_task(self, task)  # the remote backend keeps its mirror here too

    def write_task(self, tf: TaskFile) -> None:
        write_atomic(self.layout.task_json(tf.task_name), tf)

    def release_task(self, task: str) -> None:
        self.layout.task_json(task).unlink(missing_ok=True)

    def has_task(self, task: str) -> bool:
        return self.layout.task_json(task).is_file()

    def task_names(self) -> list[str]:
        return self.layout.task_names()

    # -- main lock -------------------------------------------------------------------------

    def create_main_lock(self, lock: MainLock) -> bool:
        path = self.layout.main_lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        return create_exclusive(path, lock)

    def read_main_lock(self) -> MainLock | None:
        return read_optional(self.layout.main_lock(), MainLock)

    def write_main_lock(self, lock: MainLock) -> None:
        write_atomic(self.layout.main_lock(), lock)

    def release_main_lock(self) -> None:
        self.layout.main_lock().unlink(missing_ok=True)

    def await_main_lock(self, reason: str, timeout: float) -> MainLock | None:
        return self.read_main_lock()

    # -- agent reports -----------------------------------------------------------------------

    def read_status(self, task: str, agent: str) -> AgentStatus | None:
        # Its models (and the evidence ones in it) are defined by the commands that read a report.
        from spark_git.state.report_evidence import AgentStatus

        path = self.layout.agent_status(task, agent)
        st = read_optional(path, AgentStatus)
        wrong = recordmac.report_problem(recordmac.load_key(self.layout), task, agent, st) if st is not None else None
        if wrong is not None:
            raise recordmac.UnauthenticReport(str(path), wrong, task=task)
        return st

    def write_status(self, st: AgentStatus) -> None:
        recordmac.seal(recordmac.load_key(self.layout), st)
        write_atomic(self.layout.agent_status(st.task, st.agent), st)

    def create_status(self, st: AgentStatus) -> bool:
        recordmac.seal(recordmac.load_key(self.layout), st)
        return create_exclusive(self.layout.agent_status(st.task, st.agent), st)

    # -- audit -----------------------------------------------------------------------------

    def audit(self, task: str, section: str, entry: dict[str, Any], session: str | None = None) -> None:
        _audit.record(self.layout, task, section, entry, session=session)

    def event(self, task: str, kind: str, session: str | None = None, **payload: Any) -> None:
        _audit.event(self.layout, task, kind, session, **payload)

    def audit_many(self, task: str, entries: list[tuple[str, dict[str, Any]]], session: str | None = None) -> None:
        """Several entries (audit.event_entry for an event) in one write of the trail."""
        _audit.record_many(self.layout, task, entries, session)

    def read_audit(self, task: str) -> AuditTrail | None:
        return _audit.load(self.layout, task)

    def read_snapshot(self, task: str) -> AuditSnapshot | None:
        return read_optional(self.layout.audit_snapshot(task), AuditSnapshot)

    def write_snapshot(self, task: str, snap: AuditSnapshot) -> None:
        write_atomic(self.layout.audit_snapshot(task), snap)

    def retire_records(self, task: str, stamp: str) -> str | None:
        d = self.layout.task_dir(task)
        entries = sorted(p for p in d.iterdir() if p.name != HISTORY) if d.is_dir() else []
        if not entries:
            return None
        dest, n = d / HISTORY / stamp, 1
        while dest.exists():
            n += 1
            dest = d / HISTORY / f"{stamp}-{n}"
        dest.mkdir(parents=True)
        # The snapshot last: a kill half-way leaves it in place, and the next start moves the rest.
        for p in sorted(entries, key=lambda p: p.name == "audit-snapshot.json"):
            os.rename(p, dest / p.name)
        return str(dest)

    # -- notes -----------------------------------------------------------------------------

    def keep_notes_on_rewrite(self) -> None:
        _notes.ensure_rewrite_config(self.layout)

    def add_notes(self, entries: Iterable[NoteEntry]) -> None:
        _notes.append_many(self.layout, entries)

    def notes(self, sha: str) -> list[dict[str, Any]]:
        return _notes.read(self.layout.git(), sha)

    def notes_in(self, rev_range: str) -> dict[str, list[dict[str, Any]]]:
        return _notes.read_range(self.layout.git(), rev_range)

    def verdicts(self, tree: str) -> list[dict[str, Any]]:
        return _notes.parse(self.layout.git().notes_show(VERDICTS_REF, tree) or "")

    def add_verdict(self, tree: str, verdict: dict[str, Any]) -> None:
        # Canonical lines (sorted keys, no spaces) so a `cat_sort_uniq` merge of two copies of the
        # ref (the shared-remote backend) never duplicates a verdict.
        git = self.layout.git()
        with mutex(self.layout, NOTES):
            lines = [ln for ln in (git.notes_show(VERDICTS_REF, tree) or "").splitlines() if ln.strip()]
            lines.append(json.dumps(verdict, sort_keys=True, separators=(",", ":")))
            git.notes_set(VERDICTS_REF, tree, "\n".join(lines) + "\n")

    # -- archive refs ------------------------------------------------------------------------

    def archive(self, task: str, name: str, sha: str, what: str, session: str | None = None, *, event: bool = True) -> str:
        """`refs/spark/archive/<task>/<name>/<sha12>` by compare-and-swap (a 12-digit prefix collision
        gets `-<next 8 digits>`); an existing ref is never moved; a racer archiving the same commit is fine."""
        git = self.layout.git()
        first = archive_ref_for(task, name, sha)
        for ref in (first, f"{first}-{sha[12:20]}"):
            try:  # created if absent, in one git process: the look comes only when that fails
                git.update_ref(ref, sha, ZERO_SHA, message=f"spark-git archive: {what}")
            except GitError:
                cur = git.rev_parse(ref)
                if cur == sha:
                    return ref  # archived already (an earlier attempt, or a racer)
                if cur is None or ref != first:
                    raise
                continue  # another commit with the same 12-digit prefix holds it: the longer name
            if event:
                self.event(task, "archived", session, ref=ref, sha=sha, what=what)
            return ref
        raise AssertionError("unreachable: the second name returns or raises")

    def archived(self, task: str | None = None) -> list[ArchiveRecord]:
        pattern = ARCHIVE_PREFIX + (f"{task}/" if task else "")
        fmt = "--format=%(objectname)%1f%(refname)%1f%(committerdate:iso-strict)%1f%(subject)"
        out = self.layout.git().run("for-each-ref", "--sort=refname", fmt, pattern).stdout
        res = []
        for line in out.splitlines():
            sha, ref, date, subject = [*line.split("\x1f"), "", "", ""][:4]
            t, _, rest = ref[len(ARCHIVE_PREFIX):].partition("/")
            name = rest.rsplit("/", 1)[0] if "/" in rest else rest
            res.append(ArchiveRecord(ref=ref, task=t, name=name, sha=sha, date=date, subject=subject))
        return res

    def archived_sha(self, ref: str) -> str | None:
        return self.layout.git().rev_parse(ref)

    # -- ports -------------------------------------------------------------------------------

    def read_ports(self) -> PortsFile:
        return read_optional(self.layout.tasks_root / PORTS_FILE, PortsFile) or PortsFile()

    def write_ports(self, pf: PortsFile) -> None:
        write_atomic(self.layout.tasks_root / PORTS_FILE, pf)

    # -- merge queue -------------------------------------------------------------------------

    def enqueue(self, task: str, sha: str, priority: Priority = "normal") -> QueueEntry:
        for e in self.queue_entries():
            if e.task == task:
                return e
        seq = new_seq(priority)
        ref = f"{QUEUE_PREFIX}{seq}-{task}"
        self.layout.git().update_ref(ref, sha, ZERO_SHA, message=f"spark-git complete {task}: enqueue")
        return QueueEntry(ref, seq, task, sha)

    def queue_entries(self) -> list[QueueEntry]:
        res = []
        for ref, sha in sorted(self.layout.git().refs(QUEUE_PREFIX).items()):
            seq, _, task = ref[len(QUEUE_PREFIX):].partition("-")
            res.append(QueueEntry(ref, seq, task, sha))
        return res

    def dequeue(self, entry: QueueEntry) -> bool:
        git = self.layout.git()
        try:
            git.delete_ref(entry.ref, entry.sha, message=f"spark-git queue: {entry.task} done")
        except GitError:
            if git.rev_parse(entry.ref) is not None:
                raise
            return False
        return True

    def sync_base(self, branch: str) -> None:
        return None

    def publish_base(self, branch: str, new: str, old: str, entries: list[QueueEntry], notes: tuple[str, ...] = ()) -> bool:
        return True

    def read_queue_log(self) -> QueueLog:
        # Its models are defined by the commands that read the log, not by every one that opens a Store.
        from spark_git.state.queuelog import QueueLog

        return read_optional(self._queue_log(), QueueLog) or QueueLog()

    def write_queue_log(self, log: QueueLog) -> None:
        write_atomic(self._queue_log(), log)

    def _queue_log(self) -> Path:
        # A dot name: task names start with [a-z0-9], so this never collides with a task directory.
        return self.layout.tasks_root / ".queue" / "queue.json"
