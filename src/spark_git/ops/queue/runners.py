"""At most N gate runs at once (`[queue] parallel`), each driven by a thread through the one process
runner (core/proc.py: own process group, dies with us, a watchdog for a SIGKILL). A run the planner
no longer needs, and every run when the drain stops (Ctrl-C, an error), is stopped by killing the
processes whose environment holds its mark (SPARK_WORKTREE=<its scratch worktree>): the thread then
sees its gate end and removes the scratch worktree as after any run."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from types import TracebackType
from typing import Generic, TypeVar

from spark_git.core import proc

K = TypeVar("K")
R = TypeVar("R")
RE_KILL_S = 0.2  # a stopped run's thread may still be starting its gate: kill its mark again this often


class Runners(Generic[K, R]):
    def __init__(self, n: int) -> None:
        sib = proc.Siblings()  # each thread's runs spare the others' children (core/proc.py)
        self.pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="spark-queue-gate", initializer=proc.SIBLINGS.set, initargs=(sib,))
        self.live: dict[Future[R], tuple[K, str]] = {}
        self.stopped: dict[Future[R], str] = {}  # runs being killed: waited for, their results dropped

    def submit(self, key: K, mark: str, fn: Callable[[], R]) -> None:
        self.live[self.pool.submit(fn)] = (key, mark)

    def running(self) -> list[K]:
        return [k for k, _ in self.live.values()]

    def stop(self, key: K) -> bool:
        """Kills the run of `key`; False if it was not running (it ended already)."""
        hit = False
        for f, (k, mark) in list(self.live.items()):
            if k == key:
                del self.live[f]
                self.stopped[f] = mark
                proc.kill_marked(mark)
                hit = True
        return hit

    def done(self) -> list[tuple[K, R]]:
        """Waits until a live run ends; its key and result (a run's exception is raised here)."""
        while True:
            finished, _ = wait([*self.live, *self.stopped], timeout=RE_KILL_S if self.stopped else None, return_when=FIRST_COMPLETED)
            self._reap()
            out = [(self.live.pop(f)[0], f.result()) for f in finished if f in self.live]
            if out or not self.live:
                return out

    def _reap(self) -> None:
        for f, mark in list(self.stopped.items()):
            if f.done():
                del self.stopped[f]
            else:
                proc.kill_marked(mark)

    def __enter__(self) -> Runners[K, R]:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        """Leaves nothing running: every run still going is killed and waited for (its thread removes its worktree)."""
        for f in list(self.live):
            self.stop(self.live[f][0])
        while self.stopped:
            wait(list(self.stopped), timeout=RE_KILL_S)
            self._reap()
        self.pool.shutdown(wait=True)
