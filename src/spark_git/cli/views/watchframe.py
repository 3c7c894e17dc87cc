"""One frame of `spark-git watch` as plain lines fitted to a width: what `watch --once` prints and
what the live app (cli/views/watchapp.py) draws in its panes. What waits on the human comes first."""

from __future__ import annotations

from spark_git.cli import fit
from spark_git.ops.views.watch import WatchSnapshot


def duration(secs: float | None) -> str:
    from spark_git.state.locks import human_duration

    return "?" if secs is None else human_duration(secs)


def attention_lines(s: WatchSnapshot, w: int | None) -> list[str]:
    if not s.attention:
        return ["WAITS ON YOU: nothing"]
    lines = [f"WAITS ON YOU ({len(s.attention)})"]
    for a in s.attention:
        lines += fit.wrap(f"! {a.kind}: {a.text}", w, "  ")
        if a.next:
            lines.append(f"    → {a.next}")  # whole: meant to be pasted
    return lines


def task_lines(s: WatchSnapshot, w: int | None) -> list[str]:
    if not s.tasks:
        return ["TASKS: none live"]
    rows = [["TASK", "STATE", "OWNER", "IDLE", "AGENTS", "QUEUE"]]
    rows += [[t.task, t.state, t.owner or "-", duration(t.idle_s), str(t.agents), f"#{t.queue_position}" if t.queue_position else "-"]
             for t in s.tasks]
    return [f"TASKS ({len(s.tasks)})", *fit.table(rows, w, {2: 8})]


def agent_lines(s: WatchSnapshot, w: int | None) -> list[str]:
    if not s.agents:
        return ["AGENTS: none"]
    rows = [["TASK", "AGENT", "DOING", "CLIENT", "FOR", "LAST WORDS"]]
    rows += [[a.task, a.agent, a.doing, a.client or "-", duration(a.elapsed_s) if a.elapsed_s is not None else "-", a.last_words or "-"]
             for a in s.agents]
    return ["AGENTS", *fit.table(rows, w, {5: 10})]


def running_lines(s: WatchSnapshot, w: int | None) -> list[str]:
    """Gates and merges in flight: which, where, for how long, the log's last lines."""
    if not s.running:
        return ["RUNNING: no gate or merge"]
    lines = [f"RUNNING ({len(s.running)})"]
    for r in s.running:
        what = {"gate": f"gate {r.name}", "merge": f"merge of {r.name}"}.get(r.kind, f"merge queue candidate {r.name}")
        lines += fit.wrap(f"{r.task}: {what}, {duration(r.elapsed_s)}" + (f", in {r.worktree}" if r.worktree else ""), w, "  ", hang="    ")
        lines += [f"    │ {fit.middle(ln, w - 6) if w else ln}" for ln in r.tail]
    return lines


def remote_lines(s: WatchSnapshot, w: int | None) -> list[str]:
    """Remote mode: when the shared remote was last fetched, and what the other machines hold."""
    r = s.remote
    if r is None:
        return []
    lines = fit.wrap(f"REMOTE {r.remote}: fetched at {r.fetched_at[11:19]} UTC (this machine: {r.machine})", w, hang="  ")
    for t in r.elsewhere:
        stale = ", lease expired" if t.stale else ""
        lines += fit.wrap(f"  {t.task}  {t.state or '?'}  on {t.machine} ({t.session or '?'}){stale}", w, hang="    ")
    return lines


def other_lines(s: WatchSnapshot, w: int | None) -> list[str]:
    lines = [*remote_lines(s, w), *fit.wrap(f"QUEUE: {', '.join(s.queue) if s.queue else 'empty'}", w, hang="  ")]
    if not s.pairs:
        lines.append("RADAR: no two live tasks would conflict")
    for c in s.pairs:
        lines += fit.wrap(f"RADAR: {c.task} and {c.other} would conflict in {', '.join(c.files)}", w, hang="  ")
    for warning in s.warnings:
        lines += fit.wrap(f"⚠ {warning}", w, hang="  ")
    return lines


def frame(s: WatchSnapshot, w: int | None) -> list[str]:
    head = fit.wrap(f"spark-git watch  {s.tasks_root}  at {s.at}", w)
    return [*head, "", *attention_lines(s, w), "", *task_lines(s, w), "", *agent_lines(s, w), "", *running_lines(s, w), "", *other_lines(s, w)]
