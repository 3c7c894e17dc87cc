"""Gemini CLI's extras (clients/extras.py): no sandbox or trust entries of spark-git's, but its own
folder trust and `hooksConfig` can switch the hooks off where the settings file has them
(clients/gemini/load.py), and project settings are read only from the folder a session starts in."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.clients import jsonhooks
from spark_git.clients.extras import Extras, Loads, NoExtras
from spark_git.clients.gemini import GEMINI, load
from spark_git.core.layout import Layout
from spark_git.state.store import Store


class GeminiExtras(NoExtras):
    def check(self, layout: Layout, store: Store, worktrees: list[Path], found: list[Loads]) -> list[Loads]:
        project = GEMINI.settings_files()["project"]
        out = []
        for wt, f in zip(worktrees, found, strict=True):
            why = load.problem(wt, os.environ, project, layout.tasks_root) if f.loads else None
            out.append(f._replace(loads=False, problem=why) if why else f)
        return out

    def notes(self, layout: Layout, loading: list[Path]) -> list[str]:
        user = jsonhooks.file_has(GEMINI.settings_files()["user"], GEMINI.wanted()[0].event)
        return [load.SUBDIRECTORY] if loading and not user else []  # project scope only: read from the session's folder alone

    def warning(self, loading: list[Path]) -> str | None:
        return load.warning(loading, os.environ, GEMINI.settings_files()["project"])


EXTRAS: Extras = GeminiExtras()
