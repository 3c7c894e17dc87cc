"""The committed screen capture of `approve --changes` comes from its script, which drives the real
command through a pseudo-terminal (scripts/on_pty): the script runs and shows every section."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_approve_changes_screen_script(tmp_path: Path) -> None:
    out = tmp_path / "approve-changes.txt"
    env = {**os.environ, "SPARK_DEMO_USE_PATH": "1", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    r = subprocess.run([str(ROOT / "scripts/screen_approve_changes"), str(out)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    for section in ("3 commits on main", "[coder] add mul", "[docs] document mul", "3 files changed", "calc.py",
                    "build  passed on this commit", "docs-reviewer: APPROVED for this commit", "open flags: none",
                    "Type the task name to approve", "approved the changes of add-mul", "(terminal, by you@host"):
        assert section in text, (section, text)
    committed = (ROOT / "docs/screens/approve-changes.txt").read_text()
    assert committed.splitlines()[0] == text.splitlines()[0] and "What you approve" in committed
