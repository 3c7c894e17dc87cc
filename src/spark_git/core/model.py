"""The base of spark-git's pydantic models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    # Built on first use, not at import: a command imports dozens of models and validates a few, and
    # building one costs about a millisecond of every start-up (57 were built eagerly on `merge`).
    model_config = ConfigDict(defer_build=True)


def empty_list() -> list[Any]:
    """The default factory of list fields. Not the builtin `list`: pydantic inspects every default
    factory's signature when the class is built, and for a builtin that means parsing its text
    signature with `ast` (≈ 1.8 M instructions each, 11 on `merge`'s path)."""
    return []
