"""`status` that scales (issue 14): one line per live task, fitted to the terminal width (COLUMNS
honoured) by cutting cells in the middle, never wrapping inside a word; ended tasks only with --all;
the light protocol shows no protocol walk."""

from __future__ import annotations

import os
import re
from pathlib import Path

from fixtures.repo import commit, spark

from tests.protokit import P

LIGHT = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'
FULL = '[approval]\nallow_non_interactive = true\n'
AGENTS = "architecture-reviewer,implementation-updater,test-writer-for-the-parser,documentation-updater"


def _five(tmp_path: Path) -> P:
    p = P(tmp_path, task="add-oauth-login-with-refresh-tokens", agents=AGENTS, config=FULL)  # full: agents are asked to report
    for t in ("fix-flaky-queue-test", "t3", "rename-config-keys-everywhere", "t5"):
        assert p.spark("start", t, "--agents", AGENTS, session="session-of-a-long-running-coordinator").returncode == 0
    commit(p.wt("implementation-updater"), {"src/app.py": "print('a')\n"}, "[implementation-updater] a")
    commit(p.wt("test-writer-for-the-parser"), {"src/app.py": "print('b')\n"}, "[test-writer-for-the-parser] b")
    return p


def _lines(p: P, *args: str, columns: int) -> list[str]:
    """`status ARGS` as a terminal `columns` wide would show it (COLUMNS is what a shell exports)."""
    r = spark(p.repo, "status", *args, env={**os.environ, "SPARK_SESSION_ID": "s1", "COLUMNS": str(columns)})
    assert r.returncode == 0, r
    return r.stdout.splitlines()


def fits(line: str, columns: int) -> bool:
    """Within `columns`, or a single word longer than any line (a path kept whole, on a line of its own)."""
    return len(line) <= columns or len(line.split()) == 1


def test_one_line_per_task_fits_80_and_160_columns(tmp_path: Path) -> None:
    p = _five(tmp_path)
    for columns in (80, 160):
        lines = _lines(p, columns=columns)
        rows = [ln for ln in lines if re.match(r"^(add-|fix-|t3|t5|ren|TASK|\S*…)", ln)]
        assert len(rows) == 6, lines  # the header and one row per task
        assert all(fits(ln, columns) for ln in lines), (columns, lines)  # the summary line too (it holds the tasks root)
        if columns == 160:
            assert sum(ln.count("never reported") for ln in lines) == 5, lines  # once per task, counted, never per agent
    narrow = "\n".join(_lines(p, columns=80))
    assert "…" in narrow  # long cells cut in the middle
    assert "conflict implementation-updater/test-writer-for-the-parser: src/app.py" in "\n".join(_lines(p, columns=300))


def test_full_view_wraps_between_words_only(tmp_path: Path) -> None:
    p = _five(tmp_path)
    lines = _lines(p, "--agents", columns=80)
    assert all(fits(ln, 80) for ln in lines), lines
    words = {w.strip("():") for w in re.findall(r"\S+", "\n".join(_lines(p, "--agents", columns=500)))}
    words |= set(re.findall(r"idle\s+(\d+)", " ".join(lines)))  # the clock moved between the two runs: "idle 6 s", then "idle 7 s"
    for ln in lines[1:]:
        for w in re.findall(r"\S+", ln):
            assert w.strip("():") in words or "…" in w, (w, ln)  # no word was broken across lines
    assert sum(ln.count("never reported") for ln in lines) == 5


def test_light_protocol_suggests_no_advance(tmp_path: Path) -> None:
    """Under light the states are not walked by hand (issue 24): no `advance` suggestion, no blockers."""
    p = P(tmp_path, agents="a1", config=LIGHT)
    out = p.spark("status", p.task).stdout
    assert "blocked by" not in out and "next:" not in out and "advance" not in out, out
    full = P(tmp_path / "full", agents="a1")
    assert "next: CLASSIFIED blocked by:" in full.spark("status", full.task).stdout


def test_ended_tasks_only_with_all(tmp_path: Path) -> None:
    p = P(tmp_path, agents="a1", config=LIGHT)
    assert p.spark("start", "t2", "--agents", "").returncode == 0
    assert p.spark("abandon", "t2", "--why", "not needed").returncode == 0
    out = p.spark("status").stdout
    assert "t2" not in out.replace("1 ended task not shown", "") and "1 ended task not shown (spark-git status --all lists them)" in out, out
    out = p.spark("status", "--all").stdout
    assert re.search(r"^t2\s+ABANDONED", out, re.M), out


def test_queue_position_in_the_summary_and_json(tmp_path: Path) -> None:
    from fixtures.repo import git

    p = P(tmp_path, agents="a1", config=LIGHT)
    assert p.spark("start", "t2", "--agents", "").returncode == 0
    # Queue entries as the Store names them (refs/spark/queue/<seq>-<task>), landing in seq order.
    git(p.repo, "update-ref", f"refs/spark/queue/{1:020d}-t2", git(p.repo, "rev-parse", "t2"))
    git(p.repo, "update-ref", f"refs/spark/queue/{2:020d}-t1", git(p.repo, "rev-parse", "t1"))
    rows = {t["task"]: t["queue_position"] for t in p.ok("status")["data"]["tasks"]}
    assert rows == {"t1": 2, "t2": 1}
    out = p.spark("status").stdout
    assert re.search(r"^t1\s+INIT\s+s1\s+\S+ \S+\s+1\s+#2\s", out, re.M) and re.search(r"^t2\s+INIT\s+s1\s+\S+ \S+\s+0\s+#1\s", out, re.M), out
    assert "queue #2" in p.spark("status", "t1").stdout
