"""Remote mode's shared parts: the cross-machine view of the remote's locks (`remote status`, and
`status` and `doctor` in remote mode), the remote Store, and `lock break`'s take-over of a task.
Remote mode's extras are the Store's `remote` role: the remote backend is imported by `open_store`
only in remote mode."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_git.core.errors import BadInput
from spark_git.core.model import Model
from spark_git.state.store import Shared, Store

if TYPE_CHECKING:
    from spark_git.state.remote_refs import Lease


class LeaseView(Model):
    task: str
    state: str | None
    machine: str
    session: str | None
    pid: int
    lease_age_s: float  # since the holder's last mutating command or heartbeat
    expires_at: str
    stale: bool  # the lease expired: shown, never taken over automatically (`lock break --why` does)
    mine: bool  # held by this machine
    broken_why: str | None = None  # this holder took it over with `lock break`: the reason given


class RemoteStatusData(Model):
    remote: str
    machine: str
    tasks: list[LeaseView]
    main_lock: LeaseView | None = None
    queue: list[str]  # queued tasks, in order, of every machine


def _view(task: str, state: str | None, lease: Lease, me: str) -> LeaseView:
    return LeaseView(task=task, state=state, machine=lease.machine, session=lease.session, pid=lease.pid, lease_age_s=round(lease.age_s(), 1),
                     expires_at=lease.expires_at, stale=lease.expired(), mine=lease.machine == me,
                     broken_why=str(lease.broken.get("why")) if lease.broken else None)


def remote_role(store: Store) -> Shared:
    """The command's Store's remote role; refused in local mode."""
    if store.remote is None:
        raise BadInput("remote mode is off in this clone", hint="with no task running here: spark-git remote enable <remote>")
    return store.remote


def status(store: Store) -> RemoteStatusData:
    remote = remote_role(store)
    me = remote.machine
    tasks = [_view(t, tf.state if tf else None, lease, me) for t, (tf, lease) in remote.remote_tasks().items()]
    main = remote.main_lock_lease()
    return RemoteStatusData(remote=remote.remote_name, machine=me, tasks=tasks, main_lock=_view("main", None, main, me) if main else None,
                            queue=[e.task for e in store.queue_entries()])


def break_remote(store: Store, task: str, why: str, session: str) -> dict[str, object]:
    """`lock break` in remote mode: this machine takes the task over with a lease on the commit it saw
    (a holder that moved in between makes the push fail: run it again); logged in the audit trail and
    the lock's own history, and the old holder's next command is refused with `why`."""
    remote = remote_role(store)
    before, _tf = remote.take_over(task, session, why)
    store.event(task, "lock_broken", session, previous_owner=before.session, previous_machine=before.machine, new_owner=session,
                new_machine=remote.machine, why=why, lease_expired=before.expired())
    return {"task": task, "previous_owner": f"{before.session} on {before.machine}", "new_owner": session,
            "idle": f"{before.age_s():.0f}s", "why": why, "owner_alive": None if before.expired() else True, "owner_pid": before.pid,
            "broken_by": session}
