"""Whole-output checks: a transcript of commands compared with a golden file, after `normalize`
has replaced what differs from run to run. `SPARK_REGEN_GOLDEN=1` rewrites the golden files."""

from __future__ import annotations

import getpass
import os
import re
import socket
from pathlib import Path

from fixtures.repo import make_repo, spark

GOLDEN = Path(__file__).parent / "golden"
REGEN = os.environ.get("SPARK_REGEN_GOLDEN") == "1"

CONFIG = """\
protocol = "light"
[gates]
build = ["sh", "-c", 'test ! -e "$SPARK_TASK_WORKTREE/stop.flag"']  # an ignored flag in the task worktree: the gate runs in a clean checkout
final = ["true"]
[approval]
allow_non_interactive = true
"""
FILES = {"README.md": "# demo\n", "src/app.py": "print('hi')\n", ".gitignore": "*.flag\n"}

_VOLATILE = [
    # ISO times, also the compact ones in file names (20261123T080633.256367Z, 2026-11-23T080712.673912Z)
    (re.compile(r"\d{4}-?\d\d-?\d\dT\d\d:?\d\d:?\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b\d+(\.\d+)?s\b"), "<dur>"),  # gate durations
    (re.compile(r"idle \d+ ?[a-z]+"), "idle <idle>"),
    (re.compile(r"(?<=  )\d+ (s|min)(?=  )"), "<idle>"),  # the IDLE column of `status`
    (re.compile(r"(?<=\S) {2,}(?=\S)"), "  "),  # column padding follows the tmp path's length
    (re.compile(r" +$", re.M), ""),
]


def normalize(text: str, tmp: Path) -> str:
    """What changes between runs becomes a placeholder: the test's tmp dir (<tmp>), the state dir (<state>), the machine's
    user@host (approvals), times (also in file names), durations, idle times; runs of 2+ spaces
    between words become two (table widths follow the tmp path's length), trailing spaces go. Commit ids stay:
    the sealed env fixes identities and dates, so they are the same on every machine."""
    for path in {str(tmp.resolve()), str(tmp)}:
        text = text.replace(path, "<tmp>")
    state = os.environ.get("XDG_STATE_HOME")  # the sealed HOME's state dir (approve says where its key is)
    if state:
        text = text.replace(state, "<state>")
    text = text.replace(f"{getpass.getuser()}@{socket.gethostname()}", "<user>@<host>")
    for pattern, placeholder in _VOLATILE:
        text = pattern.sub(placeholder, text)
    return text


class Transcript:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.repo = make_repo(tmp / "repo", FILES, config=CONFIG)
        self.parts: list[str] = []

    def run(self, *args: str, session: str = "s1", expect: int = 0) -> None:
        r = spark(self.repo, *args, env={**os.environ, "SPARK_SESSION_ID": session})
        assert r.returncode == expect, r
        self.parts.append(f"$ spark-git {' '.join(args)}  # session {session}, exit {r.returncode}\n{r.stdout}")
        if r.stderr:
            self.parts.append(f"[stderr]\n{r.stderr}")

    def wt(self, agent: str | None = None, task: str = "t1") -> Path:
        tdir = self.tmp / "repo.tasks" / task
        return tdir / "code" if agent is None else tdir / "agents" / agent / "code"

    def check(self, name: str) -> None:
        text = normalize("".join(p if p.endswith("\n") else p + "\n" for p in self.parts), self.tmp)
        path = GOLDEN / f"{name}.txt"
        if REGEN:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)
            return
        assert path.exists(), f"{path} is missing: SPARK_REGEN_GOLDEN=1 ./scripts/test.sh tests/test_golden.py"
        assert text == path.read_text(), f"{name}: output differs from {path} (intended? regenerate and review the diff)"
