"""Gates and merges in flight (state/inflight.py): `watch` shows a gate starting and ending as it
happens, `l` follows its log, `status` names it; a record left by a killed process is never shown."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.repo import spark_argv

from spark_git.cli.views import watchapp
from spark_git.cli.views.watchlog import LogScreen
from spark_git.core.layout import Layout
from spark_git.state import inflight
from tests.mergekit import Task, config
from tests.ptyutil import BOUND_S


@pytest.mark.usefixtures("unboxed")
def test_watch_shows_a_gate_start_and_end_and_l_follows_its_log(tmp_path: Path) -> None:
    go = tmp_path / "go"
    os.mkfifo(go)
    t = Task(tmp_path, ["a1"], config(build=f"echo compiling step 1; read x < {go}; echo done"))
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    app = watchapp.make(Layout.discover(t.repo), with_radar=False)
    merge = subprocess.Popen(spark_argv("merge", t.task, "--agent", "a1"), cwd=t.repo, env=dict(os.environ, SPARK_SESSION_ID="s1"),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen: dict[str, object] = {}

    async def until(pilot, cond) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + BOUND_S
        while not cond() and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert cond(), app.snap

    async def drive() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.snap and [(r.kind, r.name) for r in app.snap.running] == [("gate", "build"), ("merge", "a1")]
                        and "compiling step 1" in app.snap.running[0].tail)  # the gate's first line, as it writes it
            seen["rest"] = str(app.query_one("#rest").render())
            seen["agents"] = [(a.agent, a.doing) for a in app.snap.agents]
            seen["status"] = subprocess.run(spark_argv("status"), cwd=t.repo, capture_output=True, text=True, env={**os.environ, "COLUMNS": "120"}).stdout
            await pilot.press("l")
            screen = app.screen
            assert isinstance(screen, LogScreen) and screen.path.name.endswith("-build.log")
            await until(pilot, lambda: "compiling step 1" in "\n".join(screen.query_one("#log").lines))
            with open(go, "w") as f:  # let the gate finish: its end reaches the log and the view
                f.write("go\n")
            await until(pilot, lambda: "done" in [ln.strip() for ln in screen.query_one("#log").lines])
            await pilot.press("escape")
            await until(pilot, lambda: app.snap and app.snap.running == [] and [(a.agent, a.doing) for a in app.snap.agents] != seen["agents"])
            seen["after"] = str(app.query_one("#rest").render())

    asyncio.run(drive())
    out, _ = merge.communicate(timeout=BOUND_S)
    assert merge.returncode == 0, out
    assert "RUNNING (2)" in str(seen["rest"]) and "t1: gate build, " in str(seen["rest"]) and "│ compiling step 1" in str(seen["rest"])
    assert seen["agents"] == [("a1", "being merged")]
    assert "▶ t1: gate build running for" in str(seen["status"]) and "▶ t1: merge of a1 running for" in str(seen["status"])
    assert "RUNNING: no gate or merge" in str(seen["after"])
    assert list((t.root / "logs").glob("*.running")) == []  # nothing left behind


def test_a_record_of_a_killed_process_is_not_shown_and_is_swept(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = logs / f"merge-a1{inflight.SUFFIX}"
    logs.mkdir()
    stale.write_text(inflight.InFlight(kind="merge", name="a1", started_at="2026-01-01T00:00:00Z", pid=dead.pid).model_dump_json())
    (logs / f"half{inflight.SUFFIX}").write_text('{"kind": "ga')  # cut short by a SIGKILL mid-write: skipped, not an error
    assert inflight.live(logs) == []
    with inflight.marked(logs, "x-build", "gate", "build", log=str(logs / "x-build.log")):
        assert [(r.kind, r.name, r.pid) for r in inflight.live(logs)] == [("gate", "build", os.getpid())]
        assert not stale.exists()
    assert inflight.live(logs) == [] and not (logs / f"x-build{inflight.SUFFIX}").exists()


@pytest.mark.usefixtures("unboxed")
def test_the_queue_candidates_and_their_gates_in_flight_show_in_status_and_watch_until_killed(tmp_path: Path) -> None:
    from tests.test_queue_parallel import drain_with_two_gates_running

    q, b, p, _ = drain_with_two_gates_running(tmp_path)  # the batch t0+t1+t2 and its prefix t0, gating at once
    try:
        tasks = {t["task"]: t for t in q.spark("t1", "--json", "status").json["data"]["tasks"]}
        assert tasks["t1"]["queue_run"]["tasks"] == ["t0", "t1", "t2"] and tasks["t1"]["queue_run"]["landing"] is False, tasks["t1"]
        text = q.spark("t1", "status", env={"COLUMNS": "200"}).stdout
        assert "▶ t1: the merge queue is gating it, in a candidate of t0 + t1 + t2, for" in text, text
        rows = q.spark("t1", "--json", "watch", "--once").json["data"]["running"]
        assert sorted((r["task"], r["kind"], r["name"]) for r in rows) == [
            ("t0", "gate", "final"), ("t0", "queue", "t0"), ("t0", "queue", "t0 + t1 + t2"), ("t2", "gate", "final")], rows
    finally:
        p.kill()
        p.communicate(timeout=60)
        b.wait_all_gone()
        b.close()
    after = q.spark("t1", "--json", "watch", "--once").json["data"]
    assert after["running"] == [], after["running"]  # the drain and its gates are gone: nothing claims to run
