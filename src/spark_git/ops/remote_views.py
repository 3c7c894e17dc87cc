"""The cross-machine view of remote mode (`remote status`, and `status` in remote mode): models only,
so `status` imports them without the remote backend."""

from __future__ import annotations

from spark_git.core.model import Model


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
