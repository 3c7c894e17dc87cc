"""Build caches are not work: cleanup and abandon remove them without archiving (`.pytest_cache` was 15
of a day's 39 archive refs). A path is a cache when one of its components matches a name."""

from __future__ import annotations

from fnmatch import fnmatchcase

from spark_git.core.config import Config

BUILTIN = (".pytest_cache", "__pycache__", ".mypy_cache", ".ruff_cache")


def names(config: Config) -> tuple[str, ...]:
    return BUILTIN + tuple(config.cleanup.caches)


def is_cache(rel: str, cache_names: tuple[str, ...]) -> bool:
    return any(fnmatchcase(part, n) for part in rel.rstrip("/").split("/") for n in cache_names)


def untracked_cache(entry: str, cache_names: tuple[str, ...]) -> bool:
    """A `git status --porcelain` line ("?? path") of an untracked cache file."""
    return entry.startswith("?? ") and is_cache(entry[3:], cache_names)
