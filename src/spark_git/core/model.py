"""The base of spark-git's pydantic models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    # Built on first use, not at import: a command imports dozens of models and validates a few, and
    # building one costs about a millisecond of every start-up (57 were built eagerly on `merge`).
    model_config = ConfigDict(defer_build=True)
