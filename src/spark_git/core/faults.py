"""Fault injection for crash tests: the process kills itself (SIGKILL, no cleanup) at a chosen point.

- `SPARK_FAULT_KILL_AT=<name>`: at `point(name)` in the code.
- `SPARK_FAULT_KILL_AFTER_GIT=<n>`: right after the n-th git subprocess this process ran finishes.
- `SPARK_FAULT_SIGNAL=INT` (or TERM): that signal instead of SIGKILL, e.g. a Ctrl-C, whose cleanup runs.
All are read from the environment on every check, so production runs pay one dict lookup.
"""

from __future__ import annotations

import itertools
import os
import signal

# Per-process count of git commands run; only consulted when SPARK_FAULT_KILL_AFTER_GIT is set.
_git_calls = itertools.count(1)


def _die() -> None:
    name = os.environ.get("SPARK_FAULT_SIGNAL", "KILL")
    os.kill(os.getpid(), signal.Signals[f"SIG{name}"])


def point(name: str) -> None:
    if os.environ.get("SPARK_FAULT_KILL_AT") == name:
        _die()


def after_git() -> None:
    target = os.environ.get("SPARK_FAULT_KILL_AFTER_GIT")
    if target and next(_git_calls) == int(target):
        _die()
