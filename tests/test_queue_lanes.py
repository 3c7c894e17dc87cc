"""Lanes in the real drain with chained rechecks (lanedrive.py), real processes: a combined recheck
that fails blames nobody, the lane ahead of it has landed, and the lane behind it (built on it) is
merged again without it, gated again and lands; main holds only trees whose gate passed. Lanes
across batches (pipeline.py) and stacked batches (stack.py): a SIGKILL while two gate is repaired by
one `doctor --fix`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fixtures.repo import git, spark_argv

from tests.queuekit import Queue, gate_cmd
from tests.test_queue_parallel import Blocking, landed_after

# The gates here talk to the test through FIFOs and logs in tmp_path, which the gate box hides: the queue's
# decisions are what is tested (tests/test_gate_box.py tests the box).
pytestmark = pytest.mark.usefixtures("unboxed")


def interacting_gate(log: Path) -> list[str]:
    """t0 and t1 pass alone but not together (they interact through code); t0's gate ends first, then
    t1's, then t2's, so the train is t1 (on t0), then t2 (on t1); t2's recheck is still running when
    t1's fails. Logs each run: its batch and the task files in its tree."""
    return gate_cmd("import glob, os, sys, time\n"
                    "b = (os.environ.get('SPARK_QUEUE_BATCH') or os.environ['SPARK_TASK'])\n"
                    f"open({str(log)!r}, 'a').write(b + ' ' + ','.join(sorted(glob.glob('t*.txt'))) + '\\n')\n"
                    "time.sleep(max({'t0': 0.5, 't1': 2.0, 't2': 3.0}.get(t, 0) for t in b.split(',')))\n"
                    "sys.exit(1 if os.path.exists('t0.txt') and os.path.exists('t1.txt') else 0)\n")


def test_a_failing_recheck_blames_nobody_and_the_lane_behind_it_lands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_BWRAP", "")  # the gate logs its runs outside the tree (a sandboxed gate cannot)
    log = tmp_path / "gated.log"
    q = Queue(tmp_path, 3, final=interacting_gate(log), extra="[queue]\nlanes = true\nlanes_from = 0\nrecheck = \"combined\"", parallel=3)
    base = git(q.repo, "rev-parse", "main")
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    r = q.spark("t0", "--json", "queue", "run")
    assert r.returncode == 0, r
    got = {o["task"]: o for o in q.queue_log()["outcomes"]}
    assert [got[t]["result"] for t in q.tasks] == ["landed", "failed", "landed"], got
    assert got["t1"]["sent_back"] is False and q.task_json("t1")["state"] != "IMPLEMENTATION"  # its own gate failed only in the next batch, alone
    assert got["t2"]["old_base"] == got["t0"]["landed_commit"], "t2 merged again on t0, without t1"
    subjects = git(q.repo, "log", "--first-parent", "--reverse", "--format=%s", f"{base}..main").splitlines()
    assert subjects == ["spark-git: land task t0", "spark-git: land task t2"]
    for rev in git(q.repo, "rev-list", "--first-parent", f"{base}..main").split():
        assert passed(q, rev), rev
    # the lanes, t1's recheck on t0, t2's on t1 (stopped when t1's failed: not counted), t2's again on t0, t1 alone
    # and, before that failure sends it away, t1 alone once more (speculate.CONFIRM)
    runs = log.read_text().splitlines()
    assert sorted(runs) == sorted(["t0 t0.txt", "t1 t1.txt", "t2 t2.txt", "t1 t0.txt,t1.txt", "t2 t0.txt,t1.txt,t2.txt",
                                   "t2 t0.txt,t2.txt", "t1 t0.txt,t1.txt,t2.txt", "t1 t0.txt,t1.txt,t2.txt"]), runs
    assert q.queue_log()["gate_runs"] == 8 and q.queue_log()["stopped_runs"] == 1  # every run the gate saw, t2's stopped recheck too
    assert q.queue_refs() == [] and q.scratch() == [] and q.queue_log()["running"] == []


def passed(q: Queue, rev: str) -> bool:
    """A passed final-gate verdict is recorded for the commit's tree."""
    tree = git(q.repo, "rev-parse", f"{rev}^{{tree}}")
    notes = git(q.repo, "notes", "--ref", "refs/notes/spark-verdicts", "show", tree, check=False)
    return any(json.loads(ln).get("result") == "passed" for ln in notes.splitlines() if ln.startswith("{"))


@pytest.mark.parametrize("how", ["lanes = true\nlanes_from = 0", "batch_max = 1"])
def test_sigkill_while_pipelined_lanes_gate_then_one_doctor_fix_repairs(tmp_path: Path, how: str) -> None:
    """`pipeline = true`, 2 runners: the lanes t0 and t1 (or without lanes t0 and t1 stacked on it)
    gate at once when the drain is killed; one `doctor --fix` repairs, nothing landed or lost, and
    the next `queue run` lands all three."""
    b = Blocking(tmp_path)
    q = Queue(tmp_path, 3, final=b.gate, parallel=2, extra=f"[queue]\n{how}\npipeline = true")
    heads = {t: git(q.repo, "rev-parse", t) for t in q.tasks}
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    base = git(q.repo, "rev-parse", "main")
    p = subprocess.Popen(spark_argv("--json", "queue", "run"), cwd=q.repo, env=q.env("t0"), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert len(b.wait_started(2)) == 2
    assert sorted(x["task"] for c in q.queue_log()["running"] for x in c["parts"]) == ["t0", "t1"]  # a lane each
    p.kill()
    p.communicate(timeout=60)
    b.wait_all_gone()
    r = q.spark("t0", "--json", "doctor", "--fix")
    assert {f["kind"]: f["fixed"] for f in r.json["data"]["findings"]}.get("queue-drain-killed") is True, r
    assert q.scratch() == [] and q.queue_log()["running"] == [] and q.queue_log().get("candidate") is None
    assert git(q.repo, "rev-parse", "main") == base and len(q.queue_refs()) == 3
    landed_after(q, b, heads)
