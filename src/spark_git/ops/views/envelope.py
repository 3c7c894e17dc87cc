"""The JSON envelope every command prints under --json (DESIGN.md) and the `data` of a refusal or
failure raised as an error: the contract's two generic schemas (`spark-git schema envelope|error`).
A successful command names its own `data` schema through ops/views/schema.py and never defines these."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from spark_git.core.model import Model


class ErrorData(Model):
    """`data` of a refusal or failure raised as an error (`data_schema` "error"): the message, a hint,
    and the details that refusal gives; no other keys."""

    model_config = {"extra": "forbid"}
    error: str
    hint: str | None = None
    # ownership, mutexes and state
    owner: str | None = None
    last_active_at: str | None = None
    session: str | None = None
    mutex: str | None = None
    holder: dict[str, Any] | None = None
    state: str | None = None
    legal_next_states: list[str] | None = None
    unmet: list[str] | None = Field(default=None, description="Protocol conditions not met, each with the command that fixes it.")
    # the repository and the task's files
    path: str | None = None
    problem: str | None = None
    task_dir: str | None = None
    worktree: str | None = None
    agents: list[str] | None = None
    files: list[str] | None = None
    dirty: list[str] | None = None
    conflicts: list[str] | None = None
    collisions: Any = None
    commits: list[str] | None = None
    base_commits: list[str] | None = None
    existing: str | None = None
    name: str | None = None
    kind: str | None = None
    key: str | None = Field(default=None, description="The config key that is wrong.")
    locked: list[str] | None = Field(default=None, description="Locked worktrees (git worktree lock) and why.")
    errors: list[Any] | None = Field(default=None, description="Validation errors (bad config or input), as pydantic reports them.")
    # git and gate failures
    argv: list[str] | None = None
    returncode: int | None = None
    stderr: str | None = None
    cwd: str | None = None
    remote: str | None = Field(default=None, description="The git remote ([sync] remote) that failed.")
    command: Any = None
    exit_code: int | None = None
    timed_out: bool | None = None
    log_path: str | None = None
    log_tail: list[str] | None = None
    failed_tests: list[str] | None = None
    retry: str | None = None
    run_by_hand: str | None = None
    batch: list[str] | None = None
    queue_ref: str | None = None
    url: str | None = Field(default=None, description="`complete --via`: the PR/MR opened on the forge (auto-merge refused).")
    sent_back_to_implementation: bool | None = None
    radar: list[dict[str, Any]] | None = Field(default=None, description="A refused merge: the conflict radar's clashes with other agents' unmerged work (schema `status`, Clash).")
    traceback: str | None = Field(default=None, description="An internal error's (exit 70) traceback.")


class Envelope(Model):
    """Every command's --json output: one object on stdout."""

    model_config = {"extra": "forbid"}
    status: str = Field(description="OK | BLOCKED | FAIL", pattern="^(OK|BLOCKED|FAIL)$")
    summary: str
    task: str | None
    data: dict[str, Any] = Field(description="Follows the schema named by data_schema.")
    next: list[str] = Field(description="Shell commands that make progress from here, each accepted at this moment.")
    data_schema: str | None = Field(description='The schema `data` follows: "error" for a refusal or failure raised as an error, else the command\'s own (e.g. "merge --all", also when BLOCKED).')
