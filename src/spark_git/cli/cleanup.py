"""`cleanup`, `abandon`, `archive`, `doctor`, `lock break` (cleanup issue)."""

from __future__ import annotations

from . import app  # noqa: F401
