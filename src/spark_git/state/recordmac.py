"""The MAC of the records that decide (issue 31): the transition log in task.json and the agents'
reports (status.json). HMAC-SHA256 with the user's records key (`records.key` in the spark-git state
directory, made by core/statekeys.py like the verdict keys), which agents' boxes and sandboxes hide and
the hook refuses: a log rewritten with a recomputed hash chain, or a report written for another agent,
does not verify.

One key per user, not per clone: remote-mode clones of one human share it by copying the file
(docs/decisions.md, "records MAC"). None where it cannot be read (an agent's box): records are not
verified there, and nothing that needs a MAC can be written."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

from spark_git.core import statekeys
from spark_git.core.errors import CorruptState
from spark_git.core.layout import Layout
from spark_git.core.paths import state_dir
from spark_git.state.models import FileModel

KEY_NAME = "records.key"
MAC_FIELD = "mac"


def key_path() -> Path:
    return state_dir() / KEY_NAME


def load_key(layout: Layout) -> bytes | None:
    return statekeys.load(key_path(), [layout.main_worktree, layout.repo.common_dir, layout.tasks_root])


def _mac(key: bytes, kind: str, *parts: str) -> str:
    return hmac.new(key, "\n".join(["spark-git", kind, *parts]).encode(), hashlib.sha256).hexdigest()


def transition_mac(key: bytes, task: str, entry_hash: str) -> str:
    """The MAC of a transition: over its chain hash (which covers every entry before it) and the task."""
    return _mac(key, "transition", task, entry_hash)


def report_mac(key: bytes, task: str, agent: str, body: dict[str, Any]) -> str:
    """The MAC of agent `agent`'s report (`body`: status.json without its MAC) where `task` keeps it."""
    text = json.dumps({k: v for k, v in body.items() if k != MAC_FIELD}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return _mac(key, "report", task, agent, text)


def verifies(mac: object, expected: str) -> bool:
    return isinstance(mac, str) and hmac.compare_digest(mac, expected)


class UnauthenticReport(CorruptState):
    """A status.json without spark-git's MAC for its agent: written by hand, by another agent, or
    copied from another agent's report. It counts as no report; the agent reports again."""


def _body(st: FileModel) -> dict[str, Any]:
    return st.model_dump(mode="json", by_alias=True, exclude={MAC_FIELD})


def seal(key: bytes | None, st: FileModel) -> None:
    """Sets the MAC of `st` (an agent's report, as it is written; None key: none can be made here)."""
    body = _body(st)  # an AgentStatus (state/report_evidence.py, imported only where a report is read)
    setattr(st, MAC_FIELD, report_mac(key, str(body["task"]), str(body["agent"]), body) if key else None)


def report_problem(key: bytes | None, task: str, agent: str, st: FileModel) -> str | None:
    """What is wrong with `st` as agent `agent`'s report in `task` (None: its MAC verifies, or there is
    no key here to check with)."""
    if key is None or verifies(getattr(st, MAC_FIELD, None), report_mac(key, task, agent, _body(st))):
        return None
    return (f"it does not carry spark-git's MAC for agent {agent} of task {task}: it was written by hand, by another agent, "
            "or copied from another agent's report, and counts as no report")
