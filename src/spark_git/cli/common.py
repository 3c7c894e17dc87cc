"""What every command shares: the app state, common options, the one error handler, and rendering
of the result (rich for humans, one JSON envelope with --json)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol

import typer
from pydantic import BaseModel

from spark_git.core.errors import INTERNAL, SparkError
from spark_git.core.layout import Layout

if TYPE_CHECKING:
    from rich.console import Console


@dataclass
class AppState:
    json: bool = False
    cwd: Path = field(default_factory=Path.cwd)
    no_wait: bool = False  # --no-wait: a held task/main mutex refuses at once (exit 3)
    progress: Closable | None = None  # the running command's terminal progress, stopped before rendering


class Closable(Protocol):
    def __call__(self, msg: str) -> None: ...

    def close(self) -> None: ...


class Out(Protocol):
    """Where a command's human details are drawn (a rich Console on a terminal)."""

    def print(self, *objects: Any, **kw: Any) -> None: ...


@dataclass
class Result:
    summary: str
    data: BaseModel | dict[str, Any] | None = None
    task: str | None = None
    next: list[str] = field(default_factory=list)
    status: str = "OK"
    exit_code: int = 0
    human: Callable[[Out], None] | None = None  # draws the details on a rich Console


SessionOpt = Annotated[
    str | None,
    typer.Option("--session", help="Session id owning the task (default: $SPARK_SESSION_ID).", show_default=False),
]


def state(ctx: typer.Context) -> AppState:
    return ctx.ensure_object(AppState)


def console(stderr: bool = False) -> Console:
    from rich.console import Console  # lazy: only when a human reads the output

    stream = sys.stderr if stderr else sys.stdout
    # Not a terminal (agents, pipes, CI): a wide fixed width so tables are never truncated.
    return Console(stderr=stderr, highlight=False, soft_wrap=True, width=None if stream.isatty() else 200)


def progress(ctx: typer.Context) -> Callable[[str], None]:
    """The progress callback an ops function reports its steps to: rich progress on stderr when it is
    a terminal; silent under --json or when stderr is not a terminal. execute() stops it before the
    result is drawn."""
    st = state(ctx)
    if st.json or not sys.stderr.isatty():
        return lambda _msg: None
    if st.progress is None:
        from spark_git.cli.progress import TerminalProgress  # lazy: rich only when a terminal watches

        st.progress = TerminalProgress(console(stderr=True))
    return st.progress


class _TerminalTicker:
    """One line on stderr, rewritten in place: how long the gate has run and its last output line."""

    def __init__(self, label: str) -> None:
        self.label, self.shown = label, False

    def tick(self, elapsed_s: float, last_line: str) -> None:
        import shutil

        last = "".join(c for c in last_line if c.isprintable())
        text = f"… {self.label} running for {int(elapsed_s)} s" + (f": {last}" if last else "")
        width = shutil.get_terminal_size().columns
        sys.stderr.write("\r\x1b[2K" + text[: max(20, width - 1)])
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def ticker(ctx: typer.Context, label: str = "gate") -> _TerminalTicker | None:
    """A ticker for a running gate on a terminal; None under --json or when stderr is not a terminal."""
    if state(ctx).json or not sys.stderr.isatty():
        return None
    return _TerminalTicker(label)


def execute(ctx: typer.Context, action: Callable[[Layout], Result], *, needs_repo: bool = True) -> None:
    """Runs one command: discover the repo, call the domain, render. The only place exceptions
    become exit codes."""
    st = state(ctx)
    try:
        layout = Layout.discover(st.cwd) if needs_repo else None
        if layout is not None and st.no_wait:
            layout = dataclasses.replace(layout, wait=False)
        result = action(layout)  # type: ignore[arg-type]
    except SparkError as e:
        _stop_progress(st)
        _render_error(st, e)
        raise typer.Exit(e.exit_code) from None
    except typer.Exit:
        raise
    except Exception as e:  # a bug: say so, keep the traceback, exit 70
        _stop_progress(st)
        tb = traceback.format_exc()
        if st.json:
            print(json.dumps({"status": "FAIL", "summary": f"internal error: {e!r}", "task": None, "data": {"traceback": tb}, "next": []}))
        else:
            sys.stderr.write(tb)
            sys.stderr.write(f"spark-git: internal error ({type(e).__name__}): please report this with the traceback above\n")
        raise typer.Exit(INTERNAL) from None
    _stop_progress(st)
    _render(st, result)
    if result.exit_code:
        raise typer.Exit(result.exit_code)


def _stop_progress(st: AppState) -> None:
    if st.progress is not None:
        st.progress.close()
        st.progress = None


def envelope(status: str, summary: str, task: str | None, data: Any, next_: list[str]) -> dict[str, Any]:
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json", by_alias=True)
    return {"status": status, "summary": summary, "task": task, "data": data if data is not None else {}, "next": next_}


