"""The Textual app of `spark-git watch`. It redraws when the state directories change (inotify,
clients/reload.py; a slow timer where there is none), never on a busy poll; in remote mode it also
fetches the shared remote every FETCH_S and says when it last did. Actions that need the
human (approve, merge) suspend the app and run the ordinary command on the terminal: the same flow,
the same signed approval, typed there."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from spark_git.cli.views import watchframe
from spark_git.core.layout import Layout
from spark_git.ops.views import watch as watch_mod
from spark_git.ops.views.watch import WatchSnapshot
from spark_git.state.store import Store

FALLBACK_S = 5.0  # without inotify: how often to look again
FETCH_S = 10.0  # remote mode: how often the shared remote is fetched (other machines' changes make no local event)
SETTLE_S = 0.05  # a burst of writes (a command rewriting several files) makes one refresh
KEYS = [("↑/↓", "move"), ("enter", "the task in full"), ("a", "approve the task (suspends; the approval is typed here)"),
        ("t", "switch to the agent's tmux window"), ("l", "follow the task's log (a gate running, else the newest log or agent run)"), ("m", "merge the agent waiting for a merge"), ("r", "refresh now"),
        ("?", "these keys"), ("q", "quit")]


class TextScreen(ModalScreen[None]):
    """Lines to read (the keys, a task in full); any of escape, q or enter goes back."""

    BINDINGS = [Binding("escape,q,enter,question_mark", "dismiss_screen", "back")]

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def compose(self) -> ComposeResult:
        yield VerticalScroll(Static("\n".join(self.lines), markup=False, id="text"))

    def action_dismiss_screen(self) -> None:
        self.dismiss(None)


class WatchApp(App[None]):
    TITLE = "spark-git watch"
    CSS = "#attention { color: $warning; } DataTable { height: auto; max-height: 50%; }"
    BINDINGS = [Binding("q", "quit", "quit"), Binding("question_mark", "keys", "keys"), Binding("r", "reload", "refresh"),
                Binding("a", "approve", "approve"), Binding("t", "tmux", "tmux"), Binding("l", "log", "log"),
                Binding("m", "merge", "merge")]

    def __init__(self, load: Callable[[], WatchSnapshot], dirs: Callable[[], list[Path]], detail: Callable[[str, int], list[str]],
                 log_of: Callable[[str], Path | None], run_cmd: Callable[[list[str]], None] | None = None, fetch_s: float = FETCH_S) -> None:
        super().__init__()
        self.load, self.dirs, self.detail, self.log_of = load, dirs, detail, log_of
        self.fetch_s = fetch_s
        self.run_cmd = run_cmd or self._suspended
        self.snap: WatchSnapshot | None = None
        self.stopping = threading.Event()

    def compose(self) -> ComposeResult:
        yield Static("", id="attention", markup=False)
        yield DataTable(id="tasks", cursor_type="row")
        yield Static("", id="rest", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns("TASK", "STATE", "OWNER", "IDLE", "AGENTS", "QUEUE")
        self.show(self.load())
        threading.Thread(target=self._follow, daemon=True, name="watch-inotify").start()

    def on_unmount(self) -> None:
        self.stopping.set()

    def show(self, snap: WatchSnapshot) -> None:
        self.snap = snap
        w = max(20, self.size.width - 2) if self.size.width else None
        self.query_one("#attention", Static).update("\n".join(watchframe.attention_lines(snap, w)))
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        for t in snap.tasks:
            table.add_row(t.task, t.state, t.owner or "-", watchframe.duration(t.idle_s), str(t.agents),
                          f"#{t.queue_position}" if t.queue_position else "-", key=t.task)
        if snap.tasks:
            table.move_cursor(row=min(row, len(snap.tasks) - 1))
        rest = [*watchframe.agent_lines(snap, w), "", *watchframe.running_lines(snap, w), "", *watchframe.other_lines(snap, w), f"updated {snap.at}"]
        self.query_one("#rest", Static).update("\n".join(rest))

    def _follow(self) -> None:
        """Waits for a change under the state directories, then has the app load a new snapshot. The
        watch stays open while the directories are the same, so a change made during a load is seen next."""
        from spark_git.clients import reload

        dirs: list[Path] | None = None
        w: reload.Watch | None = None
        try:
            while not self.stopping.is_set():
                now = self.dirs()
                if now != dirs:  # a task came or went: watch the new set, and load at once (a change may precede the watch)
                    if w is not None:
                        w.close()
                    dirs, w = now, reload.watch(now, reload.IN_CHANGED)
                elif w is None:
                    self.stopping.wait(FALLBACK_S)
                elif w.next_read(self.fetch_s if self.snap is not None and self.snap.remote else FALLBACK_S * 12) is not None:
                    while w.next_read(SETTLE_S) is not None:
                        pass
                if not self.stopping.is_set():
                    snap = self.load()
                    self.call_from_thread(self.show, snap)
        finally:
            if w is not None:
                w.close()

    def selected(self) -> str | None:
        if self.snap is None or not self.snap.tasks:
            return None
        return self.snap.tasks[min(self.query_one(DataTable).cursor_row, len(self.snap.tasks) - 1)].task

    def action_reload(self) -> None:
        self.show(self.load())

    def action_keys(self) -> None:
        self.push_screen(TextScreen(["keys", *(f"  {k:6} {what}" for k, what in KEYS)]))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        task = self.selected()
        if task is not None:
            self.push_screen(TextScreen(self.detail(task, max(20, self.size.width - 4))))

    def action_approve(self) -> None:
        task = self.selected()
        waiting = [a for a in (self.snap.attention if self.snap else []) if a.kind == "approval" and a.task == task]
        if not waiting or not waiting[0].next:
            self.notify(f"{task or 'no task'}: no approval waits", severity="warning")
            return
        self.run_cmd(waiting[0].next.split())
        self.action_reload()

    def action_merge(self) -> None:
        task = self.selected()
        ready = [a for a in (self.snap.agents if self.snap else []) if a.task == task and a.doing == "waiting for a merge"]
        if not ready:
            self.notify(f"{task or 'no task'}: no agent waits for a merge", severity="warning")
            return
        self.run_cmd(["spark-git", "merge", ready[0].task, "--agent", ready[0].agent])
        self.action_reload()

    def action_log(self) -> None:
        from spark_git.cli.views.watchlog import LogScreen

        task = self.selected()
        path = self.log_of(task) if task else None
        if path is None:
            self.notify(f"{task or 'no task'}: no log yet", severity="warning")
            return
        self.push_screen(LogScreen(path))

    def action_tmux(self) -> None:
        task = self.selected()
        windows = [a.window for a in (self.snap.agents if self.snap else []) if a.task == task and a.window]
        if not windows:
            self.notify(f"{task or 'no task'}: no agent runs in a tmux window", severity="warning")
            return
        subprocess.run(["tmux", "select-window", "-t", windows[0]], check=False)

    def _suspended(self, argv: list[str]) -> None:
        """The command on the terminal, the app out of the way until it ends."""
        with self.suspend():
            subprocess.run([sys.executable, "-m", "spark_git", *argv[1:]], check=False)
            input("press enter to go back to watch ")


def _task_in_full(layout: Layout, task: str, width: int) -> list[str]:
    from spark_git.cli.views import statusview
    from spark_git.ops.views import status as status_mod

    return [ln for t in status_mod.collect(layout, task).tasks for ln in statusview.task_lines(t, width)]


def _fresh(layout: Layout) -> Store:
    """Each refresh a new command's worth of reading: in remote mode, a new fetch of the shared remote."""
    from spark_git.state.backends import forget, open_store

    forget(layout)
    return open_store(layout)


def make(layout: Layout, *, with_radar: bool = True, run_cmd: Callable[[list[str]], None] | None = None, fetch_s: float = FETCH_S) -> WatchApp:
    return WatchApp(lambda: watch_mod.snapshot(layout, _fresh(layout), with_radar=with_radar), lambda: watch_mod.watched_dirs(layout),
                    lambda task, width: _task_in_full(layout, task, width), lambda task: watch_mod.log_of(layout, task), run_cmd, fetch_s)


def run(layout: Layout, *, with_radar: bool = True) -> None:
    make(layout, with_radar=with_radar).run()
