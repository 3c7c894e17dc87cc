"""`l` in `spark-git watch`: a log followed as it grows (a gate's output, an agent run's stream). New
bytes are read when inotify says the file changed, not on a busy poll; escape or q goes back."""

from __future__ import annotations

import threading
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Log, Static

START_BYTES = 64 * 1024  # how much of an existing log is shown at first: its end
FALLBACK_S = 1.0  # without inotify: how often to look again
IN_MODIFY = 0x002


class LogScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,l", "dismiss_screen", "back")]

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.read_at = max(0, path.stat().st_size - START_BYTES) if path.exists() else 0
        self.stopping = threading.Event()

    def compose(self) -> ComposeResult:
        yield Static(f"following {self.path}  (escape: back)", markup=False)
        yield Log(id="log", auto_scroll=True)

    def on_mount(self) -> None:
        self.query_one(Log).write(self.read_new())
        threading.Thread(target=self._follow, daemon=True, name="watch-log").start()

    def on_unmount(self) -> None:
        self.stopping.set()

    def read_new(self) -> str:
        """What was written since the last read (whole lines only matter to the eye, not to us)."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.read_at)
                data = f.read()
        except OSError:
            return ""
        self.read_at += len(data)
        return data.decode(errors="replace")

    def _follow(self) -> None:
        """One watch on the file for as long as the screen is up: a write while we read is seen next."""
        from spark_git.clients import reload

        w = reload.watch([self.path], IN_MODIFY)
        try:
            while not self.stopping.is_set():
                if w is None:
                    self.stopping.wait(FALLBACK_S)
                else:
                    w.next_read(FALLBACK_S * 5)
                if not self.stopping.is_set() and (text := self.read_new()):
                    self.app.call_from_thread(self.query_one(Log).write, text)
        finally:
            if w is not None:
                w.close()

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)
