"""Worktree provisioning: copy the git-ignored files a build needs (`.env`, local config) into each
new worktree, then run the post-create setup commands there, output to `<task>/logs/`.

Patterns come from `.worktreeinclude` at the main worktree's root (gitignore syntax) and from the
config's `worktree.include`. Only files git ignores are copied (tracked files come with the checkout)
and never through a symlink that leaves the repository. A failing setup command keeps the worktree
and is reported with its log."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import Field

from spark_git.clients import registry
from spark_git.core import proc
from spark_git.core.gatebox import Sandbox
from spark_git.core.layout import Layout
from spark_git.core.model import Model, empty_list
from spark_git.ops.shared import envs
from spark_git.state.store import Store

INCLUDE_FILE = ".worktreeinclude"


class SetupRun(Model):
    command: list[str] | str
    exit_code: int | None  # None: killed at the timeout
    duration_s: float
    log: str


class ProvisionReport(Model):
    agent: str | None
    worktree: str
    copied: list[str] = Field(default_factory=empty_list)
    skipped_symlinks: list[str] = Field(default_factory=empty_list, description="Symlinks not copied: they point outside the repository.")
    setup: list[SetupRun] = Field(default_factory=empty_list)
    setup_skipped: bool = False
    failed: SetupRun | None = None
    sandbox: bool = Field(default=False, description="Claude Code's sandbox written into the agent worktree's .claude/settings.local.json (spark-git's Claude hooks are installed).")


def provision(
    layout: Layout,
    store: Store,
    task: str,
    agent: str | None,
    worktree: Path,
    *,
    no_setup: bool = False,
    progress: Callable[[str], None] = lambda _m: None,
    included: list[str] | None = None,
) -> ProvisionReport:
    """`included`: `included_files(layout)` when the caller provisions several worktrees (one scan of
    the main worktree for all of them); None: scanned here."""
    rep = ProvisionReport(agent=agent, worktree=str(worktree))
    copy_included(layout, worktree, rep, included_files(layout) if included is None else included)
    if layout.config.worktree.setup and no_setup:
        rep.setup_skipped = True
    elif layout.config.worktree.setup:
        run_setup(layout, store, task, agent, worktree, rep, progress)
    return rep


# -- copying ------------------------------------------------------------------------------------


def included_files(layout: Layout, clients: bool = True) -> list[str]:
    """The main worktree's ignored files and directories (relative, sorted) that match the include
    patterns: what every new worktree gets a copy of. `clients`: with the agent clients' local hook
    settings (a gate's checkout runs no agent: it gets only `[worktree] include`)."""
    src_root = layout.main_worktree
    inc = src_root / INCLUDE_FILE
    pattern_file = inc if inc.is_file() and not inc.is_symlink() else None
    git = layout.git()
    # The clients' local or ignored hook settings (`hooks install --scope local`) go wherever agents work
    # (committed ones come with the checkout).
    patterns = [*layout.config.worktree.include, *(registry.repo_settings() if clients else ())]  # a middle slash anchors it at the root
    candidates = git.untracked_matching(patterns, pattern_file)
    if not candidates:
        return []
    ignored = git.ignored([c.rstrip("/") for c in candidates])
    skip = Path(os.path.realpath(layout.tasks_root))
    # untracked but not ignored: someone's work in progress, not local config
    found = [rel for rel in (c.rstrip("/") for c in sorted(candidates)) if rel in ignored]
    return [rel for rel in found if not Path(os.path.realpath(src_root / rel)).is_relative_to(skip)]


def copy_included(layout: Layout, dest: Path, rep: ProvisionReport, included: list[str]) -> None:
    repo_real = Path(os.path.realpath(layout.main_worktree))
    for rel in included:
        _copy_tree(layout.main_worktree / rel, dest / rel, rel, repo_real, rep)


def _copy_tree(src: Path, dst: Path, rel: str, repo_real: Path, rep: ProvisionReport) -> None:
    if src.is_symlink():
        target = Path(os.path.realpath(src))
        if not target.is_relative_to(repo_real):
            rep.skipped_symlinks.append(rel)
            return
        if not dst.exists() and not dst.is_symlink():
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(src), dst)  # same link text: a relative link stays inside the new worktree
            rep.copied.append(rel)
        return
    if src.is_dir():
        for child in sorted(src.iterdir()):
            _copy_tree(child, dst / child.name, f"{rel}/{child.name}", repo_real, rep)
        return
    if not src.is_file() or dst.exists() or dst.is_symlink():
        return  # sockets, fifos; or something already there (never overwritten)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst, follow_symlinks=False)
    rep.copied.append(rel)


# -- setup commands -----------------------------------------------------------------------------


def run_setup(layout: Layout, store: Store, task: str, agent: str | None, worktree: Path, rep: ProvisionReport, progress: Callable[[str], None],
              sandbox: Sandbox | None = None) -> None:
    """`sandbox`: run them in a box (a gate's checkout: they run the agent's tree)."""
    env = envs.for_worktree(store, task, agent)
    logs = layout.logs_dir(task)
    logs.mkdir(parents=True, exist_ok=True)
    cmds = layout.config.worktree.setup
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    who = agent or "task"
    for i, cmd in enumerate(cmds, 1):
        if cmd is None:
            continue
        shown = cmd if isinstance(cmd, str) else " ".join(cmd)
        progress(f"setup {i}/{len(cmds)} in {worktree}: {shown}")
        log = logs / f"setup-{who}-{stamp}-{i}.log"
        run = _run(cmd, worktree, env, log, layout.config.gates.timeout_s, sandbox)
        rep.setup.append(run)
        if run.exit_code != 0:
            rep.failed = run
            return  # later commands usually depend on earlier ones


def _run(cmd: list[str] | str, cwd: Path, env: dict[str, str], log: Path, timeout: float, sandbox: Sandbox | None = None) -> SetupRun:
    with open(log, "wb") as out:
        out.write(f"$ {cmd if isinstance(cmd, str) else ' '.join(cmd)}\n# in {cwd}\n".encode())
        out.flush()
        # the whole group dies at the end, on timeout, Ctrl-C or our death: installers spawn children
        res = proc.run(proc.argv_of(cmd), cwd, out, timeout, env=env, sandbox=sandbox)
        if res.os_error is not None:
            out.write(f"cannot run: {res.os_error}\n".encode())
            return SetupRun(command=cmd, exit_code=127, duration_s=0.0, log=str(log))
        if res.timed_out:
            out.write(f"\nkilled after {timeout:.0f}s (gates.timeout_s)\n".encode())
    return SetupRun(command=cmd, exit_code=None if res.timed_out else res.exit_code, duration_s=res.duration_s, log=str(log))


def failures(reports: list[ProvisionReport]) -> list[ProvisionReport]:
    return [r for r in reports if r.failed is not None]


def failure_summary(reports: list[ProvisionReport]) -> str:
    parts = []
    for r in failures(reports):
        f = r.failed
        assert f is not None
        code = "timed out" if f.exit_code is None else f"exit {f.exit_code}"
        parts.append(f"setup failed in {r.worktree} ({code}); log: {f.log}")
    return "; ".join(parts)
