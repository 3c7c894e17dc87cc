"""`spark-git env`: a worktree's SPARK_* variables (shared/envs.py computes them), for a shell."""

from __future__ import annotations

import json
import shlex

from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout, agent_name, task_name
from spark_git.core.model import Model
from spark_git.ops.shared.envs import spark_vars
from spark_git.state.backends import open_store


class EnvData(Model):
    task: str
    agent: str | None
    worktree: str
    vars: dict[str, str]


def render(vars_: dict[str, str], shell: str) -> str:
    if shell == "json":
        return json.dumps(vars_, indent=2)
    if shell == "fish":
        return "\n".join(f"set -gx {k} {_fish_quote(v)};" for k, v in vars_.items())
    if shell == "bash":
        return "\n".join(f"export {k}={shlex.quote(v)}" for k, v in vars_.items())
    raise BadInput(f"bad --shell {shell!r}: use bash, fish or json")


def _fish_quote(v: str) -> str:
    return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"


def env_data(layout: Layout, task: str, agent: str | None) -> EnvData:
    task_name(task)
    if agent is not None:
        agent_name(agent)
    v = spark_vars(open_store(layout), task, agent)
    return EnvData(task=task, agent=agent, worktree=v["SPARK_WORKTREE"], vars=v)
