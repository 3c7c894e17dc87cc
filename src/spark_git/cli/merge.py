"""`merge`, `sync`, `approve`, `complete`, `who`, `log` (gated-merge issue)."""

from __future__ import annotations

from . import app  # noqa: F401
