"""The typer app. Each module registers one command group; commands only parse, call the domain
and render."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from .common import AppState, state

app = typer.Typer(
    name="spark-git",
    help="Coordinate several AI coding agents on one git repository: task locks, agent worktrees, gated merges.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from spark_git import __version__

        print(f"spark-git {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    ctx: typer.Context,
    directory: Annotated[Optional[Path], typer.Option("-C", help="Run as if started in this directory.", show_default=False)] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout (accepted anywhere on the command line).")] = False,
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    st = state(ctx)
    st.json = st.json or json_
    if directory is not None:
        st.cwd = directory


from . import tasks as _tasks  # noqa: E402  (registers commands)
from . import mainlock as _mainlock  # noqa: E402
from . import merge as _merge  # noqa: E402
from . import protocol as _protocol  # noqa: E402
from . import cleanup as _cleanup  # noqa: E402
from . import agents as _agents  # noqa: E402

__all__ = ["app", "AppState"]
