"""How `status` reads at a terminal: one line per task by default (a table fitted to the width), the
full picture of a task with its name or `--agents`. Lines are built as plain text, fitted (cli/fit.py),
then printed without markup so a bracket in a name or a message prints as it is."""

from __future__ import annotations

from typing import Any

from spark_git.cli import fit
from spark_git.cli.common import Out
from spark_git.ops.views.status import NEVER_REPORTED, Running, StatusData, TaskView

HEADER = ["TASK", "STATE", "OWNER", "IDLE", "AGENTS", "QUEUE", "PROBLEMS"]
# Columns that give up characters (index -> what each keeps), in stages: task, owner and agents first,
# then problems (the news); state, idle time and queue position stay whole. A task or owner name cut
# to fit is printed whole on the line below its row (it is copied into commands).
SHRINK = ({0: 12, 2: 8, 4: 14}, {6: 24})
WHOLE = {0: "task", 2: "owner"}


def render(out: Out, d: StatusData, *, detail: bool, width: int | None) -> None:
    ml = d.main_lock
    for ln in fit.wrap(f"main lock: {'held by ' + str(ml.session_id) + ' (' + str(ml.idle) + ')' if ml.held else 'free'}", width):
        _line(out, ln)
    for w in d.warnings:
        for ln in fit.wrap(f"⚠ {w}", width, hang="  "):
            _line(out, ln)
    if detail:
        for t in d.tasks:
            for ln in task_lines(t, width):
                _line(out, ln)
    elif d.tasks:
        for ln in summary_table(d.tasks, width) + [ln for t in d.tasks for ln in in_flight(t, width, tail=False)]:
            _line(out, ln)
    for c in d.cross_conflicts:  # before either lands: the order, or talking, can still avoid it
        for ln in fit.wrap(f"⚠ tasks {c.task} and {c.other} would conflict when both land: {', '.join(c.files)}", width, hang="  "):
            _line(out, ln)
    if d.ended_hidden:
        n = len(d.ended_hidden)
        _line(out, f"{n} ended task{'s' if n != 1 else ''} not shown (spark-git status --all lists them)")


def _line(out: Out, text: str) -> None:
    out.print(text, markup=False, highlight=False)


def summary_table(tasks: list[TaskView], width: int | None) -> list[str]:
    """One row per task. The problems cell holds every problem when they fit, else counts by kind
    ("1 conflict, 3 silent"), whole, and "+N more": never half of one."""
    rows = [summary_row(t) for t in tasks]
    ws = fit.widths([HEADER, *rows], width, *SHRINK)
    for row, t in zip(rows, tasks, strict=True):
        found = problems(t) if t.state not in ("ENDED", None) else []
        if found and width is not None and len(row[-1]) > ws[-1]:
            counts: dict[str, int] = {}
            for _, kind, n in found:
                counts[kind] = counts.get(kind, 0) + n
            row[-1] = fit.items([f"{n} {kind}" if n else kind for kind, n in counts.items()], ws[-1])
    out = fit.render([HEADER], ws)
    for row, line in zip(rows, fit.render(rows, ws), strict=True):
        out.append(line)
        cut = [f"{what} {row[i]}" for i, what in WHOLE.items() if len(row[i]) > ws[i]]
        if cut:
            out += fit.wrap("↳ " + "   ".join(cut), width, "  ", hang="    ") if width else ["  ↳ " + "   ".join(cut)]
    return out


def summary_row(t: TaskView) -> list[str]:
    if t.state == "ENDED":
        return [t.task, t.final_state or "ENDED", "-", "-", "-", "-", ""]
    if t.problem and t.state is None:
        return [t.task, "?", "-", "-", "-", "-", t.problem]
    idle = _idle(t.last_active_at)
    queue = f"#{t.queue_position}" if t.queue_position else "-"
    return [t.task, t.state or "?", t.session_id or "-", idle, agents_summary(t), queue, "; ".join(text for text, _, _ in problems(t)) or "-"]


def _idle(last_active_at: str | None) -> str:
    from spark_git.state.locks import human_duration
    from spark_git.state.models import now, parse_time

    try:
        return human_duration(max(0.0, (parse_time(now()) - parse_time(last_active_at or "")).total_seconds()))
    except ValueError:
        return "?"


def agents_summary(t: TaskView) -> str:
    if not t.agents:
        return "0"
    counts = (
        ("unmerged", sum(1 for a in t.agents if a.ahead)),
        ("dirty", sum(1 for a in t.agents if a.exists and a.dirty)),
        ("missing", sum(1 for a in t.agents if not a.exists)),
    )
    parts = [f"{n} {what}" for what, n in counts if n]
    return f"{len(t.agents)}" + (f" ({', '.join(parts)})" if parts else "")


