"""`spark-git agent run TASK AGENT`: the agent's client started in its worktree with its own identity,
briefed (the Universal Input JSON, seed 004) and, headless, heard: a final Universal Output JSON
becomes the agent's report (the same code as `report --evidence`), anything else a failed run.

A run is recorded in `<agent dir>/run.json` while it lives (a second run of the agent is refused;
`doctor` finds one a crash left behind) and, once over, in the audit trail (`agent_run` event)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from spark_git.clients import extras, registry, runout
from spark_git.clients.base import Client
from spark_git.core import gatebox, proc, reach, suggest
from spark_git.core.caller import agent_session
from spark_git.core.errors import BadInput, Blocked, Interrupted
from spark_git.core.git import Git, branch_ref
from spark_git.core.layout import Layout, agent_name, task_name
from spark_git.core.model import Model
from spark_git.ops.life import agentbox, handin, owed, reports
from spark_git.ops.life import brief as ops_brief
from spark_git.ops.shared import envs, hooksetup
from spark_git.ops.shared.agentruns import EXIT_FILE, RUN_FILE, RunRecord, running
from spark_git.ops.shared.merging.sync import sync_with
from spark_git.ops.shared.taskfile import load_task
from spark_git.state.backends import open_store
from spark_git.state.files import create_exclusive, write_atomic
from spark_git.state.models import now
from spark_git.state.store import Store

# What the boundary keeps from agents: the user's SSH agent (push anywhere as them) and where the
# approval signing key and the verdict key live (core/sshsig.py, gates/verdictkey.py). Leaving the
# variable out does not hide the default ~/.local/state: the client's sandbox does that.
WITHHELD = ("SSH_AUTH_SOCK", "XDG_STATE_HOME")
# seed 004's Output status -> the report status it files (docs/decisions.md)
STATUS_OF = {"OK": "COMPLETE", "BLOCKED": "BLOCKED", "NEEDS_INFO": "WAITING", "NEEDS_DECISION": "WAITING", "FAIL": "ERROR"}
FINISH = ("When you are done, commit your work in your worktree, then answer with ONLY the Universal Output JSON "
          "(seed 004): {\"status\": \"OK|BLOCKED|NEEDS_INFO|NEEDS_DECISION|FAIL\", \"summary\": \"...\", "
          "\"artifacts\": {\"files_changed\": [...]}, \"gates\": {...}, \"next\": {...}} — no other text. "
          "With status OK it must also carry what your brief's `owes` lists: spark-git files it for you.")
TIMEOUT_S = 3600.0
# What keeps the agent in its worktree besides the hook (AgentRunData.boundary): spark-git's bubblewrap
# around the client (ops/life/agentbox.py; the client's own sandbox, where it has one, inside it), or
# nothing (no bubblewrap, accepted with --unboxed).
BWRAP_BOX, NO_BOX = "bubblewrap", "none"


class AgentRunData(Model):
    task: str
    agent: str
    client: str
    mode: str
    exit_code: int | None = None
    duration_s: float | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    outcome: str  # reported | failed | interrupted | started (tmux) | ended (tmux: the window's client exited)
    ended: str | None = None  # how the run ended, in words: "reported COMPLETE", "exited 2", "timed out after 3600 s", "interrupted", "killed by signal 9"
    boundary: str  # bubblewrap | none: the OS boundary the client ran in (BWRAP_BOX, NO_BOX)
    report_status: str | None = None
    incomplete: str | None = None  # why a COMPLETE answer was filed as IN_PROGRESS: what it owed and lacked (ops/life/owed.py)
    task_head: str | None = None  # the task head the agent started on (a reviewer's decision is bound to it)
    evidence: str | None = None
    last_words: str | None = None
    log: str | None = None
    window: str | None = None


def prepared(layout: Layout, store: Store, task: str, agent: str, client: str, *, unboxed: bool = False) -> tuple[str, str, Client, Path]:
    """Every check before anything starts: task, agent, client known and installed, its hooks and
    sandbox loading in the agent's worktree, an OS boundary for it (or `unboxed` accepted), no run of
    the agent alive. (task, agent, client, worktree)."""
    task, agent = task_name(task), agent_name(agent)
    if client not in registry.CLIENTS:
        raise BadInput(f"unknown client {client!r}{suggest.did_you_mean(client, registry.CLIENTS)}: use {', '.join(registry.CLIENTS)}", next=[f"spark-git agent run {task} {agent} --client {suggest.near(client, registry.CLIENTS) or registry.DEFAULT}"])
    c = registry.get(client)
    tf = load_task(store, task)
    if agent not in tf.agents:
        raise BadInput(f"task {task!r} has no agent {agent!r}{suggest.did_you_mean(agent, tf.agents)}", details={"agents": sorted(tf.agents)}, task=task,
                       next=[f"spark-git agent run {task} {a}" for a in sorted(tf.agents)[:1]] or [f"spark-git status {task}"])
    if c.facts.run is None or shutil.which(c.facts.run.headless[0]) is None:
        exe = c.facts.run.headless[0] if c.facts.run else client
        raise Blocked(f"{c.facts.title} is not installed here (`{exe}` is not on PATH)", hint=f"install {c.facts.title}, or choose another --client",
                      next=[f"spark-git agent run {task} {agent} --client {n}" for n in registry.CLIENTS if n != client][:1], task=task)
    _boundary(layout, store, task, agent, c)
    if gatebox.bwrap() is None and not unboxed:
        raise Blocked(f"bubblewrap (bwrap) is not installed, and `agent run` starts every agent inside it: without it agent {agent} "
                      f"({c.facts.title}), and every script it runs, could write outside its worktree, move main through .git and read "
                      "the user's files (the client's own sandbox, where it has one, covers only some of its tools)",
                      hint="install bubblewrap, or accept running the agent without an OS boundary with --unboxed",
                      next=[f"spark-git agent run {task} {agent} --client {c.name} --unboxed"], task=task)
    live = running(layout, task, agent)
    if live is not None:
        raise Blocked(f"agent {agent} of task {task} is already running ({live.client}, pid {live.pid}, since {live.started_at})",
                      hint="wait for it to finish, or stop it", next=[f"spark-git status {task}"], task=task)
    return task, agent, c, Path(tf.agents[agent].worktree)


# Another agent's sandboxed command adds and removes mount points in the common dir (`agent run --all`
# runs several at once), so a sandbox refreshed a moment before the check can already differ from the
# one the check wants: refreshed and checked again, a few times, before it counts as missing.
SETTLE_TRIES = 3


def _boundary(layout: Layout, store: Store, task: str, agent: str, c: Client) -> None:
    """`hooks check` for this worktree and client: refused (exit 3) with its fix unless both load.
    The sandboxes are brought up to date with the common dir first (a client's earlier run leaves
    mount points there, which makes every sandbox look stale), as `hooks install` would."""
    for _ in range(SETTLE_TRIES):
        extras.of(c).refresh(layout, store)
        rows = [k for k in hooksetup.check(layout, store).checks if k.task == task and k.agent == agent and k.client == c.name]
        if not rows or rows[0].sandbox is not False:
            break
    fix = f"spark-git hooks install --client {c.name}"
    pending = _uncommitted(layout, c)
    if pending and not (rows and rows[0].source):  # no hook file in the worktree, uncommitted in main: worktrees start from the base branch
        files = " ".join(shlex.quote(f) for f in pending)
        main = shlex.quote(str(layout.main_worktree))
        raise Blocked(f"{c.facts.title}'s hooks are installed in the main worktree but not committed ({', '.join(pending)}): "
                      f"agent {agent}'s worktree, made from the base branch, does not load them",
                      hint="commit them on the base branch, then bring the task up to date",
                      next=[f"git -C {main} add -- {files} && git -C {main} commit -m 'spark-git hooks for {c.name}' -- {files}",
                            f"spark-git update {task}"], task=task)
    if not rows:
        raise Blocked(f"{c.facts.title}'s hooks are not installed for this repository: an agent would run without spark-git's checks",
                      hint=f"`{fix}`, commit its settings, then `spark-git update {task}`", next=[fix], task=task)
    k = rows[0]
    problems = [p for p in (None if k.loads else k.problem or "the hooks do not load", *k.switched_off) if p]
    if k.sandbox is False:
        problems.append(f"{c.facts.title}'s sandbox is missing in {k.worktree}")
    if problems:
        raise Blocked(f"{c.facts.title} in agent {agent}'s worktree would run outside spark-git's boundary: " + "; ".join(problems),
                      hint="fix what `spark-git hooks check` lists", next=["spark-git hooks check", fix], task=task)


def _uncommitted(layout: Layout, c: Client) -> list[str]:
    """The files of the client's project config (its directory, settings files) present in the main
    worktree and not committed as they are."""
    own = [Path(c.facts.config_dir), *(p for p in c.settings_files().values() if not p.is_absolute())]
    rels = [str(p) for p in own if (layout.main_worktree / p).exists()]
    out = layout.git().run("status", "--porcelain", "--untracked-files=all", "--", *rels).stdout if rels else ""
    return [ln[3:] for ln in out.splitlines() if ln.strip()]


def agent_env(layout: Layout, store: Store, task: str, agent: str) -> dict[str, str]:
    """The user's environment (API keys, base URLs, proxies, CODEX_HOME…) with the agent's SPARK_*
    identity over it, and what the boundary keeps from agents taken out. The user's git identity is
    given as GIT_AUTHOR_*/GIT_COMMITTER_*: a client that hides the user's git config from its shell
    (Gemini CLI sets GIT_CONFIG_GLOBAL=/dev/null) would leave its agent unable to commit."""
    env = envs.for_worktree(store, task, agent)
    for k in WITHHELD:
        env.pop(k, None)
    git = layout.git()
    for part in ("name", "email"):
        value = env.get(f"GIT_AUTHOR_{part.upper()}") or git.config_get(f"user.{part}")
        for who in ("AUTHOR", "COMMITTER"):
            if value and not env.get(f"GIT_{who}_{part.upper()}"):
                env[f"GIT_{who}_{part.upper()}"] = value
    return env


def launch(layout: Layout, c: Client, wt: Path, env: dict[str, str], *, headless: bool = True) -> tuple[gatebox.Sandbox | None, dict[str, str], str]:
    """(spark-git's box to start the client in, its env, the boundary): every client goes inside
    bubblewrap when there is one (prepared() refused its absence unless accepted)."""
    box = agentbox.for_agent(layout, c, wt, env, headless=headless)
    return (None, env, NO_BOX) if box is None else (box, agentbox.boxed_env(env), BWRAP_BOX)


def model_open(c: Client, env: dict[str, str], task: str, agent: str, extra: tuple[str, ...]) -> None:
    """Refused before anything starts when the client's model cannot be reached: the clients retry
    for minutes and tell why only at the end."""
    url = extras.of(c).model_url(c.facts, env, extra)
    why = reach.problem(url, env) if url else None
    if why:
        raise Blocked(f"{c.facts.title} cannot reach its model at {url}: {why}; agent {agent} was not started",
                      hint="check where the client is pointed (its base URL setting), the network and any proxy; then run it again",
                      next=[again(task, agent, c.name, extra)], task=task)


def default_prompt(layout: Layout, store: Store, task: str, agent: str) -> str:
    b = ops_brief.brief(layout, store, task, agent)
    return ("You are agent " + agent + " of spark-git task " + task + ". Your brief, the Universal Input JSON (seed 004):\n"
            + json.dumps(b.model_dump(mode="json"), indent=2) + "\n\n" + FINISH)


def headless(layout: Layout, task: str, agent: str, client: str, *, prompt: str | None = None,
             extra: tuple[str, ...] = (), timeout_s: float = TIMEOUT_S, unboxed: bool = False) -> AgentRunData:
    store = open_store(layout)
    handin.file_handed_in(layout, store, task_name(task))
    task, agent, c, wt = prepared(layout, store, task, agent, client, unboxed=unboxed)
    assert c.facts.run is not None
    base_env = agent_env(layout, store, task, agent)
    model_open(c, base_env, task, agent, extra)
    seen = on_task_head(layout, store, task, agent, c.name, extra)
    tf = load_task(store, task)
    owes = owed.owed(tf.state, tf.agents[agent].role)
    box, env, boundary = launch(layout, c, wt, base_env)
    argv = c.facts.run.argv(prompt or default_prompt(layout, store, task, agent), extra=extra)
    argv = box.wrap(argv) if box else argv
    logs = layout.agent_dir(task, agent) / "runs"
    logs.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    out_path, err_path = logs / f"{stamp}-{c.name}.jsonl", logs / f"{stamp}-{c.name}.stderr"
    rec_path = layout.agent_dir(task, agent) / RUN_FILE
    rec = RunRecord(task=task, agent=agent, client=c.name, mode="headless", pid=os.getpid(), started_at=now())
    if not create_exclusive(rec_path, rec):  # a dead run's record: replaced (prepared() saw it was not alive)
        write_atomic(rec_path, rec)
    t0 = time.monotonic()
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            r = proc.run(argv, wt, out, timeout_s, env=env, err=err)
    except (Interrupted, KeyboardInterrupt):  # Ctrl-C (the client got it too, and may well have exited 0): told as it is, then passed on
        d = AgentRunData(task=task, agent=agent, client=c.name, mode="headless", duration_s=round(time.monotonic() - t0, 3), outcome="interrupted",
                         ended="interrupted", boundary=boundary, log=str(out_path), last_words=_tail(err_path) or None)
        store.event(task, "agent_run", session=agent_session(task, agent), **d.model_dump(exclude_none=True, exclude={"task"}))
        raise
    finally:
        rec_path.unlink(missing_ok=True)
    heard = runout.read(out_path.read_text(errors="replace"))
    d = AgentRunData(task=task, agent=agent, client=c.name, mode="headless", exit_code=r.exit_code, duration_s=r.duration_s,
                     tokens=heard.tokens, cost_usd=heard.cost_usd, outcome="failed", boundary=boundary, log=str(out_path), task_head=seen)
    _hear(layout, store, d, heard, err_path, logs / f"{stamp}-output.json", owes)
    d.ended = ended(d.outcome, d.report_status, r.exit_code, r.timed_out, timeout_s)
    store.event(task, "agent_run", session=agent_session(task, agent), **d.model_dump(exclude_none=True, exclude={"task"}))
    return d


def ended(outcome: str, report_status: str | None, exit_code: int | None, timed_out: bool = False, timeout_s: float = TIMEOUT_S) -> str:
    """How a run ended, in words (status, the --all table and doctor say it the same way)."""
    if outcome == "reported":
        return f"reported {report_status}"
    if timed_out:
        return f"timed out after {timeout_s:g} s"
    if exit_code is None:
        return outcome
    if exit_code < 0:
        return f"killed by signal {-exit_code}"
    return f"exited {exit_code}" + (" without an Output JSON" if exit_code == 0 else "")


def on_task_head(layout: Layout, store: Store, task: str, agent: str, client: str, extra: tuple[str, ...] = ()) -> str | None:
    """A reviewer, or any agent in VALIDATION, starts on the current task head: its branch is synced
    first (a conflict stops the run, left for the agent to resolve as `sync` leaves it). The head the
    agent starts on, which its decision is bound to."""
    tf = load_task(store, task)
    head = layout.git().branch_head(tf.task_branch)
    if tf.agents[agent].role != "reviewer" and tf.state != "VALIDATION":
        return head
    d = sync_with(layout, store, task, agent, session=agent_session(task, agent))
    if d.conflicts:
        wt = shlex.quote(tf.agents[agent].worktree)
        raise Blocked(f"agent {agent}'s branch conflicts with the task head {d.task_head[:12]} in {', '.join(d.conflicts)}: the run did not start",
                      hint="resolve the conflicts in its worktree, `git add` them and `GIT_EDITOR=true git rebase --continue`, then run it again",
                      details={"conflicts": d.conflicts}, next=[f"cd {wt} && git status", again(task, agent, client, extra)], task=task)
    return d.task_head


def again(task: str, agent: str, client: str, extra: tuple[str, ...] = ()) -> str:
    """The command that runs the agent again, its client arguments kept."""
    return " ".join(["spark-git agent run", task, agent, "--client", client, *(["--", *map(shlex.quote, extra)] if extra else [])])


def after_run(layout: Layout, store: Store, d: AgentRunData, extra: tuple[str, ...] = ()) -> list[str]:
    """The coordinator's step after one headless run: the run again when it failed or lacked what it
    owed; an updater's work merged; else what the state asks next."""
    if d.outcome != "reported" or d.incomplete:
        return [again(d.task, d.agent, d.client, extra)]
    tf = load_task(store, d.task)
    if layout.config.protocol == "light" or (tf.agents[d.agent].role == "updater" and tf.state == "IMPLEMENTATION"):
        return [f"spark-git merge {d.task} --agent {d.agent}"]
    return [f"spark-git approve {d.task} --plan" if tf.state == "SYNTHESIS" else f"spark-git advance {d.task}"]


def _hear(layout: Layout, store: Store, d: AgentRunData, heard: runout.Heard, err_path: Path, evidence: Path, owes: list[owed.Owe]) -> None:
    """A final Output JSON: the agent's report (its evidence kept as `report --evidence` keeps it, and
    what the state asked of it filed); anything else: a failed run, with the client's last words."""
    data = runout.output_json(heard.final) if d.exit_code == 0 else None
    status = STATUS_OF.get(str(data.get("status"))) if data else None
    if data is None or status is None:
        words = heard.final.strip() or _cause(_tail(err_path, 20000))
        d.last_words = words[-2000:] if words else "(the client said nothing)"
        return
    evidence.write_text(json.dumps(data, indent=2) + "\n")
    lacks = owed.problems(data, owes, layout.config.rules.requirements_min_bytes) if status == "COMPLETE" else []
    why = [f"the Output JSON lacks what {d.task}'s state owes: " + "; ".join(lacks)] if lacks else []
    why += _uncommitted_work(layout, store, d.task, d.agent) if status == "COMPLETE" else []
    if why:  # never silently COMPLETE: filed as unfinished, with the reason
        status, d.incomplete = "IN_PROGRESS", "; ".join(why)
    try:
        report_path = _file_owed(layout, store, d, data, owes) if status == "COMPLETE" else None
        decision = str(data["decision"]) if status == "COMPLETE" and owed.DECISION in owes else None
        reports.report(layout, store, d.task, d.agent, status=status, session=agent_session(d.task, d.agent), evidence=[str(evidence)],
                       feedback=d.incomplete or owed.feedback(data), decision=decision, report_path=report_path, cwd=evidence.parent, seen=d.task_head)
    except BadInput as e:  # not a valid 004 Output JSON after all: the run failed
        d.last_words = f"{e.message}\n{heard.final.strip()[-1500:]}"
        return
    d.outcome, d.report_status, d.evidence = "reported", status, str(evidence)


def _uncommitted_work(layout: Layout, store: Store, task: str, agent: str) -> list[str]:
    """An implementer that reports COMPLETE with nothing committed and a dirty tree: its work is not
    on its branch (a `git commit` that failed), so it is not COMPLETE."""
    tf = load_task(store, task)
    if tf.state != "IMPLEMENTATION" and layout.config.protocol != "light":
        return []
    e = tf.agents[agent]
    dirty = [x.path for x in Git(Path(e.worktree)).status()]
    if not dirty or layout.git().count(f"{branch_ref(tf.task_branch)}..{branch_ref(e.branch)}"):
        return []
    return [f"{agent} reported COMPLETE but committed nothing and left {len(dirty)} uncommitted file(s) ({', '.join(dirty[:3])}): commit them in its worktree, or run the agent again"]


def _file_owed(layout: Layout, store: Store, d: AgentRunData, data: dict[str, object], owes: list[owed.Owe]) -> str | None:
    """The requirements report and the plan section the answer carries, filed; the report's path."""
    path = None
    for o in owes:
        if o.kind == "requirements":
            path = owed.file_requirements(layout, d.task, d.agent, str(data[o.key]))
        elif o.kind == "plan":
            owed.file_plan(layout, store, d.task, d.agent, str(data[o.key]))
    return path


def _cause(err: str) -> str:
    """A client's stderr told from its cause: the lines that are not stack frames (`    at …`,
    `File "…", line …`), the first error among them first (an unreachable model: the connection
    error, not 282 s of retries' frames)."""
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.lstrip().startswith(("at ", "File \"", "^"))]
    first = next((ln for ln in lines if any(k in ln for k in ("Error", "error", "ECONNREFUSED", "ENOTFOUND", "ETIMEDOUT", "fetch failed"))), None)
    rest = "\n".join(lines)[-1500:]
    return f"{first.strip()}\n…\n{rest}" if first and first not in rest else rest


