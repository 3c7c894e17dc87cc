"""Running the app for `__main__`: every way out of a command prints exactly one envelope under
--json (usage errors, Ctrl-C, a closed stdout included), and exits with a code of core/errors.py."""

from __future__ import annotations

import gc
import os
import sys
from typing import Any

import typer

from spark_git.cli.common import ENVELOPE_LOG, AppState, emit, envelope, stdout_closed
from spark_git.core.errors import INTERRUPTED, INTERRUPTED_MESSAGE, USAGE


def run(args: list[str], json_mode: bool, freeze_imports: bool = False) -> int:
    from spark_git.cli.root import command_of, load

    # the log is this process's alone: a gate or hook running spark-git must not write into it
    st = AppState(json=json_mode, envelope_log=os.environ.pop(ENVELOPE_LOG, None))
    # click's exceptions, wherever typer takes click from (it may vendor its own)
    clicked: Any = sys.modules[typer.BadParameter.__module__]
    try:
        app = load(command_of(args))
        if freeze_imports:  # what the imports built lives until exit: no collection needs to walk it (__main__.py)
            gc.freeze()
            gc.enable()
        rv = app(args=args, prog_name="spark-git", obj=st, standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
    except clicked.UsageError as e:
        return _usage(st, e, clicked, command_of(args))
    except (typer.Abort, KeyboardInterrupt):  # Ctrl-C at a prompt, or before a command ran
        code = INTERRUPTED
    except BrokenPipeError:
        return stdout_closed()
    if code == INTERRUPTED and not st.answered:  # typer turns Ctrl-C outside a command into 130
        emit(st, lambda: envelope("FAIL", INTERRUPTED_MESSAGE, None, {"error": INTERRUPTED_MESSAGE}, ["spark-git doctor"], "error"))
    return code


def _usage(st: AppState, e: Any, clicked: Any, command: str | None) -> int:
    """Bad arguments: click's message and usage line on stderr, as without --json; exit 2."""
    e.show()
    # An option missing its value is raised without a context: the command named in the arguments then.
    from spark_git.cli.root import MODULES

    known = command is not None and any(command in names for names in MODULES.values())
    path = e.ctx.command_path if e.ctx is not None else f"spark-git {command}" if known else "spark-git"
    no_args = getattr(clicked, "NoArgsIsHelpError", ())  # its message is the whole help text
    msg = "no command given" if isinstance(e, no_args) else str(e.format_message())
    emit(st, lambda: envelope("FAIL", msg, None, {"error": msg, "hint": f"`{path} --help` shows the usage"}, [f"{path} --help"], "error"))
    return USAGE
