"""`queue` (show the merge queue) and `queue run` (drain it without enqueueing)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from spark_git.cli.common import Result, SessionOpt, _esc, execute
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.ops.landing import queue as show
from spark_git.ops.landing import queuestats
from spark_git.state.locks import session_from

if TYPE_CHECKING:
    from spark_git.state.queuelog import QueueOutcome

queue_app = typer.Typer(help="The merge queue: entries, the running candidate, recent outcomes; `queue run` drains it.",
                        invoke_without_command=True)
app.add_typer(queue_app, name="queue")


def _outcome_line(out: Any, o: QueueOutcome) -> None:
    extra = f"  files {', '.join(o.files)}" if o.files else (f"  log {o.gate_log}" if o.result != "landed" and o.gate_log else "")
    out.print(f"  {o.at[:19]}  {o.task:<20} {o.result:<8} {_esc(o.reason)}{_esc(extra)}")


@queue_app.callback()
def queue(ctx: typer.Context,
          stats: Annotated[bool, typer.Option("--stats", help="The queue's figures from its log: landed per hour, wait p50/p95, "
                                              "gate runs per landed task, flaky rate.")] = False) -> None:
    """Show the merge queue: entries in order, the candidate being gated, recent outcomes."""
    if ctx.invoked_subcommand is not None:
        return
    if stats:
        execute(ctx, _stats_result)
        return
    def action(layout: Layout) -> Result:
        d = show.show(layout)

        def human(out: Any) -> None:
            for i, e in enumerate(d.entries, 1):
                out.print(f"  {i:>2}. {e.task:<20} {e.head[:12]}  ({e.state or 'task ended: its entry cannot land'})" + ("  [high priority]" if e.priority == "high" else ""))
            if d.candidate is not None:
                tasks = ", ".join(p.task for p in d.candidate.parts)
                out.print(f"  candidate on {d.candidate.base_branch} {d.candidate.old_base[:12]}: {tasks} (pid {d.candidate.pid})")
            for c in d.running:
                out.print(f"  gating: {', '.join(p.task for p in c.parts)} in {c.scratch} (pid {c.pid})")
            if d.recent:
                out.print("  recent outcomes:")
                for o in d.recent:
                    _outcome_line(out, o)
            for f in d.forge:
                seen = f"not answered: {f.error}" if f.error else f.state + (f" as {f.merge_commit[:12]}" if f.merge_commit else "")
                out.print(f"  forge: {f.task:<20} {f.url}  {_esc(seen)}")
            for fl in d.flaky:
                tests = f" ({', '.join(fl.failed_tests[:5])})" if fl.failed_tests else ""
                out.print(f"  flaky: {fl.at[:19]}  {', '.join(fl.tasks)}: failed {fl.failures}x, passed on a retry{_esc(tests)}  log {fl.log_path}")
            out.print(f"  final-gate runs by the queue so far: {d.gate_runs}; batch_max {d.batch_max}; parallel {d.parallel}")

        state = "being drained" if d.draining else "idle"
        return Result(f"{len(d.entries)} task(s) in the merge queue ({state})", d, human=human,
                      next=["spark-git queue run"] if d.entries and not d.draining else [])

    execute(ctx, action)


def _stats_result(layout: Layout) -> Result:
    d = queuestats.stats(layout)

    def num(v: float | None, unit: str = "") -> str:
        return "-" if v is None else f"{v:g}{unit}"

    def human(out: Any) -> None:
        out.print(f"  over the last {d.outcomes} outcome(s), {d.landed} landed: {num(d.landed_per_hour)} landed/hour, "
                  f"wait p50 {num(d.wait_p50_s, ' s')}, p95 {num(d.wait_p95_s, ' s')}")
        out.print(f"  since {d.counted_since[:19]}: {d.gate_runs} gate run(s), {d.landed_total} landed, "
                  f"{num(d.gate_runs_per_landed)} gate runs per landed task, {d.flaky} flaky ({num(d.flaky_rate)} per gate run)")

    return Result(f"merge queue: {num(d.landed_per_hour)} landed/hour, wait p50 {num(d.wait_p50_s, ' s')}", d, human=human,
                  next=["spark-git queue"])


@queue_app.command("run")
def run(ctx: typer.Context, session: SessionOpt = None) -> None:
    """Drain the merge queue now (unless another process does): batches gated once, landed or bisected."""
    def action(layout: Layout) -> Result:
        d = show.run(layout, session_from(session))

        def human(out: Any) -> None:
            for r in d.repaired:
                out.print(f"  [yellow]repaired:[/yellow] {_esc(r)}")
            for o in d.outcomes:
                _outcome_line(out, o)

        if not d.drained:
            return Result("another process is draining the merge queue; nothing done", d, human=human, next=["spark-git queue"])
        landed = sum(o.result == "landed" for o in d.outcomes)
        return Result(f"drained the merge queue: {landed} landed, {len(d.outcomes) - landed} evicted, {len(d.remaining)} left", d, human=human,
                      next=["spark-git queue"])

    execute(ctx, action)

