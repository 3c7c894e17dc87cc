"""Store backends by name; `open_store` picks the one the repository's config asks for."""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from spark_git.core.layout import Layout
from spark_git.state.local import LocalStore
from spark_git.state.store import Store


def _remote(layout: Layout) -> Store:
    from spark_git.state.remote import RemoteStore  # lazy: local mode never pays for it

    return RemoteStore(layout)


BACKENDS: dict[str, Callable[[Layout], Store]] = {
    "local": LocalStore,
    "remote": _remote,
}


def open_store(layout: Layout) -> Store:
    """The Store of this command: the remote backend when `[sync] remote` names a remote (`spark-git
    remote enable NAME`), else the local one. One per Layout (each command builds one) and backend:
    the remote one's first read fetches the remote's locks, later ones use that fetch (a stale read
    only costs a refused push, which fetches again)."""
    name = _name(layout)
    store = layout.cache.get(f"store-{name}")
    if store is None:
        store = layout.cache[f"store-{name}"] = BACKENDS[name](layout)
    return cast(Store, store)  # layout.cache holds objects; this key only Stores


def forget(layout: Layout) -> None:
    """Drops this Layout's Store: the next `open_store` builds a new one, which reads the remote afresh
    (a long-lived view, `watch`, refreshing as a new command would)."""
    layout.cache.pop(f"store-{_name(layout)}", None)


def _name(layout: Layout) -> str:
    return "remote" if layout.config.sync.remote else "local"
