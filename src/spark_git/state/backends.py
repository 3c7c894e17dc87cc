"""Store backends by name; `open_store` picks the one the repository's config asks for."""

from __future__ import annotations

from collections.abc import Callable

from spark_git.core.layout import Layout
from spark_git.state.local import LocalStore
from spark_git.state.store import Store


def _remote(layout: Layout) -> Store:
    from spark_git.state.remote import RemoteStore  # lazy: local mode never pays for it

    # One per command: its first read fetches the remote's locks, later ones use that fetch
    # (a stale read only costs a refused push, which fetches again).
    store = layout.cache.get("remote-store")
    if not isinstance(store, RemoteStore):
        store = layout.cache["remote-store"] = RemoteStore(layout)
    return store


BACKENDS: dict[str, Callable[[Layout], Store]] = {
    "local": LocalStore,
    "remote": _remote,
}


def open_store(layout: Layout) -> Store:
    """The remote backend when `[sync] remote` names a remote (`spark-git remote enable NAME`)."""
    return BACKENDS["remote" if layout.config.sync.remote else "local"](layout)


def as_store(where: Store | Layout) -> Store:
    """Callers not yet converted to the Store pass their Layout; converted ones pass their Store."""
    return open_store(where) if isinstance(where, Layout) else where
