"""The shared-remote backend (`[sync] remote = "origin"`): task locks and state, the main lock, the
merge queue, notes and archive refs live on the git remote, moved only by pushes with a lease. Agent
reports, the audit trail, ports and process mutexes stay on this machine (LocalStore), and so does a
mirror of the task.json files this machine holds (the hook reads it without the network)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterable
from typing import Any

from spark_git.core.errors import Blocked, CorruptState, GitError
from spark_git.core.git import ZERO_SHA, Git, branch_ref
from spark_git.core.gitremote import TRACKING
from spark_git.core.layout import Layout
from spark_git.state.local import LocalStore
from spark_git.state.locks import NOTES, mutex
from spark_git.state.models import MainLock, TaskFile, now
from spark_git.state.notes import NOTES_REF
from spark_git.state.queuerefs import QUEUE_PREFIX, Priority, QueueEntry, new_seq
from spark_git.state.remote_branch import FETCH_MUTEX
from spark_git.state.remote_refs import Lease, RemoteRefs, canonical
from spark_git.state.store import VERDICTS_REF, NoteEntry, Shared

TASKS = "refs/spark/tasks/"
ENDED = "refs/spark/ended/"  # the final commit of every ended lock: the record is kept
MAIN_LOCK = "refs/spark/main-lock"
TASK_FILE = "task.json"
MAIN_FILE = "main-lock.json"
NOTES_RETRIES = 64


def _dump(model: Any) -> str:
    return canonical(model.model_dump(mode="json", by_alias=True))


class RemoteStore(LocalStore):
    def __init__(self, layout: Layout) -> None:
        super().__init__(layout)
        sync = layout.config.sync
        self.refs = RemoteRefs(layout, sync.remote or "origin", sync.machine, sync.lease_s)
        self._notes_pulled: set[str] = set()

    @property
    def remote(self) -> Shared | None:
        return self

    @property
    def machine(self) -> str:
        return self.refs.machine

    @property
    def remote_name(self) -> str:
        return self.refs.remote.name

    def main_lock_lease(self) -> Lease | None:
        got = self.refs.read(MAIN_LOCK, MAIN_FILE)
        return got[2] if got else None

    # -- task locks ------------------------------------------------------------------------

    def create_task(self, tf: TaskFile) -> bool:
        also = {branch_ref(b): tf.base_commit for b in tf.created_branches}
        lease = self.refs.lease(tf.session_id)
        if not self.refs.create(TASKS + tf.task_name, TASK_FILE, _dump(tf), lease, f"spark-git start {tf.task_name}", also):
            return False
        super().write_task(tf)
        return True

    def read_task(self, task: str) -> TaskFile | None:
        """The task as the remote has it; HeldElsewhere (exit 3) if another machine holds it, so a
        command of the old holder is refused before it changes anything."""
        got = self.refs.read(TASKS + task, TASK_FILE)
        if got is None:
            return None
        self.refs.holder_check(got[2], f"task {task!r}")
        try:
            tf = TaskFile.model_validate_json(got[1])
        except ValueError as e:
            raise CorruptState(f"{TASKS + task} ({got[0][:12]}) on remote {self.refs.remote.name!r}: {TASK_FILE}", str(e), task=task) from e
        self._local_paths(tf)
        return tf

    def _local_paths(self, tf: TaskFile) -> None:
        """Worktree paths are the writer's machine-local facts (two clones on one host share a machine
        name): this clone derives its own from the layout instead of trusting the remote's."""
        tf.worktree = str(self.layout.task_worktree(tf.task_name))
        for name, e in tf.agents.items():
            e.worktree = str(self.layout.agent_worktree(tf.task_name, name))

    def write_task(self, tf: TaskFile) -> None:
        self._renew(tf, f"spark-git {tf.task_name}: {tf.state}")
        super().write_task(tf)

    def _renew(self, tf: TaskFile, message: str, **lease_extra: Any) -> None:
        what = f"task {tf.task_name!r}"

        def make(cur: Lease | None) -> tuple[str, Lease]:
            self.refs.holder_check(cur, what)
            return _dump(tf), self.refs.lease(tf.session_id, **lease_extra)

        if self.refs.advance(TASKS + tf.task_name, TASK_FILE, make, message, extra=self._trail(tf.task_name)) is None:
            self.refs.gone(what)

    def _trail(self, task: str) -> dict[str, str]:
        """The audit trail as it stands, kept in the lock's commit: every machine sees the task's history."""
        path = self.layout.audit_trail(task)
        return {path.name: path.read_text()} if path.is_file() else {}

    def heartbeat(self, task: str) -> Lease:
        """Renews this machine's lease on `task` (long gates); refuses if another machine holds it."""
        tf = self.read_task(task)
        if tf is None:
            self.refs.gone(f"task {task!r}")
        self._renew(tf, f"spark-git heartbeat {task}")
        return self.lease_of(task) or self.refs.lease(tf.session_id)

    def take_over(self, task: str, session: str, why: str) -> tuple[Lease, TaskFile]:
        """`lock break`: this machine and `session` become the holder, with a lease on the commit seen."""
        previous: list[Lease] = []

        def make(cur: Lease | None) -> tuple[str, Lease] | None:
            if cur is None:
                return None
            previous[:] = [cur]
            got = self.refs.read(TASKS + task, TASK_FILE)
            tf = TaskFile.model_validate_json(got[1]) if got else None
            if tf is None:
                return None
            tf.session_id = session
            if cur.machine != self.machine:
                self._move_here(tf)
            broken = {"previous": cur.model_dump(mode="json", exclude_none=True), "why": why, "at": now(), "by_machine": self.machine}
            return _dump(tf), self.refs.lease(session, broken=broken)

        if self.refs.advance(TASKS + task, TASK_FILE, make, f"spark-git lock break {task}: {why}") is None or not previous:
            raise Blocked(f"task {task!r} has no lock on remote {self.refs.remote.name!r}: nothing to break", task=task)
        tf = self.read_task(task)
        assert tf is not None
        if previous[0].machine != self.machine:
            self._fetch_branches(tf)
        super().write_task(tf)
        return previous[0], tf

    def _move_here(self, tf: TaskFile) -> None:
        """A task taken over from another machine gets this machine's worktree paths, to be created
        by the new holder's `start <task>` (which resumes an unfinished provisioning)."""
        self._local_paths(tf)
        tf.provisioning = "in_progress"

    def _fetch_branches(self, tf: TaskFile) -> None:
        """The task's branches as the remote has them, created here where missing (never moved)."""
        git = self.layout.git()
        want = [b for b in [tf.task_branch, *(e.branch for e in tf.agents.values())] if git.branch_head(b) is None]
        have = self.refs.remote.ls("refs/heads/*") if want else {}
        refs = {branch_ref(b): branch_ref(b) for b in want if branch_ref(b) in have}
        if refs:
            self.refs.remote.fetch_refs(refs, force=False)  # a branch made here meanwhile is never overwritten
    def release_task(self, task: str) -> None:
        ref = TASKS + task

        def make(cur: Lease | None) -> tuple[str, Lease] | None:
            if cur is None:
                return None
            self.refs.holder_check(cur, f"task {task!r}")
            got = self.refs.read(ref, TASK_FILE)
            return (got[1] if got else "{}\n"), cur.model_copy(update={"ended": now()})

        head = self.refs.head(ref)
        if head is not None:
            tf = self.read_task(task)
            self.refs.advance(ref, TASK_FILE, make, f"spark-git end {task}", delete_to=f"{ENDED}{task}/{head[:12]}-{time.time_ns()}")
            if tf is not None:
                self._drop_untouched_branches(tf)
        super().release_task(task)

    def _drop_untouched_branches(self, tf: TaskFile) -> None:
        """The branches `start` pushed, deleted on the remote only if they are still at the base
        commit pushed then (a lease): a branch somebody pushed work to stays."""
        refs = [branch_ref(b) for b in tf.created_branches]
        if refs and not self.refs.remote.push(dict.fromkeys(refs), dict.fromkeys(refs, tf.base_commit)).ok:
            for r in refs:  # one moved (or is gone): the others still go, each on its own lease
                self.refs.remote.push({r: None}, {r: tf.base_commit})

    def has_task(self, task: str) -> bool:
        return self.refs.head(TASKS + task) is not None

    def lease_of(self, task: str) -> Lease | None:
        got = self.refs.read(TASKS + task, TASK_FILE)
        return got[2] if got else None

    def remote_tasks(self) -> dict[str, tuple[TaskFile | None, Lease]]:
        """Every task locked on the remote, by any machine: its state and its holder's lease; worktree
        paths as this clone's layout derives them, like every read of a task here."""
        res: dict[str, tuple[TaskFile | None, Lease]] = {}
        for name, sha in sorted(self.refs.names(TASKS).items()):
            got = self.refs.read(TASKS + name, TASK_FILE, at=sha)
            if got is not None:
                try:
                    tf: TaskFile | None = TaskFile.model_validate_json(got[1])
                except ValueError:
                    tf = None
                if tf is not None:
                    self._local_paths(tf)  # the holder's paths are its own: never handed out here
                res[name] = (tf, got[2])
        return res

    # -- main lock -------------------------------------------------------------------------

    def create_main_lock(self, lock: MainLock) -> bool:
        if not self.refs.create(MAIN_LOCK, MAIN_FILE, _dump(lock), self.refs.lease(lock.session_id), "spark-git lock main"):
            return False
        super().write_main_lock(lock)
        return True

    def read_main_lock(self) -> MainLock | None:
        got = self.refs.read(MAIN_LOCK, MAIN_FILE)
        return MainLock.model_validate_json(got[1]) if got else None

    def write_main_lock(self, lock: MainLock) -> None:
        def make(cur: Lease | None) -> tuple[str, Lease]:
            self.refs.holder_check(cur, "the main lock")
            return _dump(lock), self.refs.lease(lock.session_id)

        if self.refs.advance(MAIN_LOCK, MAIN_FILE, make, "spark-git main lock") is None:
            self.refs.gone("the main lock")
        super().write_main_lock(lock)

    def await_main_lock(self, reason: str, timeout: float) -> MainLock | None:
        deadline = time.monotonic() + timeout
        while True:
            self.refs.refresh(force=True)
            got = self.refs.read(MAIN_LOCK, MAIN_FILE)
            lock = MainLock.model_validate_json(got[1]) if got else None
            if got is None or lock is None or lock.reason != reason or got[2].machine == self.machine or got[2].expired():
                return lock
            if time.monotonic() > deadline:
                return lock
            time.sleep(self.layout.config.queue.poll_s)  # another machine's landing: its release is a ref we poll

    def release_main_lock(self) -> None:
        # An explicit unlock (or `lock break main`) may end another machine's lock: the caller decided.
        self.refs.delete(MAIN_LOCK, lambda lease: None)
        super().release_main_lock()

    # -- notes: local write, then fetch -> merge (cat_sort_uniq) -> push with a lease, retried ---

    def add_notes(self, entries: Iterable[NoteEntry]) -> None:
        super().add_notes(entries)
        self.sync_notes(NOTES_REF)

    def add_verdict(self, tree: str, verdict: dict[str, Any]) -> None:
        super().add_verdict(tree, verdict)
        self.sync_notes(VERDICTS_REF)

    def notes(self, sha: str) -> list[dict[str, Any]]:
        self._pull_notes(NOTES_REF)
        return super().notes(sha)

    def notes_in(self, rev_range: str) -> dict[str, list[dict[str, Any]]]:
        self._pull_notes(NOTES_REF)
        return super().notes_in(rev_range)

    def verdicts(self, tree: str) -> list[dict[str, Any]]:
        self._pull_notes(VERDICTS_REF)
        return super().verdicts(tree)

    def _merge_remote_notes(self, ref: str) -> str | None:
        """Fetches the remote's notes and merges them into ours; returns the remote value seen."""
        git, theirs = self.layout.git(), TRACKING + ref.removeprefix("refs/")
        with mutex(self.layout, FETCH_MUTEX):
            self.refs.remote.fetch_notes()
            seen = git.rev_parse(theirs)
        if seen is not None and git.rev_parse(ref) != seen:
            git.run("notes", f"--ref={ref}", "merge", "--quiet", "-s", "cat_sort_uniq", seen)
        return seen

    def _pull_notes(self, ref: str) -> None:
        if ref in self._notes_pulled:
            return
        with mutex(self.layout, NOTES):
            self._merge_remote_notes(ref)
        self._notes_pulled.add(ref)

    def sync_notes(self, ref: str) -> None:
        """Pushes our notes with a lease on the remote value last seen. Once this command has merged
        the remote's notes, the first try skips the fetch (ours descend from them); a refusal
        fetches and merges again."""
        git, last, theirs = self.layout.git(), "", TRACKING + ref.removeprefix("refs/")
        for attempt in range(NOTES_RETRIES):
            with mutex(self.layout, NOTES):
                seen = git.rev_parse(theirs) if attempt == 0 and ref in self._notes_pulled else self._merge_remote_notes(ref)
                mine = git.rev_parse(ref)
                if mine is None or mine == seen:
                    break
                res = self.refs.remote.push({ref: mine}, {ref: seen})
                if res.ok:
                    with mutex(self.layout, FETCH_MUTEX):
                        git.update_ref(theirs, mine, seen or ZERO_SHA, message="spark-git remote: mirror")
                    break
                last = res.stderr
            # Another machine pushed between our fetch and our push: back off a random moment so
            # the writers of several machines stop colliding in lockstep.
            if attempt:
                time.sleep(random.uniform(0, 0.01 * attempt))
        else:
            raise Blocked(f"{ref} on remote {self.refs.remote.name!r} kept moving: the notes are kept here and go out with the next write",
                          hint="run `spark-git remote sync`", next=["spark-git remote sync"], details={"stderr": last})
        self._notes_pulled.add(ref)

    # -- archive refs: pushed, never deleted on the remote ----------------------------------

    def archive(self, task: str, name: str, sha: str, what: str, session: str | None = None, *, event: bool = True) -> str:
        ref = super().archive(task, name, sha, what, session, event=event)
        if not self.refs.push_new(ref, sha):
            raise Blocked(f"{ref} exists on remote {self.refs.remote.name!r} at another commit; it is kept here only", task=task)
        return ref

    # -- the merge queue: entries are remote refs, created and deleted with a lease ----------

    def enqueue(self, task: str, sha: str, priority: Priority = "normal") -> QueueEntry:
        for e in self.queue_entries():
            if e.task == task:
                return e
        seq = new_seq(priority)
        ref = f"{QUEUE_PREFIX}{seq}-{task}"
        if not self.refs.push_new(ref, sha):
            raise Blocked(f"cannot enqueue {task!r}: {ref} exists on the remote at another commit", task=task)
        self.refs.mirror(ref, sha)
        return QueueEntry(ref, seq, task, sha)

    def queue_entries(self) -> list[QueueEntry]:
        """The entries of tasks this machine holds: each machine drains its own (their branches and
        worktrees are here); the shared base, moved by a leased push, orders the landings."""
        res = []
        for name, sha in sorted(self.refs.names(QUEUE_PREFIX).items()):
            seq, _, task = name.partition("-")
            lease = self.lease_of(task)
            if lease is not None and lease.machine == self.machine:
                res.append(QueueEntry(QUEUE_PREFIX + name, seq, task, sha))
        return res

    def sync_base(self, branch: str) -> None:
        git, ref = self.layout.git(), branch_ref(branch)
        theirs = self.refs.fetch_branch(branch)
        mine = git.rev_parse(ref)
        if theirs is None or mine is None or theirs == mine or not git.is_ancestor(mine, theirs):
            return  # nothing to take, or local commits the remote lacks: the leased push refuses them
        wt = next((w.path for w in git.worktrees() if w.branch == branch), None)
        if wt is not None:
            Git(wt).merge_ff_only(theirs)
        else:
            git.update_ref(ref, theirs, mine, message=f"spark-git remote: {branch} from {self.refs.remote.name}")

    def publish_base(self, branch: str, new: str, old: str, entries: list[QueueEntry], notes: tuple[str, ...] = ()) -> bool:
        queued = {QUEUE_PREFIX + n: sha for n, sha in self.refs.names(QUEUE_PREFIX).items()}
        gone: dict[str, str | None] = {e.ref: queued[e.ref] for e in entries if e.ref in queued}
        git = self.layout.git()
        with mutex(self.layout, NOTES):  # the landing's attestation goes out with the base, never after it
            seen = {ref: self._merge_remote_notes(ref) for ref in notes}
            mine = {ref: git.rev_parse(ref) for ref in notes}
            ours = {ref: sha for ref, sha in mine.items() if sha is not None and sha != seen[ref]}
            pushed = self.refs.remote.push({branch_ref(branch): new, **dict.fromkeys(gone), **ours},
                                           {branch_ref(branch): old, **gone, **{ref: seen[ref] for ref in ours}})
            if pushed.ok:
                with mutex(self.layout, FETCH_MUTEX):
                    for ref, sha in ours.items():
                        git.update_ref(TRACKING + ref.removeprefix("refs/"), sha, seen[ref] or ZERO_SHA, message="spark-git remote: mirror")
        if not pushed.ok:
            self.refs.refresh(force=True)  # the next try leases on what is there now
            return False
        for ref in gone:
            self.refs.mirror(ref, None)
        return True

    def dequeue(self, entry: QueueEntry) -> bool:
        if QUEUE_PREFIX + entry.ref.removeprefix(QUEUE_PREFIX) not in {QUEUE_PREFIX + n for n in self.refs.names(QUEUE_PREFIX)}:
            return False  # gone already (a landing removes its entries with the base push)
        try:
            ok = self.refs.remote.push({entry.ref: None}, {entry.ref: entry.sha}).ok
        except GitError:
            ok = False
        if ok:
            self.refs.mirror(entry.ref, None)
        return ok
