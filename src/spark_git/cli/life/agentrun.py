"""`agent run`: start an agent's client in its worktree, briefed, and file what it answers."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from spark_git.cli.common import Out, Result, _esc, execute
from spark_git.clients import registry
from spark_git.core.errors import FAIL, BadInput
from spark_git.core.layout import Layout


def agent_run(
    ctx: typer.Context,
    task: Annotated[str, typer.Argument(help="Task name.")],
    agent: Annotated[str | None, typer.Argument(help="Agent name (none with --all).", show_default=False)] = None,
    client_args: Annotated[list[str] | None, typer.Argument(help="After `--`: more arguments for the client.", show_default=False)] = None,
    client: Annotated[str | None, typer.Option("--client", help=f"The client to start: {', '.join(registry.CLIENTS)} (default: the one whose hooks are installed).")] = None,
    headless: Annotated[bool, typer.Option("--headless", help="Non-interactive, machine-readable output; the final Output JSON becomes the agent's report (the default).")] = False,
    tmux: Annotated[bool, typer.Option("--tmux", help="The interactive client in a tmux window named TASK/AGENT (session `spark-git`, created when none is running).")] = False,
    all_: Annotated[bool, typer.Option("--all", help="Headless, every agent the task's protocol state asks for, in parallel up to [agents] parallel.")] = False,
    prompt: Annotated[str | None, typer.Option("--prompt", help="What to tell the agent (default: its brief and the instruction to answer with the Output JSON).")] = None,
    unboxed: Annotated[bool, typer.Option("--unboxed", help="Run a client that has no OS sandbox of its own even without bubblewrap to box it: nothing but the hook then keeps the agent in its worktree.")] = False,
) -> None:
    """Start the agent's client in its worktree as that agent (its hooks and sandbox checked first); headless, its answer becomes its report."""
    def action(layout: Layout) -> Result:
        from spark_git.ops.life import agentrun as ops_run
        from spark_git.ops.shared import hooksetup

        if headless and tmux:
            raise BadInput("--headless and --tmux exclude each other", next=[f"spark-git agent run {task} {agent} --headless"])
        name = client or next((c.name for c in hooksetup.configured(hooksetup.root_of(layout))), registry.DEFAULT)
        if all_:
            return _all(ctx, layout, task, name, prompt, [*([agent] if agent else []), *(client_args or [])], tmux, unboxed)
        if agent is None:
            raise BadInput("name the agent to run, or --all", next=[f"spark-git agent run {task} --all"])
        if tmux:
            d = ops_run.in_tmux(layout, task, agent, name, prompt=prompt, extra=tuple(client_args or ()), unboxed=unboxed)

            def watch(out: Out) -> None:
                _unboxed(out, d)
                out.print(f"  watch it: tmux attach -t {ops_run.TMUX_SESSION}")

            return Result(f"agent {d.agent} of {d.task}: {d.client} in tmux window {d.window}", d, task=d.task, human=watch, next=[f"spark-git status {d.task}"])
        d = ops_run.headless(layout, task, agent, name, prompt=prompt, extra=tuple(client_args or ()), unboxed=unboxed)

        def human(out: Out) -> None:
            _unboxed(out, d)
            cost = f", ${d.cost_usd:.4f}" if d.cost_usd is not None else ""
            out.print(f"  {d.client}: exit {d.exit_code} after {d.duration_s}s" + (f", {d.tokens} tokens" if d.tokens is not None else "") + cost)
            out.print(f"  log: {d.log}")
            if d.last_words:
                out.print(f"  last words: {d.last_words[-500:]}")

        from spark_git.state.backends import open_store

        nxt = ops_run.after_run(layout, open_store(layout), d, tuple(client_args or ()))
        if d.outcome == "reported" and not d.incomplete:
            return Result(f"agent {d.agent} of {d.task} reported {d.report_status} ({d.client})", d, task=d.task, human=human, next=nxt)
        if d.incomplete:
            return Result(f"agent {d.agent} of {d.task}: report incomplete ({d.client}): {d.incomplete}", d, task=d.task, human=human,
                          status="FAIL", exit_code=FAIL, next=nxt)
        return Result(f"agent {d.agent} of {d.task}: the {d.client} run ended without an Output JSON (exit {d.exit_code})", d, task=d.task,
                      human=human, status="FAIL", exit_code=FAIL, next=nxt)

    execute(ctx, action)


def _unboxed(out: Out, d: Any) -> None:
    if d.boundary == "none":
        out.print(f"  NO OS boundary: {d.client} ran without a sandbox (no bubblewrap, --unboxed); only the hook kept it in its worktree")


def _all(ctx: typer.Context, layout: Layout, task: str, client: str, prompt: str | None, extra: list[str], tmux: bool, unboxed: bool) -> Result:
    """--all: after `--` click reads every word as positional, so AGENT holds the first client argument."""
    from spark_git.cli.common import state
    from spark_git.ops.life import agentrunall as runall

    if tmux:
        raise BadInput("--all runs headless: --tmux opens one agent's window", next=[f"spark-git agent run {task} --all"])
    live = None if state(ctx).json or not sys.stdout.isatty() else _Live()
    try:
        d = runall.run_all(layout, task, client, prompt=prompt, extra=tuple(extra), tick=live.tick if live else None, unboxed=unboxed)
    finally:
        if live:
            live.stop()

    def human(out: Out) -> None:
        for line in rows(d.runs):
            out.print("  " + _esc(line))

    failed = [r.agent for r in d.runs if r.state != "reported"]
    summary = f"task {d.task} ({d.task_state}): {len(d.runs) - len(failed)} of {len(d.runs)} agent(s) reported" + (f"; failed: {', '.join(failed)}" if failed else "")
    return Result(summary, d, task=d.task, human=human, next=d.next, status="FAIL" if failed else "OK", exit_code=FAIL if failed else 0)


def rows(runs: list[Any]) -> list[str]:
    """One line per agent: client, how it ended (or its state), elapsed, then the failure's reason or
    the last tool call (the live display and the final table). Columns as wide as their longest
    entry. Plain text: the table prints it escaped (a commit subject's `[agent]` is not rich markup)."""
    how = [r.ended or (r.state + (" " + r.report_status if r.report_status else "")) for r in runs]
    wa, wc, wh = (max((len(x) for x in col), default=0) for col in ([r.agent for r in runs], [r.client for r in runs], how))
    return [f"{r.agent:<{wa}}  {r.client:<{wc}}  {h:<{wh}}  {r.elapsed_s:>6.1f}s  {r.reason or r.last_tool}".rstrip() for r, h in zip(runs, how, strict=True)]


class _Live:
    """rich's Live display on a terminal: the rows redrawn in place."""

    def __init__(self) -> None:
        from rich.live import Live

        self._live = Live("", refresh_per_second=4, transient=True)
        self._live.start()

    def tick(self, runs: list[Any]) -> None:
        from rich.text import Text

        self._live.update(Text("\n".join(rows(runs))))

    def stop(self) -> None:
        self._live.stop()


def register(agent_app: typer.Typer) -> None:
    """`agent run` on the `agent` group `start`'s module owns (so this module imports no other cli module)."""
    agent_app.command("run")(agent_run)
