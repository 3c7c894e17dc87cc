"""scripts/chaos, small: a few interrupted commands on a small repo, every target at zero. The full run
(>= 10,000 files, 300 trials) is `scripts/chaos`; its output is quoted in docs/recovery.md."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ZERO = ("not_repaired", "lost", "corrupt_json", "git_locks_after_doctor", "stale_main_locks", "rerun_failed", "fsck_failed")


@pytest.mark.slow
def test_chaos_small_run_meets_every_target(tmp_path: Path) -> None:
    r = subprocess.run(["bash", str(ROOT / "scripts" / "chaos"), "--trials", "10", "--files", "200", "--minutes", "2",
                        "--seed", "20261123", "--keep", str(tmp_path / "chaos")],
                       capture_output=True, text=True, timeout=300)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("CHAOS-SUMMARY ")]
    assert lines, r.stdout + r.stderr
    summary = json.loads(lines[-1].removeprefix("CHAOS-SUMMARY "))
    assert summary["trials"] == 10, r.stdout
    assert summary["checked"] > 0 and summary["killed_in_flight"] > 0, r.stdout
    assert {k: summary[k] for k in ZERO} == dict.fromkeys(ZERO, 0), r.stdout
    assert summary["failures"] == [] and r.returncode == 0, r.stdout
