"""Attribution of commits to agents: the seed convention `[agent] subject`, and the `Spark-Agent:` /
`Spark-Task:` trailers spark-git stamps. The one parser of both; every command that asks "whose
commit is this" asks here. `AttributionGate`: the `attribution.mode = "require"` check."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from spark_git.core.errors import Blocked
from spark_git.core.git import Git
from spark_git.gates.base import Gate, MergeSubject


def subject_prefix(agent: str) -> str:
    return f"[{agent}]"


def trailer_agent(message: str) -> str | None:
    m = re.findall(r"^Spark-Agent:\s*(\S+)\s*$", message, flags=re.M)
    return m[-1] if m else None


def prefix_agent(message: str) -> str | None:
    m = re.match(r"\[([a-z0-9][a-z0-9._-]{0,62})\]", message)
    return m.group(1) if m else None


def attributed_to(message: str, agent: str) -> bool:
    return prefix_agent(message) == agent or trailer_agent(message) == agent


def stamp_message(message: str, agent: str, task: str) -> str:
    """`[agent] subject` plus Spark-Agent / Spark-Task trailers (each added only when missing)."""
    subject, sep, body = message.partition("\n")
    if prefix_agent(subject) != agent:
        subject = f"{subject_prefix(agent)} {subject}"
    text = (subject + sep + body).rstrip("\n")
    trailers = []
    if trailer_agent(message) != agent:
        trailers.append(f"Spark-Agent: {agent}")
    if not re.search(rf"^Spark-Task:\s*{re.escape(task)}\s*$", message, flags=re.M):
        trailers.append(f"Spark-Task: {task}")
    if trailers:
        last_para = text.rsplit("\n\n", 1)[-1] if "\n\n" in text else ""
        is_trailer_block = bool(last_para) and all(re.match(r"^[A-Za-z0-9-]+: ", ln) for ln in last_para.splitlines())
        text += ("\n" if is_trailer_block else "\n\n") + "\n".join(trailers)
    return text + "\n"


def check_attributed(messages: dict[str, str], agent: str, branch: str, task: str | None) -> None:
    """Blocked unless every commit in `messages` (sha → message, oldest first) is attributed to `agent`."""
    unattributed = [sha for sha in messages if not attributed_to(messages[sha], agent)]
    if unattributed:
        raise Blocked(
            f"{len(unattributed)} commit(s) on {branch} are not attributed to {agent}",
            hint=f"start each subject with '{subject_prefix(agent)} ' or add a 'Spark-Agent: {agent}' trailer (git rebase -i / commit --amend), or set attribution.mode = \"add\"",
            details={"commits": [f"{sha[:12]} {messages[sha].splitlines()[0] if messages[sha] else ''}" for sha in unattributed]},
            task=task,
        )


@dataclass(frozen=True)
class AttributionGate:
    """Only mode "require" refuses; "add" stamps the commits at merge time and "off" ignores them."""

    name: ClassVar[str] = "attribution"
    agent: str
    branch: str
    messages: dict[str, str]  # the commits to land: sha → message, oldest first
    mode: str = "require"

    @classmethod
    def for_merge(cls, subject: MergeSubject) -> list[tuple[Gate, Git]]:
        return [(cls(subject.agent, subject.branch, subject.messages, subject.attribution_mode), subject.agent_wt)]

    def check(self, git: Git, task: str | None) -> None:
        if self.mode == "require":
            check_attributed(self.messages, self.agent, self.branch, task)