def problems(t: TaskView) -> list[tuple[str, str, int]]:
    """What needs a look: (text, kind, how many; 0 for a kind that is not counted). One entry per
    kind of thing, never one per agent for the same thing."""
    out = [(t.problem, "bad state", 0)] if t.problem else []
    if t.provisioning == "in_progress":
        out.append(("start interrupted", "start interrupted", 0))
    if not t.worktree_exists:
        out.append(("task worktree missing", "worktree missing", 0))
    elif t.dirty:
        out.append(("task worktree dirty", "worktree dirty", 0))
    if t.gate and t.gate.result == "failed":
        out.append((f"gate {t.gate.token}", "gate failed", 0))
    if t.given_back:
        out.append((f"evicted from the queue ({t.given_back.result}): {t.given_back.reason}", "evicted from the queue", 0))
    for c in t.radar.conflicts if t.radar else []:
        out.append((f"conflict {c.agent}/{c.other or 'task'}: {', '.join(c.files)}", "conflict", 1))
    for c in t.radar.checked if t.radar else []:
        if c.combined:
            out.append((f"combined by a merge driver {c.agent}/{c.other or 'task'}: {', '.join(k.path for k in c.combined)}", "combined", 1))
    for a in t.agents:
        if a.report is not None and a.report.status in ("ERROR", "BLOCKED"):
            out.append((f"{a.name} {a.report.status}: {a.report.feedback or '(no message)'}", a.report.status.lower(), 1))
        elif any(f != NEVER_REPORTED for f in a.flags):
            out.append((f"{a.name}: {next(f for f in a.flags if f != NEVER_REPORTED)}", "flagged", 1))
    silent = [a.name for a in t.agents if NEVER_REPORTED in a.flags]
    if silent:
        text = f"{len(silent)} never reported" if len(silent) > 1 else f"{silent[0]} never reported"
        out.append((text, "silent", len(silent)))
    return out


def gate_head(t: TaskView) -> str:
    """Which head the last gate ran on, when it is not the task head (an update, a later commit)."""
    c = t.gate.commit if t.gate else None
    return f" on {c[:12]}, not this head" if c and t.head and c != t.head else ""


def task_lines(t: TaskView, w: int | None) -> list[str]:
    """The full picture of one task."""
    if t.state == "ENDED":
        how = {"CLEANUP": "cleaned up", "ABANDONED": "abandoned"}.get(t.final_state or "", "ended")
        return [f"{t.task}  {how} (no lock, no worktree; audit trail kept)"]
    if t.problem and t.state is None:
        return fit.wrap(f"{t.task}  {t.problem}", w)
    tree = "dirty" if t.dirty else ("clean" if t.dirty is not None else "missing")
    head = [t.task, t.state or "?", f"owner {t.session_id} ({t.idle})", f"{t.task_branch} @ {(t.head or '?')[:12]} +{t.commits_beyond_base}", f"worktree {tree}"]
    if t.gate:
        head.append(f"gate {t.gate.token}" + gate_head(t))
    if t.queue_position:
        head.append(f"queue #{t.queue_position}")
    lines = fit.fields(head, w)
    if t.problem:
        lines += fit.wrap(t.problem, w, "  ")
    if t.given_back:
        g = t.given_back
        way = f" → {g.next[0]}" if g.next else ""
        lines += fit.wrap(f"evicted: the merge queue gave this head back ({g.result}, {g.at}): {g.reason}{way}", w, "  ")
    for fl in t.flaky_gates:
        tests = f": {', '.join(fl.failed_tests[:5])}" if fl.failed_tests else ""
        lines += fit.wrap(f"flaky final gate ({fl.at}): failed {fl.failures}x, then passed on a retry{tests}", w, "  ")
    if t.forge:
        f = t.forge
        seen = f"not answered: {f.error}" if f.error else f.state + (f" as {f.merge_commit[:12]}" if f.merge_commit else "")
        lines += fit.wrap(f"forge ({f.via}): {f.url} for {f.head[:12]}, {seen}", w, "  ")
    if t.provisioning == "in_progress":
        lines += fit.wrap(f"start running or interrupted: worktrees may be missing; the owner runs `spark-git start {t.task}` again to finish", w, "  ")
    if t.agents:
        rows = [["agent", "branch", "ahead", "behind", "tree", "report", "run"]]
        for a in t.agents:
            tree = "missing" if not a.exists else ("dirty" if a.dirty else "clean")
            num = [str(x) if x is not None else "?" for x in (a.ahead, a.behind)]
            rows.append([a.name, a.branch, *num, tree, a.report.status if a.report else "-", run_cell(a.run)])
        lines += fit.table(rows, None if w is None else w - 2, {1: 16, 0: 12})
        lines[-len(rows):] = ["  " + ln for ln in lines[-len(rows):]]
    lines += in_flight(t, w, tail=True)
    lines += _flag_lines(t, w) + _radar_lines(t, w) + next_lines(t, w)
    return lines


def in_flight(t: TaskView, w: int | None, *, tail: bool) -> list[str]:
    """Its gates and merges running now, and the queue's candidate that holds it."""
    lines = [ln for r in t.running for ln in running_lines(t.task, r, w, tail=tail)]
    q = t.queue_run
    if q is not None:
        what = "landing" if q.landing else "gating"
        lines += fit.wrap(f"▶ {t.task}: the merge queue is {what} it, in a candidate of {' + '.join(q.tasks)}, for {_idle(q.started_at)}",
                          w, "  ", hang="    ")
    return lines


