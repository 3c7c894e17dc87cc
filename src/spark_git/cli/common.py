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

from spark_git.core.errors import BROKEN_PIPE, INTERNAL, INTERRUPTED, INTERRUPTED_MESSAGE, SparkError, from_os_error
from spark_git.core.layout import Layout

if TYPE_CHECKING:
    from rich.console import Console

    from spark_git.core.gitdrivers import Combined
    from spark_git.gates.evidence import GateEvidence


@dataclass
class AppState:
    json: bool = False
    cwd: Path = field(default_factory=Path.cwd)
    no_wait: bool = False  # --no-wait: a held task/main mutex refuses at once (exit 3)
    progress: Closable | None = None  # the running command's terminal progress, stopped before rendering
    answered: bool = False  # an envelope was written (cli/entry.py writes one if nothing else did)
    envelope_log: str | None = None  # $SPARK_GIT_ENVELOPE_LOG, taken out of the environment gates and hooks inherit


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


def complete_task(incomplete: str) -> list[str]:
    """Shell completion: the tasks of the repository the shell is in."""
    try:
        root = Layout.discover(Path.cwd()).tasks_root
        return sorted(d.name for d in root.iterdir() if d.name.startswith(incomplete) and (d / "task.json").is_file())
    except (SparkError, OSError):
        return []


