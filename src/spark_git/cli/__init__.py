"""The typer CLI. Each module registers one command family on `spark_git.cli.root.app`; commands only
parse, call the domain and render. `from spark_git.cli import app` is the whole app (every module
registered); `spark-git` itself loads only the invoked command's module (cli/root.py)."""

from __future__ import annotations

from typing import Any

from spark_git.cli.common import AppState

__all__ = ["AppState", "app"]


def __getattr__(name: str) -> Any:
    if name == "app":
        from spark_git.cli.root import load

        return load()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