def _tail(path: Path, n: int = 2000) -> str:
    try:
        return path.read_text(errors="replace").strip()[-n:]
    except OSError:
        return ""


TMUX_SESSION = "spark-git"  # the tmux session agent windows open in (created when none is running)


def in_tmux(layout: Layout, task: str, agent: str, client: str, *, prompt: str | None = None, extra: tuple[str, ...] = (),
            unboxed: bool = False) -> AgentRunData:
    """The interactive client in a tmux window named TASK/AGENT, its environment exactly the agent's
    (`env -i`: the tmux server's own environment may be the user's and hold what agents must not)."""
    store = open_store(layout)
    task, agent, c, wt = prepared(layout, store, task, agent, client, unboxed=unboxed)
    assert c.facts.run is not None
    if shutil.which("tmux") is None:
        raise Blocked("tmux is not installed here", hint="install tmux, or run the agent headless", next=[f"spark-git agent run {task} {agent} --headless"], task=task)
    base_env = agent_env(layout, store, task, agent)
    model_open(c, base_env, task, agent, extra)
    on_task_head(layout, store, task, agent, c.name, extra)
    box, env, boundary = launch(layout, c, wt, base_env, headless=False)
    cmd = ["env", "-i", *(f"{k}={v}" for k, v in sorted(env.items())), *c.facts.run.argv(prompt or default_prompt(layout, store, task, agent), headless=False, extra=extra)]
    cmd = box.wrap(cmd) if box else cmd
    # The window's shell (outside the box) waits for the client and writes its exit code where status and doctor read it
    exit_file = layout.agent_dir(task, agent) / EXIT_FILE
    exit_file.unlink(missing_ok=True)
    cmd = ["sh", "-c", '"$@"; echo $? > "$0"', str(exit_file), *cmd]
    window = f"{task}/{agent}"
    has = _tmux("has-session", "-t", TMUX_SESSION)
    verb = ["new-window", "-t", f"{TMUX_SESSION}:"] if has.returncode == 0 else ["new-session", "-d", "-s", TMUX_SESSION]
    r = _tmux(*verb, "-P", "-F", "#{pane_pid}", "-n", window, "-c", str(wt), *cmd)
    if r.returncode != 0 or not r.stdout.strip().isdigit():
        raise Blocked(f"tmux could not open window {window}: {r.stderr.strip() or r.stdout.strip()}", next=[f"spark-git agent run {task} {agent} --headless"], task=task)
    rec = RunRecord(task=task, agent=agent, client=c.name, mode="tmux", pid=int(r.stdout.strip()), started_at=now(), window=window)
    write_atomic(layout.agent_dir(task, agent) / RUN_FILE, rec)
    d = AgentRunData(task=task, agent=agent, client=c.name, mode="tmux", outcome="started", boundary=boundary, window=window)
    store.event(task, "agent_run", session=agent_session(task, agent), **d.model_dump(exclude_none=True, exclude={"task"}))
    return d


def _tmux(*args: str) -> subprocess.CompletedProcess[str]:
    """A tmux client command (it returns at once; the window's process belongs to the tmux server).
    $TMUX unset: not nested in the caller's own tmux client; TMUX_TMPDIR picks the server."""
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    return subprocess.run(["tmux", *args], env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
