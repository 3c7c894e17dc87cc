"""Read-only git for the paths that must answer at interpreter speed (`spark-git statusline`, run by
Claude Code after every message): several git processes at once, standard library only. core/git.py
stays the runner for everything else; its `subprocess` and dataclass-based types cost more start-up
than the whole status line may (issue 13: <= 30 ms over bare Python)."""

from __future__ import annotations

import os

# Variables that would point git at another repository than the one asked about (defined here, where
# importing them costs nothing; core/gittypes.py re-exports them).
GIT_LOCATION_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX")


# git never enters a submodule by itself for spark-git: an agent can commit a gitlink whose `sub/.git`
# names a git dir it made, and `git status` would run that dir's core.fsmonitor (or filters) as the
# user. Submodules are entered only where spark-git asks for them by name (ops/shared/keep.py).
NO_SUBMODULES = (("diff.ignoreSubmodules", "all"), ("submodule.recurse", "false"))


def no_submodules(env: dict[str, str]) -> dict[str, str]:
    """`env` with NO_SUBMODULES appended to the command-line-strength config it may already carry."""
    n = int(env.get("GIT_CONFIG_COUNT") or 0)
    for i, (key, value) in enumerate(NO_SUBMODULES, n):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    env["GIT_CONFIG_COUNT"] = str(n + len(NO_SUBMODULES))
    return env


def run_all(cwd: str, commands: list[list[str]]) -> list[tuple[int, str]]:
    """(exit code, stdout) of each `git <args>`, run side by side in `cwd`, stderr dropped (a status
    line has nowhere to show it). Reads only: no optional locks, so an agent's `git add` never trips
    on an index.lock of ours."""
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCATION_ENV}
    env = no_submodules({**env, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "LANGUAGE": "C"})
    started = []
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        for args in commands:
            r, w = os.pipe()
            fa = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, w, 1), (os.POSIX_SPAWN_DUP2, devnull, 2), (os.POSIX_SPAWN_CLOSE, r)]
            try:
                pid = os.posix_spawnp("git", ["git", "-C", cwd, *args], env, file_actions=fa)
            except OSError:
                os.close(r)
                pid = -1
            os.close(w)
            started.append((pid, r))
        return [_collect(pid, r) for pid, r in started]
    finally:
        os.close(devnull)


def _collect(pid: int, r: int) -> tuple[int, str]:
    if pid < 0:
        return 127, ""
    chunks = []
    with os.fdopen(r, "rb") as f:
        chunks.append(f.read())
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode("utf-8", "replace")
