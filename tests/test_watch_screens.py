"""`spark-git watch`'s live view as a terminal of 80×24 and of 200×50 shows it (Textual's pilot, the
screen's text read from its screenshot): compared with docs/screens/watch-80x24.txt and
watch-200x50.txt, which `SPARK_REGEN_GOLDEN=1` rewrites (issue 33: snapshot tests, docs/screens).
Times, hashes and paths are made fixed; every line fits the terminal's width."""

from __future__ import annotations

import asyncio
import html
import os
import re
import shutil
import uuid
from pathlib import Path

import pytest

from spark_git.cli.views import watchapp
from spark_git.core.layout import Layout
from tests.protokit import P

SCREENS = Path(__file__).resolve().parents[1] / "docs" / "screens"


def screen_text(app: watchapp.WatchApp) -> list[str]:
    """The lines of the app's screen, from its SVG screenshot (one <text> run per style, by row)."""
    rows: dict[float, list[str]] = {}
    for m in re.finditer(r'<text[^>]*\by="([\d.]+)"[^>]*>(.*?)</text>', app.export_screenshot()):
        rows.setdefault(float(m.group(1)), []).append(html.unescape(re.sub(r"<[^>]+>", "", m.group(2))))
    return ["".join(rows[y]).replace("\xa0", " ").rstrip() for y in sorted(rows)]


def fixed(lines: list[str], tmp: Path) -> str:
    text = "\n".join(lines).replace(str(tmp), "<tmp>").replace(os.environ.get("HOME", "/nonexistent"), "<home>")
    text = re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z?", "<time>", text)
    return re.sub(r"\b\d+ (s|min|h)\b", "<idle>", text) + "\n"


@pytest.mark.parametrize(("cols", "rows"), [(80, 24), (200, 50)])
def test_the_live_view_at_80x24_and_200x50(tmp_path: Path, cols: int, rows: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # HOME is printed (the approvers warning) and wrapped: a name of one length keeps the wrap the same
    # whatever the basetemp (xdist adds popen-gwN/)
    home = Path("/dev/shm") / f"sgw-{uuid.uuid4().hex}"
    shutil.copytree(os.environ["HOME"], home, symlinks=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    try:
        _screen(tmp_path, cols, rows)
    finally:
        shutil.rmtree(home)


def _screen(tmp_path: Path, cols: int, rows: int) -> None:
    p = P(tmp_path, task="add-oauth-login-with-refresh-tokens", agents="backend,test-writer")
    p.commit("backend", {"auth.py": "x = 1\n"}, "[backend] auth")
    assert p.spark("start", "fix-invoice-rounding", "--agents", "billing").returncode == 0
    app = watchapp.make(Layout.discover(p.repo), with_radar=False)

    async def shot() -> list[str]:
        async with app.run_test(size=(cols, rows)) as pilot:
            await pilot.pause()
            return screen_text(app)

    lines = asyncio.run(shot())
    assert len(lines) <= rows and all(len(ln) <= cols for ln in lines), lines
    text = fixed(lines, tmp_path)
    for name in ("add-oauth-login-with-refresh-tokens", "fix-invoice-rounding", "backend", "billing"):
        assert name in text, text  # every name whole
    golden = SCREENS / f"watch-{cols}x{rows}.txt"
    if os.environ.get("SPARK_REGEN_GOLDEN") == "1":
        golden.write_text(text)
    assert golden.read_text() == text, f"{golden} differs (SPARK_REGEN_GOLDEN=1 rewrites it):\n{text}"


def test_under_a_real_tmux_terminal_a_task_started_elsewhere_appears_within_2_s(tmp_path: Path) -> None:
    import shlex
    import subprocess
    import sys
    import time

    from fixtures.modelserver.core import require_binary

    require_binary("tmux")
    p = P(tmp_path, task="t1", agents="a1")
    sock = tmp_path / "tmux"
    sock.mkdir()
    env = {**os.environ, "TMUX_TMPDIR": str(sock), "SPARK_SESSION_ID": "s1", "TERM": "xterm-256color"}
    cmd = shlex.join([sys.executable, "-m", "spark_git", "watch", "--no-radar"])

    def tmux(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", *args], env=env, capture_output=True, text=True, timeout=30)

    assert tmux("new-session", "-d", "-s", "w", "-x", "120", "-y", "40", "-c", str(p.repo), cmd).returncode == 0
    try:
        deadline = time.monotonic() + 30
        while "t1" not in tmux("capture-pane", "-p", "-t", "w").stdout and time.monotonic() < deadline:
            time.sleep(0.05)  # the app starting (imports, first frame): not what is measured
        assert "t1" in tmux("capture-pane", "-p", "-t", "w").stdout
        assert p.spark("start", "late-task", "--agents", "b1", session="s2").returncode == 0
        started = time.monotonic()
        while "late-task" not in tmux("capture-pane", "-p", "-t", "w").stdout and time.monotonic() - started < 5:
            time.sleep(0.05)
        seen = time.monotonic() - started
        assert seen < 2.0, f"late-task appeared after {seen:.2f} s:\n" + tmux("capture-pane", "-p", "-t", "w").stdout
    finally:
        tmux("kill-server")
