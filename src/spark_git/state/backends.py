"""Store backends by name; `open_store` picks the one the repository's config asks for."""

from __future__ import annotations

from collections.abc import Callable

from spark_git.core.layout import Layout
from spark_git.state.local import LocalStore
from spark_git.state.store import Store

BACKENDS: dict[str, Callable[[Layout], Store]] = {
    "local": LocalStore,
}


def open_store(layout: Layout) -> Store:
    return BACKENDS["local"](layout)


def as_store(where: Store | Layout) -> Store:
    """Callers not yet converted to the Store pass their Layout; converted ones pass their Store."""
    return open_store(where) if isinstance(where, Layout) else where
