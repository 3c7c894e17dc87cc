"""`spark-git ci github|gitlab [--write]`: the forge job that verifies every push to the base branch."""

from __future__ import annotations

from typing import Annotated

import typer

from spark_git.cli.common import Out, Result, _esc, execute
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.ops.setup import ci as ops


@app.command("ci")
def ci(
    ctx: typer.Context,
    forge: Annotated[str, typer.Argument(metavar="github|gitlab", help="The forge whose CI runs the job.")],
    write: Annotated[bool, typer.Option("--write", help="Write it into the main worktree (GitHub: .github/workflows/spark-verify.yml; GitLab: appended to .gitlab-ci.yml); default: print it.")] = False,
    install: Annotated[str, typer.Option("--install", help="How the job installs spark-git.")] = ops.INSTALL,
) -> None:
    """The CI job that runs `spark-git verify --fetch` on every push to the base branch: a push that bypassed the queue fails it."""
    def action(layout: Layout) -> Result:
        d = ops.ci(layout, forge, write=write, install=install)

        def human(out: Out) -> None:
            if d.written == "printed":
                out.print(_esc(d.text.rstrip("\n")))

        if d.written == "printed":
            return Result(f"the {d.forge} job (runs `{d.command}`); --write puts it in {d.path}", d, human=human,
                          next=[f"spark-git ci {d.forge} --write"])
        return Result(f"{d.path}: {d.written}; commit it so the forge runs `{d.command}` on every push", d,
                      next=[f"git add {d.path} && git commit -m 'CI: spark-git verify on every push'"])

    execute(ctx, action)