def _render(st: AppState, r: Result) -> None:
    if st.json:
        print(json.dumps(envelope(r.status, r.summary, r.task, r.data, r.next), indent=None))
        return
    mark = {"OK": "✓", "BLOCKED": "■"}.get(r.status, "✗")
    if r.human is None and _plain(sys.stdout, [r.summary, *r.next]):
        _write_plain(sys.stdout, [f"{mark} {r.summary}"], r.next)
        return
    out = console()
    style = {"OK": "green", "BLOCKED": "yellow"}.get(r.status, "red")
    out.print(f"[{style}]{mark}[/{style}] {_esc(r.summary)}")
    if r.human is not None:
        r.human(out)
    _render_next(out, r.next)


def _render_error(st: AppState, e: SparkError) -> None:
    if st.json:
        data = {"error": e.message, "hint": e.hint, **e.details}
        print(json.dumps(envelope(e.status, e.message, e.task, data, e.next)))
        return
    label = "blocked" if e.status == "BLOCKED" else "error"
    items = [(k, [str(i) for i in v]) for k, v in e.details.items() if not _drawn_elsewhere(k, e.details) and isinstance(v, list) and v]
    texts = [e.message, *e.next, *([e.hint] if e.hint else []), *(t for k, v in items for t in (k, *v))]
    if not _GATE_FAILURE.intersection(e.details) and _plain(sys.stderr, texts):
        lines = [f"{label}: {e.message}"]
        for key, vals in items:
            lines += [f"  {key}:", *(f"    - {v}" for v in vals)]
        if e.hint:
            lines.append(f"  hint: {e.hint}")
        _write_plain(sys.stderr, lines, e.next)
        return
    err = console(stderr=True)
    err.print(f"[bold {'yellow' if label == 'blocked' else 'red'}]{label}:[/] {_esc(e.message)}")
    for key, vals in items:
        err.print(f"  {key}:")
        for item in vals:
            err.print(f"    - {_esc(item)}")
    gate_failure_lines(err, e.details)
    if e.hint:
        err.print(f"  [dim]hint:[/] {_esc(e.hint)}")
    _render_next(err, e.next)


def gate_failure_lines(out: Any, details: dict[str, Any], tail: int = 20) -> None:
    """A failed gate: pytest's failing tests, the end of its log, how to run it by hand."""
    failed = details.get("failed_tests") or []
    if failed:
        out.print(f"  failing tests ({len(failed)}):")
        for name in failed:
            out.print(f"    {_esc(str(name))}")
    lines = (details.get("log_tail") or [])[-tail:]
    if "log_tail" in details and not lines:
        out.print("  the gate printed nothing")
    if lines:
        out.print(f"  last {len(lines)} line(s) of {_esc(str(details.get('log_path')))}:")
        for line in lines:
            out.print(f"    [dim]│[/] {_esc(str(line))}")
    if details.get("run_by_hand"):
        out.print(f"  run it by hand: {_esc(str(details['run_by_hand']))}")


_GATE_FAILURE = {"log_tail", "failed_tests", "run_by_hand"}  # drawn by gate_failure_lines (rich)


def _drawn_elsewhere(key: str, details: dict[str, Any]) -> bool:
    # already in the message, or drawn by gate_failure_lines
    return key in ("stderr", "argv", "returncode", "cwd", "errors", "log_tail", "failed_tests") or (key == "command" and "run_by_hand" in details)


# What rich could change in plain text written to a non-terminal: `:name:` emoji codes, control
# characters and tabs, whitespace at a line's end, backslashes (markup escapes).
_NOT_PLAIN = re.compile(r":\S*?:|[\x00-\x1f\x7f-\x9f\\]|\s$")


def _plain(stream: Any, texts: list[str]) -> bool:
    """True when rich would write `texts` to `stream` unchanged and uncoloured (not a terminal, no
    FORCE_COLOR / TTY_COMPATIBLE=1): then lines are written directly, without importing rich
    (≈ 20 ms of a command's start-up). Tables and anything else drawn by a `human` callback use rich."""
    if os.environ.get("FORCE_COLOR") is not None or os.environ.get("TTY_COMPATIBLE") == "1":
        return False
    try:
        if stream.isatty():
            return False
    except ValueError:
        pass
    return not any(_NOT_PLAIN.search(t) for t in texts)


def _write_plain(stream: Any, lines: list[str], next_: list[str]) -> None:
    if next_:
        lines = [*lines, "next:", *(f"  {c}" for c in next_)]
    stream.write("".join(f"{ln}\n" for ln in lines))
    stream.flush()


def _render_next(out: Any, next_: list[str]) -> None:
    if next_:
        out.print("[dim]next:[/]")
        for cmd in next_:
            out.print(f"  {_esc(cmd)}")


def _esc(s: str) -> str:
    from rich.markup import escape

    return escape(s)
