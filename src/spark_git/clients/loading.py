"""Will the agents' client sessions (Claude Code, Codex, Gemini) load spark-git's hooks? Warnings for
`start` and `status`, per client: hooks installed in the main worktree's project settings but not
committed (new worktrees are checked out from the branch, so they do not get the file; Codex reads
the main checkout's file, in a worktree that has a `.codex` directory), or configured
while `spark-git` is not on the PATH the client runs hooks with (the hook then fails; with
onFailure=block every tool call is refused). `hooks check` (ops/shared/hooksetup.py) is the full report."""

from __future__ import annotations

import shutil
from pathlib import Path

from spark_git.clients import registry
from spark_git.clients.facts import USER
from spark_git.clients.jsonhooks import file_has

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from spark_git.clients.base import Client


def _loads(worktree: Path, main: Path, c: Client) -> bool:
    """A session of `c` started in `worktree` reads spark-git's hooks from one of the files it loads."""
    event = c.wanted()[0].event
    return any(file_has(p, event) for _where, _scope, p in c.facts.loaded(worktree, main))


def _from_main(main: Path, live: list[Path], c: Client) -> list[str]:
    user = [p for where, _s, p in c.facts.loaded(main, main) if where == USER and file_has(p, c.wanted()[0].event)]
    missing = [] if user else [str(w) for w in live if not (_loads(w, main, c) and (w / c.facts.config_dir).is_dir())]
    if not missing:
        return []
    return [f"{len(missing)} worktree(s) will not load spark-git's {c.name} hooks ({', '.join(missing[:3])}{', …' if len(missing) > 3 else ''}): "
            f"{c.facts.title} reads the main checkout's {c.settings_files()['project']}, and only in a worktree "
            f"with a {c.facts.config_dir} directory; run `spark-git hooks install --client {c.name}`"]


def hook_warnings(main: Path, worktrees: list[Path]) -> list[str]:
    """One line per problem; [] when the hooks are not configured anywhere (nothing was asked for)."""
    live = [w for w in worktrees if w.is_dir()]
    configured = [c for c in registry.every() if _loads(main, main, c) or any(_loads(w, main, c) for w in live)]
    if not configured:
        return []
    out: list[str] = []
    if shutil.which("spark-git") is None:
        names = " / ".join(c.facts.title for c in configured)
        out.append("spark-git hooks are configured but `spark-git` is not on PATH: every hook call will fail "
                   f"(and block); install spark-git where {names} can run it")
    for c in configured:
        if getattr(c, "hooks_from_main", False):  # Codex: the main checkout's file, in a worktree with a .codex dir
            out += _from_main(main, live, c)
            continue
        missing = [str(w) for w in live if not _loads(w, main, c)]
        if not missing:
            continue
        project = c.settings_files()["project"]
        scope = "--scope local" if "local" in c.settings_files() else "--scope user"
        flag = "" if c.name == registry.DEFAULT else f" --client {c.name}"
        out.append(f"{len(missing)} worktree(s) will not load spark-git's {'' if c.name == registry.DEFAULT else c.name + ' '}hooks "
                   f"({', '.join(missing[:3])}{', …' if len(missing) > 3 else ''}): {project} with the hooks is not committed on the base branch; "
                   f"commit it (then `spark-git update`) or run `spark-git hooks install{flag} {scope}` before creating worktrees")
    from spark_git.clients import extras

    for c in configured:  # sessions that would skip the hooks they load (Gemini's trust and hooksConfig)
        off = extras.of(c).warning([w for w in live if _loads(w, main, c)])
        out += [off] if off else []
    return out
