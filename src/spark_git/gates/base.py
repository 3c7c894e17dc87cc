"""The `Gate` interface: one check a change must pass before it lands. A gate kind is one module
with one class behind this interface plus one line in `registry.GATES`.

A gate is built with its configuration (what to run, which commits to look at); `check` then
either returns the evidence of what it ran (command gates), returns None (checks that only read),
or raises `Blocked` saying what to fix."""

from __future__ import annotations

from typing import ClassVar, Protocol

from spark_git.core.git import Git
from spark_git.gates.evidence import GateEvidence


class Gate(Protocol):
    name: ClassVar[str]  # the registry key

    def check(self, git: Git, task: str | None) -> GateEvidence | None:
        """`git`: the worktree under test; `task`: named in refusals."""
