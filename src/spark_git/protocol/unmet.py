"""An unmet condition of a transition, and the one refusal built from a list of them."""

from __future__ import annotations

from dataclasses import dataclass

from spark_git.core.errors import Blocked

CONDITION = "condition"
OWNER = "owner"  # the caller's session does not hold the task lock (never waived, never a blocker)
STATE_LOG_MISMATCH = "state-log-mismatch"  # task.json's state is not where its transition_log leads
FORGED_LOG = "forged-log"  # an entry of the transition_log does not carry spark-git's MAC
NOTHING_CHANGED = "nothing was changed"


FIX_ARROW = "  → "  # between a condition and the command that fixes it (status draws the command on its own line)


@dataclass(frozen=True)
class Unmet:
    condition: str  # what does not hold, in a sentence
    fix: str | None = None  # the shell command that would make it hold (becomes a `next` hint)
    kind: str = CONDITION
    how: str | None = None  # what to do when no command does it, in words (never a `next` hint)

    def __str__(self) -> str:
        said = f"{self.condition}; {self.how}" if self.how else self.condition  # the words stay left of the arrow: right of it is a command
        return said + (f"{FIX_ARROW}{self.fix}" if self.fix else "")


def refuse(what: str, unmet: list[Unmet], task: str, hint: str | None = None, *,
           default_hint: str | None = NOTHING_CHANGED, dedupe: bool = True) -> Blocked:
    """`default_hint=None, dedupe=False`: the older form `merge` and `complete` print."""
    fixes = [u.fix for u in unmet if u.fix]
    return Blocked(
        f"{what}: {len(unmet)} condition(s) not met",
        hint=hint or default_hint,
        details={"unmet": [str(u) for u in unmet]},
        next=list(dict.fromkeys(fixes)) if dedupe else fixes,
        task=task,
    )
