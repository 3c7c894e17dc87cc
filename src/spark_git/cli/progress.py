"""Rich progress on a terminal for commands that take time (worktree creation and checkout, setup
commands, cleanup per worktree, archiving, doctor's scans). Imported only when stderr is a terminal
and --json is off (cli/common.py: progress), so pipes and agents never pay for rich.progress."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID


class TerminalProgress:
    """The current step beside a spinner and its elapsed time; finished steps stay above it as dim
    lines, so the terminal keeps a record of what was done. Transient: the live line is gone when
    the result is drawn."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._last: str | None = None
        self._lock = threading.Lock()  # steps may be reported from worker threads (parallel checkouts)

    def __call__(self, msg: str) -> None:
        with self._lock:
            self._step(msg)

    def _step(self, msg: str) -> None:
        from rich.markup import escape

        if self._bar is None:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
            from rich.table import Column

            # A long step (a worktree path) is cut, never the spinner or the elapsed time beside it.
            text = TextColumn("{task.description}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1))
            self._bar = Progress(SpinnerColumn(), text, TimeElapsedColumn(), console=self.console, transient=True, expand=True)
            self._bar.start()
            self._task = self._bar.add_task(escape(msg), total=None)
        else:
            assert self._task is not None
            self._bar.console.print(f"[dim]… {escape(self._last or '')}[/dim]")
            self._bar.update(self._task, description=escape(msg))
        self._last = msg

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._bar is not None:
            from rich.markup import escape

            self._bar.stop()
            if self._last:
                self.console.print(f"[dim]… {escape(self._last)}[/dim]")
            self._bar = None
