"""`spark-git init`: the set-up in one step — asks (at a terminal) or takes flags, shows the diff,
writes and commits on the yes (ops/setup/init.py)."""

from __future__ import annotations

import shlex
import sys
from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, complete_client, execute, or_list
from spark_git.cli.root import app
from spark_git.clients import registry
from spark_git.core.layout import Layout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from spark_git.ops.setup.init import InitData

Protocol = Annotated[str | None, typer.Option("--protocol", help="light (the gates and your approval) or full (every protocol state).", show_default=False)]
Build = Annotated[str | None, typer.Option("--build", help="The build gate: a command that exits 0 when the work is good (default: what the project shows, e.g. pytest).", show_default=False)]
Final = Annotated[str | None, typer.Option("--final", help="The final gate run on the merged result before landing (default: none).", show_default=False)]
Approvers = Annotated[str | None, typer.Option("--approvers", help="A committed allowed-signers file of the team's approvers.", show_default=False)]
Clients = Annotated[list[str] | None, typer.Option("--client", help=f"{or_list(list(registry.CLIENTS))} to hook (repeatable; default: those on PATH).", show_default=False, autocompletion=complete_client)]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Write and commit without asking (for scripts).")]


@app.command("init")
def init(ctx: typer.Context, protocol: Protocol = None, build: Build = None, final: Final = None, approvers: Approvers = None,
         client: Clients = None, yes: Yes = False) -> None:
    """Set spark-git up in this repository: protocol, gates, approvers, hooks; shows what changes, commits on yes."""
    from spark_git.ops.setup import init as ops

    def action(layout: Layout) -> Result:
        root = layout.repo.toplevel or layout.main_worktree
        ask = sys.stdin.isatty() and not yes
        detected = ops.detect(root)
        p = protocol or (_choose("protocol", ops.PROTOCOLS, "light") if ask else "light")
        b = build if build is not None else (typer.prompt("build gate (a command; empty: none)", default=detected[0] if detected else "") if ask else
                                             (detected[0] if detected else None))
        f = final if final is not None else (typer.prompt("final gate (empty: none)", default="") if ask else None)
        names = client if client is not None else ops.clients_on_path() or [registry.DEFAULT]
        d = ops.plan(layout, protocol=p, build=b or None, final=f or None, approvers=approvers, clients=names)
        flags = _flags(d)
        if not d.changed:
            return Result("spark-git is set up here as asked: nothing to change", d, next=_then())
        if not yes and not (ask and _show(d) and typer.confirm(f"write these and commit them on {layout.base_branch()}?", default=True)):
            return Result("spark-git init: nothing written (this is what would change)", d, next=[f"spark-git init{flags} --yes"], human=_diff(d))
        from spark_git.cli.setup import guide
        from spark_git.state.backends import open_store

        d = ops.apply(layout, open_store(layout), d, commit=True, guide=guide.text())
        done = f"committed as {d.committed[:12]}" if d.committed else "written (nothing new to commit)"
        return Result(f"spark-git set up: protocol {d.protocol}, build gate {d.build or 'none'}, hooks for {', '.join(d.clients)}; {done}", d,
                      next=_then(), human=_diff(d))

    execute(ctx, action)


def _choose(what: str, options: dict[str, str], default: str) -> str:
    for name, line in options.items():
        typer.echo(f"  {name:<6} {line}")
    got: str = typer.prompt(what, default=default)
    return got


def _show(d: InitData) -> bool:
    typer.echo(d.diff or "(the config stays as it is)")
    if d.hooks_to_install:
        typer.echo(f"hooks to install: {', '.join(d.hooks_to_install)}")
    return True


def _diff(d: InitData) -> Callable[[Out], None]:
    def human(out: Out) -> None:
        for ln in d.diff.splitlines():
            out.print(ln, markup=False, highlight=False)
        if d.hooks_to_install:
            out.print(f"hooks to install: {', '.join(d.hooks_to_install)}", markup=False)

    return human


def _flags(d: InitData) -> str:
    out = f" --protocol {d.protocol}"
    out += f" --build {shlex.quote(d.build)}" if d.build else ""
    out += f" --final {shlex.quote(d.final)}" if d.final else ""
    out += f" --approvers {shlex.quote(d.approvers)}" if d.approvers else ""
    return out + "".join(f" --client {c}" for c in d.clients)


def _then() -> list[str]:
    """The three commands that come next."""
    return ["spark-git start my-task --agents coder", "spark-git agent run my-task coder", "spark-git merge my-task --agent coder"]
