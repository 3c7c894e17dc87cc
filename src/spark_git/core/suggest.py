""""Did you mean …?": the nearest of the names a user could have meant (a task, an agent, a client,
a config key), for refusals of a name that does not exist."""

from __future__ import annotations

import difflib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable


def near(word: str, choices: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, sorted(set(choices)), n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)`, or "" when nothing is near."""
    n = near(word, choices)
    return f" (did you mean {n!r}?)" if n else ""
