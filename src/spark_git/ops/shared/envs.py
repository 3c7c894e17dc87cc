"""Per-worktree environment: SPARK_* variables and a SPARK_PORT unique across the repo's live
worktrees. Ports are recorded in the Store (`<tasks_root>/ports.json` locally), under the `ports`
mutex (a leaf in the lock order: nothing else is locked while it is held). A port is free again as
soon as its worktree directory or its task's lock is gone, so cleanup frees ports without calling
here; `release()` frees one explicitly."""

from __future__ import annotations

from pathlib import Path

from spark_git.core import suggest
from spark_git.core.caller import agent_session, gate_session
from spark_git.core.errors import BadInput, Blocked
from spark_git.core.git import clean_env
from spark_git.ops.shared.taskfile import load_task
from spark_git.state.models import PortEntry, PortsFile
from spark_git.state.store import Store

PORTS = "ports"


def _live(store: Store, e: PortEntry) -> bool:
    return Path(e.worktree).is_dir() and store.has_task(e.task)


def _bindable(port: int) -> bool:
    # Skip ports some other program already listens on (a dev server started outside spark-git).
    import socket  # here: its import defines a dozen enums (≈ 2 ms of every command that imports envs)

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def allocate(store: Store, task: str, agent: str | None, worktree: Path) -> int:
    """The worktree's port: its recorded one if still live, else the lowest free port of the range."""
    rng = store.layout.config.ports
    if rng.end < rng.start:
        raise BadInput(f"ports: end {rng.end} is below start {rng.start}")
    wt = str(worktree)
    with store.mutex(PORTS):
        pf = store.read_ports()
        live = [e for e in pf.ports if _live(store, e)]
        for e in live:
            if e.worktree == wt:
                if len(live) != len(pf.ports):
                    store.write_ports(PortsFile(ports=live))
                return e.port
        taken = {e.port for e in live}
        for port in range(rng.start, rng.end + 1):
            if port not in taken and _bindable(port):
                live.append(PortEntry(port=port, task=task, agent=agent, worktree=wt))
                store.write_ports(PortsFile(ports=live))
                return port
    raise Blocked(
        f"no free port in the configured range {rng.start}-{rng.end} ({len(taken)} live worktrees hold one)",
        hint="widen [ports] start/end in the config, or clean up finished tasks",
    )


def release(store: Store, task: str, agent: str | None = None, *, all_of_task: bool = False) -> list[int]:
    """Frees the port of one worktree (or every worktree of the task). Returns the freed ports."""
    if not store.read_ports().ports:  # nothing to free: no need to wait for the mutex
        return []
    with store.mutex(PORTS):
        pf = store.read_ports()
        keep, freed = [], []
        for e in pf.ports:
            if e.task == task and (all_of_task or e.agent == agent):
                freed.append(e.port)
            else:
                keep.append(e)
        if freed:
            store.write_ports(PortsFile(ports=keep))
    return freed


def spark_vars(store: Store, task: str, agent: str | None = None, session: str | None = None, *, need_port: bool = True) -> dict[str, str]:
    """SPARK_* for one worktree of a task (allocates its port if needed). need_port=False: an
    exhausted port range leaves SPARK_PORT empty instead of refusing (gates must not fail on it)."""
    tf = load_task(store, task)
    if agent is not None and agent not in tf.agents:
        raise BadInput(f"task {task!r} has no agent {agent!r}{suggest.did_you_mean(agent, tf.agents)}", hint=f"agents: {', '.join(tf.agents) or 'none'}", task=task, next=[f"spark-git status {task}"])
    task_wt = store.layout.task_worktree(task)
    wt = Path(tf.agents[agent].worktree) if agent else task_wt
    try:
        port = str(allocate(store, task, agent, wt))
    except Blocked:
        if need_port:
            raise
        port = ""
    return {
        "SPARK_TASK": task,
        "SPARK_AGENT": agent or "",
        # an agent's own identity, never the owner's session (core/caller.py)
        "SPARK_SESSION_ID": agent_session(task, agent) if agent else session or tf.session_id,
        "SPARK_WORKTREE": str(wt),
        "SPARK_TASK_WORKTREE": str(task_wt),
        "SPARK_PORT": port,
    }


def for_worktree(store: Store, task: str, agent: str | None = None) -> dict[str, str]:
    """The environment gates and setup commands run with (and an agent's client, when spark-git starts
    one): the process environment without variables that would point git at another repository, plus
    SPARK_* of the worktree. They run the agents' code: in an agent worktree as that agent, in the
    task worktree as the task's gate, never as the owner (core/caller.py refuses both the
    coordinator's commands)."""
    env = clean_env()
    env.update(spark_vars(store, task, agent, need_port=False))
    if agent is None:
        env["SPARK_SESSION_ID"] = gate_session(task)
    return env
