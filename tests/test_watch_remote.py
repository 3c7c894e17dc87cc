"""`spark-git watch` in remote mode: another machine's changes make no local event, so the live view
fetches the shared remote on an interval and says when it last did (issue 33 item 1)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from fixtures.repo import spark
from fixtures.servers import bare, machine, seed

from spark_git.cli.views import watchapp
from spark_git.core.layout import Layout

LIGHT = 'protocol = "light"\n'
BOUND_S = 30.0


def test_a_task_started_on_another_machine_appears_after_a_fetch_and_the_frame_says_when(tmp_path: Path) -> None:
    url = f"file://{bare(tmp_path)}"
    seed(tmp_path, url, {"README.md": "# shared\n"}, config=LIGHT)
    a, b = (machine(tmp_path, url, m) for m in ("laptop", "desktop"))
    app = watchapp.make(Layout.discover(a), with_radar=False, fetch_s=0.3)

    async def drive() -> tuple[list[tuple[str, str]], str]:
        async with app.run_test(size=(120, 40)) as pilot:
            assert app.snap is not None and app.snap.remote is not None and app.snap.remote.elsewhere == []
            r = spark(b, "start", "t1", env={**os.environ, "SPARK_SESSION_ID": "s-b"}, process=True)
            assert r.returncode == 0, r
            deadline = time.monotonic() + BOUND_S
            while not app.snap.remote.elsewhere and time.monotonic() < deadline:
                await pilot.pause(0.05)
            return [(t.task, t.machine) for t in app.snap.remote.elsewhere], str(app.query_one("#rest").render())

    seen, rest = asyncio.run(drive())
    assert seen == [("t1", "desktop")]
    assert "REMOTE origin: fetched at" in rest and "t1  INIT  on desktop (s-b)" in rest, rest
    d = spark(a, "--json", "watch", "--once", env={**os.environ, "SPARK_SESSION_ID": "s-a"}).json["data"]
    assert d["remote"]["remote"] == "origin" and d["remote"]["machine"] == "laptop" and d["remote"]["fetched_at"] == d["at"]
    assert [(t["task"], t["machine"], t["state"]) for t in d["remote"]["elsewhere"]] == [("t1", "desktop", "INIT")]
