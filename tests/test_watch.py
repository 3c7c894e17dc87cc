"""`spark-git watch`: one frame with --once (text and the snapshot with --json), and the Textual live
view driven by its pilot: a task started from another process appears through inotify, the keys list,
an approval waits first and `a` runs the real signed approval on a terminal."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from fixtures.repo import snapshot, spark, too_wide

from spark_git.cli.views import watchapp
from spark_git.core.layout import Layout
from tests.protokit import P
from tests.ptyutil import answer_on_pty
from tests.test_protocol_approve import _in_synthesis

APPEAR_S = 2.0  # the bound: a task started elsewhere shows within 2 s


def test_once_prints_a_frame_and_json_the_snapshot(repo: Path, cli) -> None:
    assert cli("start", "t1", "--agents", "a1").returncode == 0
    before = snapshot(repo)
    r = cli("watch", "--once", env={"COLUMNS": "80"})
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert "WAITS ON YOU: nothing" in lines and "TASKS (1)" in lines, r.stdout
    assert any(ln.split()[:3] == ["t1", "INIT", "s1"] for ln in lines), r.stdout
    assert any(ln.split()[:3] == ["t1", "a1", "idle"] for ln in lines), r.stdout
    assert too_wide(lines, 80) == [], r.stdout
    d = cli("watch", "--once", "--json").json["data"]
    assert [t["task"] for t in d["tasks"]] == ["t1"] and d["tasks"][0]["owner"] == "s1"
    assert [(a["task"], a["agent"], a["doing"]) for a in d["agents"]] == [("t1", "a1", "idle")]
    assert d["attention"] == [] and d["queue"] == [] and d["pairs"] == []
    assert snapshot(repo) == before  # reads only


def test_json_without_once_is_a_usage_error_with_the_way_on(repo: Path, cli) -> None:
    r = cli("watch", "--json")
    assert r.returncode == 2 and r.json["next"] == ["spark-git watch --once --json"], r


def test_the_live_view_shows_a_task_started_elsewhere_and_lists_its_keys(repo: Path, cli) -> None:
    assert cli("start", "t1").returncode == 0
    app = watchapp.make(Layout.discover(repo), with_radar=False)

    async def drive() -> float:
        async with app.run_test(size=(100, 30)) as pilot:
            assert _rows(app) == ["t1"]
            r = spark(repo, "start", "t2", env={**_env(), "SPARK_SESSION_ID": "s2"}, process=True)  # another process
            assert r.returncode == 0, r
            started = time.monotonic()
            while "t2" not in _rows(app) and time.monotonic() - started < APPEAR_S:
                await pilot.pause(0.05)
            seen = time.monotonic() - started
            await pilot.press("question_mark")
            assert isinstance(app.screen, watchapp.TextScreen) and "  t      switch to the agent's tmux window" in app.screen.lines
            await pilot.press("escape")
            assert not isinstance(app.screen, watchapp.TextScreen)
            await pilot.press("q")
            await pilot.pause()
            assert not app.is_running
            return seen

    seen = asyncio.run(drive())
    assert seen < APPEAR_S, f"t2 appeared after {seen:.2f}s"


def test_an_approval_waits_first_and_a_runs_the_signed_approval_on_the_terminal(tmp_path: Path) -> None:
    p: P = _in_synthesis(tmp_path)
    d = p.spark("--json", "watch", "--once").json["data"]
    assert d["attention"][0] == {"kind": "approval", "task": "t1", "agent": None, "text": "t1 waits for your approval (SYNTHESIS)",
                                 "next": "spark-git approve t1 --plan"}
    ran: list[tuple[int, str]] = []
    app = watchapp.make(Layout.discover(p.repo), with_radar=False,
                        run_cmd=lambda argv: ran.append(answer_on_pty(p.repo, argv[1:], b"t1\n")))

    async def drive() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            assert "! approval: t1 waits for your approval" in str(app.query_one("#attention").render())
            await pilot.press("a")
            await pilot.pause()

    asyncio.run(drive())
    assert len(ran) == 1 and ran[0][0] == 0, ran
    assert p.task_json()["plan_approval"]["approved"] is True  # recorded by the real `approve --plan`
    assert p.spark("--json", "watch", "--once").json["data"]["attention"] == []


def _rows(app: watchapp.WatchApp) -> list[str]:
    return [t.task for t in app.snap.tasks] if app.snap else []


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)
