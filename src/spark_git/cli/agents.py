"""`hook`, `hooks`, `env`, `schema` (real-agents issue)."""

from __future__ import annotations

from . import app  # noqa: F401
