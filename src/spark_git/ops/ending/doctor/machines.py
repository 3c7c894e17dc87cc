"""Doctor in remote mode: the locks every machine holds on the shared remote. Another machine's task
is reported (holder, lease age, stale), never repaired: its worktrees are on that machine."""

from __future__ import annotations

from spark_git.ops.ending.doctor.scan import Ctx, Finding
from spark_git.ops.shared import remote


def check_machines(ctx: Ctx) -> None:
    data = remote.status(ctx.store)
    for t in data.tasks:
        holder = f"machine {t.machine} (session {t.session}, pid {t.pid}), lease renewed {t.lease_age_s:.0f}s ago"
        if t.stale:
            ctx.add(Finding(where=t.task, kind="remote-lease-stale", broken=False,
                            problem=f"the lease of {holder} expired on remote {data.remote}; it is never taken over automatically",
                            repair=f"spark-git lock break {t.task} --why REASON (after checking with its holder)",
                            details=t.model_dump(mode="json")))
        elif not t.mine:
            ctx.add(Finding(where=t.task, kind="remote-other-machine", broken=False,
                            problem=f"held by {holder}: its worktrees are on that machine, so this doctor only reports it",
                            repair=f"on {t.machine}: spark-git doctor {t.task}", details=t.model_dump(mode="json")))
