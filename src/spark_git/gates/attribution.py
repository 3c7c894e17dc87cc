"""Attribution of commits to agents: the seed convention `[agent] subject`, and the `Spark-Agent:` /
`Spark-Task:` trailers spark-git stamps. The one parser of both; every command that asks "whose
commit is this" asks here."""

from __future__ import annotations

import re

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
