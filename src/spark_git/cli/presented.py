"""Drawing what `approve --changes` approves (ops/presented.py) and asking the human with a rich
prompt. The question stays "type the task name": a reflexive `y` must not land a task."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_git.cli.common import Out, _esc, console

if TYPE_CHECKING:
    from spark_git.ops.presented import Presented

MAX_FILES = 40  # a longer diffstat ends with a count: the full list is `git diff --stat BASE HEAD`
BAR = 24  # width of the +/- bar of the largest change


def draw(out: Out, v: Presented) -> None:
    """The commits, the diffstat against the base, the last gate results, the reviewers' decisions
    and the open flags, in that order; fits 80 columns apart from long paths and subjects."""
    n = len(v.commits)
    out.print(f"  [bold]{n} commit{'s' if n != 1 else ''}[/bold] on {_esc(v.base_branch)} {v.base[:12]}..{v.commit_sha[:12]}:")
    width = max((len(c.agent or "?") for c in v.commits), default=1)
    for c in v.commits:
        out.print(f"    {c.sha[:12]}  [cyan]{_esc((c.agent or '?').ljust(width))}[/cyan]  {_esc(c.subject)}")
    _diffstat(out, v)
    out.print("  [bold]gates[/bold] (last run):" if v.gates else "  [bold]gates[/bold]: none ran")
    for g in v.gates:
        where = "this commit" if g.on_this_commit else (g.commit or "?")[:12]
        mark = "[green]passed[/green]" if g.result == "passed" else f"[red]{_esc(g.result)}[/red]"
        out.print(f"    {g.gate:<6} {mark} on {where}" + (f", merge of {_esc(g.agent)}" if g.agent else "") + (f", {g.at[:19]}" if g.at else ""))
    out.print("  [bold]reviewers[/bold]:" if v.reviewers else "  [bold]reviewers[/bold]: none in this task")
    for r in v.reviewers:
        said = r.decision or r.status or "never reported"
        on = "" if not r.reviewed else " for this commit" if r.current else f" for {r.reviewed[:12]}"
        out.print(f"    {_esc(r.agent)}: {_esc(said)}{on}" + (f" — {_esc(r.feedback)}" if r.feedback else ""))
    if not v.flags:
        out.print("  [bold]open flags[/bold]: none")
    for f in v.flags:
        out.print(f"  [yellow]flag:[/yellow] {_esc(f)}")


def _diffstat(out: Out, v: Presented) -> None:
    n = len(v.files)
    out.print(f"  [bold]{n} file{'s' if n != 1 else ''} changed[/bold], {v.added} insertion(s)(+), {v.removed} deletion(s)(-) against {v.base[:12]}:")
    shown = v.files[:MAX_FILES]
    pw = min(40, max((len(f.path) for f in shown), default=0))
    most = max(((f.added or 0) + (f.removed or 0) for f in shown), default=0) or 1
    for f in shown:
        path = f.path if len(f.path) <= pw else "…" + f.path[-(pw - 1):]
        if f.added is None:
            out.print(f"    {_esc(path.ljust(pw))} | Bin")
            continue
        total = f.added + (f.removed or 0)
        plus, minus = (_scaled(f.added, most), _scaled(f.removed or 0, most)) if most > BAR else (f.added, f.removed or 0)
        out.print(f"    {_esc(path.ljust(pw))} | {total:>4} [green]{'+' * plus}[/green][red]{'-' * minus}[/red]")
    if n > MAX_FILES:
        out.print(f"    … and {n - MAX_FILES} more: git diff --stat {v.base[:12]} {v.commit_sha[:12]}")


def _scaled(n: int, most: int) -> int:
    return max(1, round(n * BAR / most)) if n else 0  # a changed file always shows a mark


def show_on_terminal(v: Presented, title: str = "What you approve") -> None:
    err = console(stderr=True)  # stdout stays for the result (one JSON object with --json)
    err.print(f"[bold]{title}[/bold]: the changes of task {_esc(v.task)} at {v.commit_sha[:12]}")
    draw(err, v)


def ask_on_terminal(prompt: str) -> str:
    from rich.prompt import Prompt

    try:
        return Prompt.ask(_esc(prompt.rstrip().removesuffix(":")), console=console(stderr=True))
    except EOFError:  # the terminal closed: nothing typed, nothing approved
        return ""