def complete_agent(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion: the agents of the task already on the command line (the first word that
    names a task: while an option's value is completed, the parameters are not parsed yet, so the
    words are read as the shell gave them to typer)."""
    tasks = complete_task("")
    words = (os.environ.get("COMP_WORDS") or os.environ.get("_TYPER_COMPLETE_ARGS") or "").split()
    task = ctx.params.get("task") or next((w for w in words if w in tasks), None)
    try:
        root = Layout.discover(Path.cwd()).tasks_root / str(task) / "agents"
        return sorted(d.name for d in root.iterdir() if d.name.startswith(incomplete) and d.is_dir()) if task else []
    except (SparkError, OSError):
        return []


def complete_client(incomplete: str) -> list[str]:
    from spark_git.clients import registry

    return [c for c in registry.CLIENTS if c.startswith(incomplete)]


TaskArg = Annotated[str, typer.Argument(help="Task name.", autocompletion=complete_task)]
AgentOpt = Annotated[str, typer.Option("--agent", "-a", help="Agent name.", autocompletion=complete_agent)]

SessionOpt = Annotated[
    str | None,
    typer.Option("--session", help="Session id owning the task (default: $SPARK_SESSION_ID).", show_default=False),
]


def or_list(words: list[str], last: str = "or") -> str:
    """"a, b or c": option help texts built from a registry."""
    return f"{', '.join(words[:-1])} {last} {words[-1]}" if len(words) > 1 else "".join(words)


def state(ctx: typer.Context) -> AppState:
    return ctx.ensure_object(AppState)


def console(stderr: bool = False) -> Console:
    from rich.console import Console  # lazy: only when a human reads the output

    stream = sys.stderr if stderr else sys.stdout
    # Not a terminal (agents, pipes, CI): a wide fixed width so tables are never truncated.
    c = Console(stderr=stderr, highlight=False, soft_wrap=True, width=None if stream.isatty() else 200)
    # rich ends the process with exit 1 on a closed pipe; execute() turns the error into 141 instead
    c.on_broken_pipe = _broken_pipe  # type: ignore[method-assign]
    return c


def _broken_pipe() -> None:
    raise BrokenPipeError


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
        code = _execute(ctx, st, action, needs_repo)
    except BrokenPipeError:  # a closed stdout is the reader's choice, not a bug
        code = stdout_closed()
    if code:
        raise typer.Exit(code)


def _execute(ctx: typer.Context, st: AppState, action: Callable[[Layout], Result], needs_repo: bool) -> int:
    try:
        layout = Layout.discover(st.cwd) if needs_repo else None
        if layout is not None and st.no_wait:
            layout = dataclasses.replace(layout, wait=False)
        if layout is not None:
            _guard(ctx, st, layout)
        result = action(layout)  # type: ignore[arg-type]
    except SparkError as e:
        _stop_progress(st)
        _render_error(st, e)
        return e.exit_code
    except (typer.Exit, BrokenPipeError):
        raise
    except KeyboardInterrupt:
        _stop_progress(st)
        emit(st, lambda: envelope("FAIL", INTERRUPTED_MESSAGE, None, {"error": INTERRUPTED_MESSAGE}, ["spark-git doctor"], "error"))
        return INTERRUPTED
    except Exception as e:  # a bug: say so, keep the traceback, exit 70 (a file system refusal: say that)
        _stop_progress(st)
        known = from_os_error(e) if isinstance(e, OSError) else None
        if known is not None:
            _render_error(st, known)
            return known.exit_code
        tb = traceback.format_exc()
        data = {"error": f"internal error: {e!r}", "hint": "please report this with the traceback", "traceback": tb}
        emit(st, lambda: envelope("FAIL", data["error"], None, data, [], "error"))
        if not st.json:
            sys.stderr.write(tb)
            sys.stderr.write(f"spark-git: internal error ({type(e).__name__}): please report this with the traceback above\n")
        return INTERNAL
    _stop_progress(st)
    _render(st, result, ctx)
    return result.exit_code


def _guard(ctx: typer.Context, st: AppState, layout: Layout) -> None:
    """The one check of who is calling (core/caller.py): an agent may not run the coordinator's
    commands, nor report, sync or env for another agent."""
    from spark_git.core import caller

    task, agent, session = (v if isinstance(v := ctx.params.get(k), str) else None for k in ("task", "agent", "session"))
    caller.check(ctx.command_path.partition(" ")[2], layout.tasks_root, layout.main_worktree, st.cwd, task, agent, session)


def _stop_progress(st: AppState) -> None:
    if st.progress is not None:
        st.progress.close()
        st.progress = None


def stdout_closed() -> int:
    """The reader went away (`spark-git schema | head`): not an error to report. stdout points at
    /dev/null from here on, so Python's own flush at exit does not complain again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor behind stdout (in-process callers)
        pass
    return BROKEN_PIPE


# Set by automation (and the test suite) to keep every result: each envelope is appended to this
# file as one line, with or without --json.
ENVELOPE_LOG = "SPARK_GIT_ENVELOPE_LOG"


def emit(st: AppState, build: Callable[[], dict[str, Any]]) -> None:
    """The one writer of envelopes: stdout under --json, and a line of $SPARK_GIT_ENVELOPE_LOG when
    set. `build` makes the envelope, called only when someone reads it."""
    log = st.envelope_log
    st.answered = True
    if not (st.json or log):
        return
    line = json.dumps(build())
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    if st.json:
        print(line, flush=True)


def envelope(status: str, summary: str, task: str | None, data: Any, next_: list[str], data_schema: str | None) -> dict[str, Any]:
    """`data_schema` names the schema (`spark-git schema NAME`) that `data` follows: "error" for a
    refusal or failure raised as an error, else the command's own (also when it is BLOCKED or FAIL)."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json", by_alias=True)
    return {"status": status, "summary": summary, "task": task, "data": data if data is not None else {}, "next": next_, "data_schema": data_schema}


def _data_schema(ctx: typer.Context, data: object) -> str | None:
    from spark_git.ops.views.schema import name_of

    return name_of(ctx.command_path.partition(" ")[2], data)  # "spark-git agent add" → "agent add"


def _render(st: AppState, r: Result, ctx: typer.Context | None = None) -> None:
    emit(st, lambda: envelope(r.status, r.summary, r.task, r.data, r.next, _data_schema(ctx, r.data) if ctx else None))
    if st.json:
        return
    mark = {"OK": "✓", "BLOCKED": "■"}.get(r.status, "✗")
    if r.human is None and _plain(sys.stdout, [r.summary, *r.next]):
        _write_plain(sys.stdout, [f"{mark} {r.summary}"], r.next)
        return
    out = console()
    style = {"OK": "green", "BLOCKED": "yellow"}.get(r.status, "red")
    from spark_git.cli import fit

    # Fitted to a terminal (or COLUMNS): broken between words, never inside a path by the terminal.
    first, *rest = fit.wrap(f"{mark} {r.summary}", fit.width(), hang="  ")
    out.print(f"[{style}]{mark}[/{style}] {_esc(first[len(mark) + 1:])}")
    for line in rest:
        out.print(_esc(line))
    if r.human is not None:
        r.human(out)
    _render_next(out, r.next)


def _render_error(st: AppState, e: SparkError) -> None:
    emit(st, lambda: envelope(e.status, e.message, e.task, {"error": e.message, "hint": e.hint, **e.details}, e.next, "error"))
    if st.json:
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


def gate_line(out: Out, gate: GateEvidence | None) -> None:
    if gate is None:
        return
    if gate.reused_from:
        out.print(f"  gate {gate.gate}: passed — reused verdict of {gate.tree[:12]} from {_esc(gate.reused_from)} (--rerun runs it again)")
    elif not gate.ran:
        out.print(f"  gate {gate.gate}: none configured (nothing ran)")
    else:
        from spark_git.gates.evidence import counts
        from spark_git.gates.reports import token  # with the evidence model already loaded: no start-up cost

        tests = f"  tests: {counts(gate.tests)}" if gate.tests else ""
        parsed = f"  ({token(gate.reports)})" if gate.reports and token(gate.reports) else ""
        out.print(f"  gate {gate.gate}: {'passed' if gate.passed else 'FAILED'} in {gate.duration_s:.1f}s{tests}{parsed}  log {gate.log_path}")


def combined_lines(out: Out, combined: list[Combined]) -> None:
    """Files a configured merge driver combined where both sides changed the same lines (git said nothing)."""
    for c in combined:
        out.print(f"  [yellow]combined by merge={_esc(c.driver)}:[/yellow] {_esc(c.path)} (lines {c.spans()} of the merge base changed on both sides; read the result)")
