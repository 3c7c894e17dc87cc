"""The typer app and its root options. Command modules register on it when imported; `load` imports
only the module of the command about to run, so start-up pays for one command family, not all."""

from __future__ import annotations

import copy
import importlib
from pathlib import Path
from typing import Annotated

import typer
import typer.core

from spark_git.cli.common import state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typer._click import Context, HelpFormatter  # typer's own click (0.29 vendors it)

# `spark-git --help` by role (the commands each module registers: MODULES below). HIDDEN: the entry
# points the clients run, not people (callable, not listed).
HELP_GROUPS: dict[str, tuple[str, ...]] = {
    "Tasks": ("start", "status", "advance", "classify", "lock", "unlock"),
    "Agents": ("agent", "report", "brief", "sync", "env"),
    "Landing": ("merge", "update", "approve", "complete", "queue", "verify", "accept"),
    "Ending": ("cleanup", "abandon", "archive", "doctor"),
    "Views": ("watch", "who", "log", "audit", "schema"),
    "Set-up": ("init", "hooks", "remote", "heartbeat", "ci"),
}
HIDDEN = ("hook", "statusline")


class _ByRole(typer.core.TyperGroup):
    """Lists the commands under HELP_GROUPS' headings (anything not placed: under "Other")."""

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        cmds = {n: c for n in self.list_commands(ctx) if (c := self.get_command(ctx, n)) is not None and not c.hidden}
        placed = {n for names in HELP_GROUPS.values() for n in names}
        limit = formatter.width - 6 - max((len(n) for n in cmds), default=0)
        for title, names in [*HELP_GROUPS.items(), ("Other", tuple(n for n in cmds if n not in placed))]:
            rows = [(n, cmds[n].get_short_help_str(limit)) for n in names if n in cmds]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


app = typer.Typer(
    name="spark-git",
    cls=_ByRole,
    help="Coordinate several AI coding agents on one git repository: task locks, agent worktrees, gated merges.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

# The cli module (below spark_git.cli, in the feature package of its ops) -> the top-level commands it
# registers. Modules in the order they register, which is the order `spark-git --help` lists the
# commands in (commands first, then groups; tests/test_git_processes.py checks this table).
MODULES: dict[str, tuple[str, ...]] = {
    "life.start": ("start", "agent"),
    "views.status": ("status",),
    "landing.lock": ("lock", "unlock"),
    "landing.merge": ("merge", "sync", "update"),
    "landing.approve": ("approve",),
    "landing.complete": ("complete",),
    "views.history": ("who", "log"),
    "landing.queue": ("queue",),
    "landing.verify": ("verify", "accept"),
    "life.advance": ("advance", "classify"),
    "life.report": ("report",),
    "views.audit": ("audit",),
    "life.brief": ("brief",),
    "ending.cleanup": ("cleanup", "abandon", "archive"),
    "ending.doctor": ("doctor",),
    "setup.init": ("init",),
    "setup.env": ("env",),
    "views.schema": ("schema",),
    "life.hook": ("hook",),
    "setup.hooks": ("hooks",),
    "setup.remote": ("remote", "heartbeat"),
    "setup.ci": ("ci",),
    "views.statusline": ("statusline",),
    "views.watch": ("watch",),
}


def _version(value: bool) -> None:
    if value:
        from spark_git import __version__

        print(f"spark-git {__version__}")
        raise typer.Exit(0)


@app.callback()
def root(
    ctx: typer.Context,
    directory: Annotated[Path | None, typer.Option("-C", help="Run as if started in this directory (accepted anywhere on the command line).", show_default=False)] = None,
    json_: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout (accepted anywhere on the command line).")] = False,
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
    no_wait: Annotated[bool, typer.Option("--no-wait", envvar="SPARK_NO_WAIT", help="Exit 3 at once when another process holds the task or main mutex, instead of waiting for it.")] = False,
) -> None:
    st = state(ctx)
    st.no_wait = st.no_wait or no_wait
    st.json = st.json or json_
    if directory is not None:
        st.cwd = directory


def command_of(args: list[str]) -> str | None:
    """The command name in `args` (after the root options); None when the root itself answers
    (no command, --help, --version)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--help", "-h", "--version", "-V"):
            return None
        i += 2 if a == "-C" else 1
        if not a.startswith("-"):
            return a
    return None


def load(command: str | None = None) -> typer.Typer:
    """The app with `command`'s module registered; every module for None or an unknown name (help
    lists them all, a typo gets suggestions). For a known command, an app holding only that command
    (and the root options): typer turns every registered function into a click command on each
    run, and the invoked one is all a run can reach."""
    mods = [m for m, names in MODULES.items() if command in names] or list(MODULES)
    for m in mods:
        importlib.import_module(f"spark_git.cli.{m}")
    if command is None or len(mods) != 1:
        return app
    only = copy.copy(app)  # the shared app keeps every command (in-process callers run many)
    only.registered_commands = [c for c in app.registered_commands if _name(c) == command]
    only.registered_groups = [g for g in app.registered_groups if g.name == command]
    return only


def _name(cmd: typer.models.CommandInfo) -> str:
    # typer's own rule for a command registered without a name
    return cmd.name or (cmd.callback.__name__.lower().replace("_", "-") if cmd.callback else "")
