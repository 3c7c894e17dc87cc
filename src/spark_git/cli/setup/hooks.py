"""`hooks install|uninstall|check`: spark-git's entries in each client's settings (what the clients
then run is `hook …`, cli/life/hook.py)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from spark_git.cli.common import Result, complete_client, execute, or_list
from spark_git.cli.root import app
from spark_git.clients import facts, registry
from spark_git.core.layout import Layout
from spark_git.ops.shared import hooksetup
from spark_git.state.backends import open_store


def _scopes() -> str:
    """The settings files per scope, from the clients' facts: what `--scope` chooses between."""
    files: dict[str, list[str]] = {}
    for c in registry.every():
        for scope, f in c.facts.settings.items():
            files.setdefault(scope, []).append(f)
    return or_list([f"{s} ({', '.join(fs)})" for s, fs in files.items() if s != facts.USER] + ["user (~/.<client>/…)"])


_CLIENTS = registry.every()
_NAMES = or_list(list(registry.CLIENTS))
hooks_app = typer.Typer(help=f"Install, remove or check spark-git's hooks in {or_list([c.facts.title for c in _CLIENTS], 'and')}.", no_args_is_help=True)
app.add_typer(hooks_app, name="hooks")

ClientsOpt = Annotated[list[str] | None, typer.Option("--client", help=(
    f"{_NAMES} (repeatable; default: those whose {'/'.join(c.facts.config_dir for c in _CLIENTS)} exists here, else {registry.DEFAULT})."), show_default=False, autocompletion=complete_client)]
ScopeOpt = Annotated[str, typer.Option("--scope", help=f"{_scopes()}.")]


def _next(verb: str, d: Any, scope: str) -> list[str]:
    flags = "".join(f" --client {f.client}" for f in d.files) + (f" --scope {scope}" if scope != "project" else "")
    return [f"spark-git hooks {verb}{flags}"]


@hooks_app.command("install")
def hooks_install(ctx: typer.Context, client: ClientsOpt = None, scope: ScopeOpt = "project") -> None:
    """Add spark-git's hooks to each client's settings (merged, idempotent; the user's hooks kept)."""
    def action(layout: Layout) -> Result:
        from spark_git.cli.setup import guide

        d = hooksetup.install(layout, open_store(layout), client or [], scope, guide.text())
        shown = ", ".join(f.path for f in d.files)
        trusted = sum(len(f.trusted) for f in d.files)  # Codex: entries in the user's Codex config
        also = f"; {trusted} Codex trust entr{'y' if trusted == 1 else 'ies'} written" if trusted else ""
        return Result(f"spark-git hooks {'installed in' if d.changed else 'already in'} {shown}{also}", d, next=_next("uninstall", d, scope))

    execute(ctx, action)


@hooks_app.command("uninstall")
def hooks_uninstall(ctx: typer.Context, client: ClientsOpt = None, scope: ScopeOpt = "project") -> None:
    """Remove only spark-git's entries from each client's settings."""
    def action(layout: Layout) -> Result:
        from spark_git.cli.setup import guide

        d = hooksetup.uninstall(layout, open_store(layout), client or [], scope, guide.text())
        shown = ", ".join(f.path for f in d.files)
        return Result(f"spark-git hooks removed from {shown}" if d.changed else f"no spark-git hooks in {shown}", d)

    execute(ctx, action)


@hooks_app.command("check")
def hooks_check(ctx: typer.Context) -> None:
    """Per agent worktree and client: will the hooks load there (settings committed, or ignored and
    copied, or the user's), and is `spark-git` on the hook's PATH."""
    def action(layout: Layout) -> Result:
        d = hooksetup.check(layout, open_store(layout))
        bad = [c for c in d.checks if not c.loads or c.switched_off]

        def human(out: Any) -> None:
            for c in d.checks:
                out.print(f"  {c.task}/{c.agent} {c.client}: {'loads' if c.loads else 'NOT loaded'}" + (f" from {c.source}" if c.source else "")
                          + (f" · {registry.get(c.client).facts.title} sandbox on" if c.sandbox else ""))
                if c.problem:
                    out.print(f"    {c.problem}")
                for off in c.switched_off:
                    out.print(f"    SWITCHED OFF: {off} (remove it)")
                if c.sandbox is False and c.loads:
                    flag = "" if c.client == registry.DEFAULT else f" --client {c.client}"
                    out.print(f"    its sandbox is missing or out of date (refs came or went since it was written): `spark-git hooks install{flag}`")
            for n in d.notes:
                out.print(f"  note: {n}")

        summary = f"{len(d.checks) - len(bad)}/{len(d.checks)} agent worktree hook(s) will load ({', '.join(d.clients)})"
        return Result(summary, d, status="OK" if d.ok else "FAIL", exit_code=0 if d.ok else 1, human=human)

    execute(ctx, action)
