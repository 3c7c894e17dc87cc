"""`advance`, `classify`, `report`, `audit` (state-machine issue)."""

from __future__ import annotations

from . import app  # noqa: F401
