"""`spark-git remote enable|disable|status|check|sync` and `spark-git heartbeat`: the switch of remote
mode, the cross-machine view of the remote's locks, a host check, and the lease renewal of long gates."""

from __future__ import annotations

import json
import os
import socket
import time

from spark_git.core.errors import BadInput, Blocked
from spark_git.core.gitremote import Remote
from spark_git.core.layout import LOCAL_SYNC, Layout
from spark_git.core.model import Model
from spark_git.ops.shared.remote import RemoteStatusData, remote_role, status
from spark_git.state.backends import open_store
from spark_git.state.files import write_text_atomic
from spark_git.state.notes import NOTES_REF
from spark_git.state.store import VERDICTS_REF


class RemoteData(Model):
    enabled: bool
    remote: str | None
    url: str | None = None
    machine: str
    lease_s: float
    state_branch: str | None = None  # the remote's state lives in this branch, not in refs/spark/* and refs/notes/*
    config_file: str  # this clone's own switch (the repository's [sync] section is the default)


class HeartbeatData(Model):
    task: str
    machine: str
    expires_at: str


class RemoteCheckData(Model):
    remote: str
    url: str
    custom_refs: bool  # refs/spark/* can be pushed, fetched and deleted
    notes_refs: bool  # refs/notes/* can be pushed and fetched
    atomic: bool  # one refused lease in an --atomic push moved no ref at all (checked on branches when custom refs are refused)
    needs_state_branch: bool  # custom or notes refs refused: `spark-git remote enable NAME --state-branch spark/state`


def _sync_file(layout: Layout) -> str:
    return str(layout.spark_dir / LOCAL_SYNC)


def _write_switch(layout: Layout, remote: str, machine: str | None, state_branch: str | None = None) -> None:
    lines = ["# spark-git remote enable/disable: this clone's [sync] keys (over the repository's config)", "[sync]",
             f"remote = {json.dumps(remote)}"]
    if machine:
        lines.append(f"machine = {json.dumps(machine)}")
    if state_branch:
        lines.append(f"state_branch = {json.dumps(state_branch)}")
    layout.spark_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(layout.spark_dir / LOCAL_SYNC, "\n".join(lines) + "\n")


def show(layout: Layout, remote: str | None = None, machine: str | None = None, state_branch: str | None = None) -> RemoteData:
    sync = layout.config.sync
    name = remote if remote is not None else sync.remote
    url = Remote(layout.git(), name).url() if name else None
    return RemoteData(enabled=bool(name), remote=name or None, url=url, machine=machine or sync.machine or socket.gethostname(),
                      lease_s=sync.lease_s, state_branch=(state_branch or sync.state_branch) if name else None, config_file=_sync_file(layout))


def _live(layout: Layout) -> list[str]:
    """Tasks whose lock file is here (ended ones keep only their records)."""
    return [t for t in layout.task_names() if layout.task_json(t).is_file()]


def enable(layout: Layout, name: str, machine: str | None, state_branch: str | None = None) -> RemoteData:
    """Switches this clone to remote mode after checking the remote answers (nothing written otherwise)."""
    if not name or name.startswith("-"):
        raise BadInput(f"bad remote name {name!r}")
    branch = state_branch or layout.config.sync.state_branch
    if branch and not layout.git().is_valid_branch_name(branch):
        raise BadInput(f"--state-branch {branch!r} is not a valid branch name", hint="e.g. --state-branch spark/state")
    if _live(layout):
        raise Blocked(f"this clone has tasks kept locally ({', '.join(_live(layout))}): end them before switching modes",
                      hint="finish them (`spark-git complete`) or `spark-git abandon` them first")
    r = Remote(layout.git(), name)
    r.url()
    r.ls("refs/spark/main-lock")  # unreachable: refused here, not at the first task
    _write_switch(layout, name, machine or layout.config.sync.machine, branch)
    return show(layout, name, machine, branch)


def disable(layout: Layout) -> RemoteData:
    if layout.config.sync.remote and _live(layout):
        raise Blocked(f"this clone holds remote tasks ({', '.join(_live(layout))}): end them before switching modes")
    _write_switch(layout, "", layout.config.sync.machine)
    return show(layout, "")


def heartbeat(layout: Layout, task: str) -> HeartbeatData:
    remote = remote_role(open_store(layout))
    lease = remote.heartbeat(task)
    return HeartbeatData(task=task, machine=lease.machine, expires_at=lease.expires_at)


def sync(layout: Layout) -> RemoteStatusData:
    """Merges and pushes both notes refs (a write whose push kept being refused goes out here)."""
    store = open_store(layout)
    remote = remote_role(store)
    for ref in (NOTES_REF, VERDICTS_REF):
        if layout.git().rev_parse(ref) is not None:
            remote.sync_notes(ref)
    return status(store)


def check(layout: Layout, name: str | None) -> RemoteCheckData:
    """Pushes, reads back and deletes probe refs: custom namespaces, notes, and --atomic honoured (on
    branches when custom refs are refused: the state branch relies on it there)."""
    git = layout.git()
    r = Remote(git, name or layout.config.sync.remote or "origin")
    url, head = r.url(), git.rev_parse("HEAD")
    if head is None:
        raise BadInput("the host check pushes probe refs at HEAD: commit something first")
    probe = f"{socket.gethostname()}-{os.getpid()}-{time.time_ns()}"
    a, n = f"refs/spark/check/{probe}/a", f"refs/notes/spark-check-{probe}"
    custom = _made(r, a, head)
    notes = _made(r, n, head)
    pair = (a, f"refs/spark/check/{probe}/b") if custom else (f"refs/heads/spark-check/{probe}/a", f"refs/heads/spark-check/{probe}/b")
    atomic = _atomic(r, pair, head)
    made = {x: head for x in (a, n, pair[0]) if r.ls(x).get(x) == head}
    if made:
        r.push(dict.fromkeys(made), dict(made))
    return RemoteCheckData(remote=r.name, url=url, custom_refs=custom, notes_refs=notes, atomic=atomic, needs_state_branch=not (custom and notes))


def _made(r: Remote, ref: str, head: str) -> bool:
    """`ref` pushed (must not exist) and read back at `head`."""
    return r.push({ref: head}, {ref: None}).ok and r.ls(ref).get(ref) == head


def _atomic(r: Remote, pair: tuple[str, str], head: str) -> bool:
    """b must not exist, a must: a's lease is wrong on purpose, so an honoured --atomic moves neither."""
    a, b = pair
    if r.ls(a).get(a) != head and not _made(r, a, head):
        return False
    refused = r.push({b: head, a: None}, {b: None, a: "0" * 39 + "1"})
    return not refused.ok and b not in r.ls(b) and r.ls(a).get(a) == head
