"""`agent run --all`'s table (issue 32 item 4): every failure with its reason, columns as wide as their
longest entry (a long agent name does not push its row out of line), and text that looks like rich
markup (a commit subject's `[agent]`) printed as it is."""

from __future__ import annotations

import io

from rich.console import Console

from spark_git.cli.common import _esc
from spark_git.cli.life.agentrun import rows
from spark_git.ops.life.agentrunall import Row


def test_the_table_shows_each_reason_aligned_and_as_written() -> None:
    runs = [
        Row(agent="a", client="claude", state="reported", elapsed_s=12.5, last_tool="Bash: git commit -m '[a] add sub'", report_status="COMPLETE",
            ended="reported COMPLETE"),
        Row(agent="architecture-reviewer", client="gemini", state="failed", elapsed_s=3.0, exit_code=1, ended="exited 1",
            reason="could not reach the model: connect ECONNREFUSED 127.0.0.1:9"),
        Row(agent="b", client="codex", state="interrupted", elapsed_s=1.25, ended="interrupted", reason="interrupted"),
    ]
    assert rows(runs) == [
        "a                      claude  reported COMPLETE    12.5s  Bash: git commit -m '[a] add sub'",
        "architecture-reviewer  gemini  exited 1              3.0s  could not reach the model: connect ECONNREFUSED 127.0.0.1:9",
        "b                      codex   interrupted           1.2s  interrupted",
    ]
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    for line in rows(runs):
        console.print("  " + _esc(line))
    assert "git commit -m '[a] add sub'" in out.getvalue(), out.getvalue()  # not eaten as a markup tag


def test_a_row_that_never_ended_shows_its_state() -> None:
    [line] = rows([Row(agent="a", client="claude", state="running", elapsed_s=4.0, last_tool="Read: calc.py")])
    assert line == "a  claude  running     4.0s  Read: calc.py"