def running_lines(task: str, r: Running, w: int | None, *, tail: bool) -> list[str]:
    """A gate or merge in flight: what, for how long, where; with `tail` its log's last lines."""
    what = f"gate {r.name}" if r.kind == "gate" else f"merge of {r.name}"
    where = f" in {r.worktree}" if r.worktree else ""
    lines = fit.wrap(f"▶ {task}: {what} running for {_idle(r.started_at)}{where}", w, "  ", hang="    ")
    if r.log:
        lines.append(f"    log {r.log}")  # whole: `tail -f` takes it
    return lines + ([f"    │ {fit.middle(ln, w - 6) if w else ln}" for ln in r.tail] if tail else [])


def run_cell(run: dict[str, Any] | None) -> str:
    """`agent run`: the client running, or the last run's client, outcome and exit code."""
    if not run:
        return "-"
    if run.get("state") == "running":
        return f"{run.get('client')} running" + (f" ({run['window']})" if run.get("window") else "")
    if run.get("ended"):
        return f"{run.get('client')} {run['ended']}"
    return f"{run.get('client')} {run.get('outcome')} (exit {run.get('exit_code')})"  # recorded before runs said how they ended


def _flag_lines(t: TaskView, w: int | None) -> list[str]:
    silent = [a.name for a in t.agents if NEVER_REPORTED in a.flags]
    lines = fit.wrap(f"⚑ never reported: {', '.join(silent)}", w, "  ") if silent else []
    for a in t.agents:
        for f in a.flags:
            if f != NEVER_REPORTED:
                lines += fit.wrap(f"⚑ {a.name}: {f}", w, "  ")
    return lines


def _radar_lines(t: TaskView, w: int | None) -> list[str]:
    r = t.radar
    if r is None:
        return []
    if r.note:
        return fit.wrap(r.note, w, "  ")
    lines = []
    for c in r.conflicts:
        who = f"{c.agent} and {c.other} conflict" if c.other else f"{c.agent} conflicts with the task head"
        lines += fit.wrap(f"⚠ {who} in {', '.join(c.files)}", w, "  ")
    for c in r.checked:
        for k in c.combined:  # git would merge these without a word: a driver settles the overlap
            who = f"{c.agent} and {c.other}" if c.other else f"{c.agent} and the task head"
            lines += fit.wrap(f"⚠ {who} both change {k.path} lines {k.spans()}: merge={k.driver} would combine them silently", w, "  ")
    if r.checked and not r.conflicts and not any(c.combined for c in r.checked):
        n = len(r.checked)
        lines.append(f"  radar: nothing would conflict ({n} pair{'s' if n != 1 else ''} with unmerged work checked)")
    return lines


def next_commands(t: TaskView) -> list[str]:
    """The commands the text view offers as the way on, in its order: the queue's way back for an
    evicted head, then each next state that is ready (status's JSON `next` is this list too)."""
    from spark_git.protocol import command_to

    out = list(t.given_back.next[:1]) if t.given_back else []
    for n in t.next_states:
        if not n.blockers or (t.protocol == "light" and _advance_waives(t, n.state)):
            out.append(command_to(t.task, n.state, t.state))
    return list(dict.fromkeys(out))


def next_lines(t: TaskView, w: int | None) -> list[str]:
    from spark_git.protocol import command_to
    from spark_git.protocol.unmet import FIX_ARROW

    lines = fit.wrap(f"risk {t.risk}, variant {t.variant}, protocol {t.protocol}", w, "  ") if t.risk else []
    for n in t.next_states:
        cmd = command_to(t.task, n.state, t.state)
        if not n.blockers:
            lines += _ready(f"next: {n.state} ready", cmd, w)
        elif t.protocol == "light" and _advance_waives(t, n.state):
            # Under the light protocol `advance` records these conditions as waived and goes through.
            k = len(n.blockers)
            lines += _ready(f"next: {n.state} ready under protocol light, {k} unmet condition{'s' if k != 1 else ''} recorded as waived", cmd, w)
        else:
            lines.append(f"  next: {n.state} blocked by:")
            for b in n.blockers:
                condition, arrow, fix = b.partition(FIX_ARROW)
                lines += fit.wrap(f"- {condition}", w, "    ", hang="  ")
                if arrow:
                    lines.append(f"      → {fix}")  # whole: a command to paste
    return lines


def _ready(text: str, cmd: str, w: int | None) -> list[str]:
    """`text (cmd)` on one line when it fits; else the command on a line of its own, whole: it is
    meant to be pasted."""
    one = f"  {text} ({cmd})"
    if w is None or len(one) <= w:
        return [one]
    return [*fit.wrap(f"{text}:", w, "  "), f"    {cmd}"]


def _advance_waives(t: TaskView, to: str) -> bool:
    """Under the light protocol `advance` records unmet conditions as waived and goes through, except
    towards COMPLETE (and CLEANUP, and a change request: commands of their own that check for real)."""
    return to not in ("COMPLETE", "CLEANUP") and t.state != "AWAITING_USER_APPROVAL"
