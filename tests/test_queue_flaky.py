"""Flaky gates (`[queue] retries`), priority (`complete --priority high`) and `queue --stats`, with
real processes: a gate that fails its first run and passes the next (a counter file outside the tree)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_git.ops.landing.queuestats import figures
from spark_git.state.queuelog import QueueCounts, QueueLog, QueueOutcome
from spark_git.state.queuerefs import QUEUE_PREFIX
from tests.queuekit import PYTEST_GATE, Queue, gate_cmd


def flaky_files(counter: Path) -> dict[str, str]:
    """A pytest gate whose test fails on its first run only (the count lives outside every worktree)."""
    return {"test_gate.py": (f"from pathlib import Path\n\nCOUNT = Path({str(counter)!r})\n\n\n"
                             "def test_flaky():\n"
                             "    n = int(COUNT.read_text()) + 1 if COUNT.exists() else 1\n"
                             "    COUNT.write_text(str(n))\n"
                             "    assert n > 1, 'the first run fails'\n")}


@pytest.fixture
def unsandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_BWRAP", "")  # the gate writes its counter outside the tree (a sandboxed gate cannot)


def _queue_all(q: Queue) -> None:
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0


@pytest.mark.usefixtures("unsandboxed")
def test_without_retries_a_flake_blames_nobody(tmp_path: Path) -> None:
    """The batch flakes; prefix 1 passes, so its one failing run would name t1: that run is gated again
    first (speculate.CONFIRM), passes, and both land; the flake is recorded. (Before: t1 was sent back.)"""
    q = Queue(tmp_path, 2, final=PYTEST_GATE, files=flaky_files(tmp_path / "count"))
    _queue_all(q)
    r = q.spark("t0", "--json", "queue", "run")
    got = {o["task"]: o["result"] for o in r.json["data"]["outcomes"]}
    assert got == {"t0": "landed", "t1": "landed"}, r
    assert all(q.task_json(t)["state"] == "COMPLETE" for t in q.tasks)
    [fl] = q.queue_log()["flaky"]
    assert fl["tasks"] == ["t0", "t1"] and fl["failures"] == 1


@pytest.mark.usefixtures("unsandboxed")
def test_with_retries_a_flake_is_recorded_and_nobody_is_sent_back(tmp_path: Path) -> None:
    q = Queue(tmp_path, 2, final=PYTEST_GATE, files=flaky_files(tmp_path / "count"), extra="[queue]\nretries = 1")
    _queue_all(q)
    r = q.spark("t0", "--json", "queue", "run")
    assert r.returncode == 0, r
    assert {o["task"]: o["result"] for o in r.json["data"]["outcomes"]} == {"t0": "landed", "t1": "landed"}, r
    assert (tmp_path / "count").read_text() == "2"
    log = q.queue_log()
    assert log["gate_runs"] == 2 and log["counts"]["flaky"] == 1 and log["counts"]["landed"] == 2
    [fl] = log["flaky"]
    assert fl["tasks"] == ["t0", "t1"] and fl["failures"] == 1 and fl["command"] == PYTEST_GATE
    assert fl["failed_tests"] == ["test_gate.py::test_flaky"] and Path(fl["log_path"]).is_file()
    assert all(q.task_json(t)["state"] == "COMPLETE" for t in q.tasks)
    shown = q.spark("t0", "--json", "queue").json["data"]
    assert shown["flaky"] == [fl] and shown["retries"] == 1
    assert "failed 1x, passed on a retry" in q.spark("t0", "queue").stdout
    st = q.spark("t1", "--json", "status", "t1").json["data"]
    views = st.get("tasks", [st])
    assert [v["flaky_gates"] for v in views if v["task"] == "t1"] == [[fl]], st
    assert "flaky final gate" in q.spark("t1", "status", "t1").stdout
    stats = q.spark("t0", "--json", "queue", "--stats").json["data"]
    assert stats["landed"] == 2 and stats["gate_runs_per_landed"] == 1.0 and stats["flaky_rate"] == 0.5
    assert stats["wait_p50_s"] is not None and stats["landed_per_hour"] > 0
    human = q.spark("t0", "queue", "--stats").stdout
    assert "2 landed" in human and "1 gate runs per landed task" in human and "1 flaky (0.5 per gate run)" in human, human


@pytest.mark.usefixtures("unsandboxed")
def test_a_flaky_gate_s_test_names_come_from_its_junit_report(tmp_path: Path) -> None:
    count = tmp_path / "count"  # not a pytest gate: the names can only come from the JUnit XML it writes
    script = (f"import sys; from pathlib import Path; c = Path({str(count)!r})\n"
              "n = int(c.read_text()) + 1 if c.exists() else 1\nc.write_text(str(n))\n"
              "bad = '<failure message=\"x\"/>' if n == 1 else ''\n"
              "Path('junit.xml').write_text(f'<testsuite><testcase classname=\"suite\" name=\"test_net\">{bad}</testcase></testsuite>')\n"
              "sys.exit(1 if n == 1 else 0)\n")
    q = Queue(tmp_path, 2, final=gate_cmd(script), extra='[queue]\nretries = 2\n[gates.reports.final]\njunit = "junit.xml"')
    _queue_all(q)
    r = q.spark("t0", "--json", "queue", "run")
    assert [o["result"] for o in r.json["data"]["outcomes"]] == ["landed", "landed"], r
    [fl] = q.queue_log()["flaky"]
    assert fl["failed_tests"] == ["suite::test_net"] and fl["failures"] == 1


def test_a_reproducible_failure_is_still_sent_back_with_retries(tmp_path: Path) -> None:
    from tests.queuekit import PYTEST_CULPRIT

    q = Queue(tmp_path, 2, culprit=1, final=PYTEST_GATE, files=PYTEST_CULPRIT, extra="[queue]\nretries = 1")
    _queue_all(q)
    r = q.spark("t0", "--json", "queue", "run")
    assert {o["task"]: o["result"] for o in r.json["data"]["outcomes"]} == {"t0": "landed", "t1": "failed"}, r
    assert q.task_json("t1")["state"] == "IMPLEMENTATION" and q.queue_log()["flaky"] == []
    assert q.queue_log()["gate_runs"] == 4  # the batch, its retry, prefix 1 (t1 by elimination), the batch again to confirm it


def test_priority_high_goes_to_the_head_of_the_queue_and_is_audited(tmp_path: Path) -> None:
    q = Queue(tmp_path, 4, extra="[queue]\nbatch_max = 1")
    for t, prio in (("t0", "normal"), ("t1", "high"), ("t2", "normal"), ("t3", "high")):
        r = q.spark(t, "--json", "complete", t, "--no-wait", "--priority", prio)
        assert r.returncode == 0, r
    entries = q.spark("t0", "--json", "queue").json["data"]["entries"]
    assert [(e["task"], e["priority"]) for e in entries] == [("t1", "high"), ("t3", "high"), ("t0", "normal"), ("t2", "normal")]
    audit = json.loads((q.root / "t1" / "audit-trail.json").read_text())
    assert "'priority': 'high'" in str(audit) or '"priority": "high"' in json.dumps(audit)
    r = q.spark("t0", "--json", "queue", "run")
    assert [o["task"] for o in r.json["data"]["outcomes"]] == ["t1", "t3", "t0", "t2"], r


def test_a_bad_priority_is_refused_and_nothing_is_queued(tmp_path: Path) -> None:
    q = Queue(tmp_path, 1)
    r = q.spark("t0", "--json", "complete", "t0", "--priority", "urgent")
    assert r.returncode == 2 and r.json["next"] == ["spark-git complete t0 --priority high"], r
    assert q.queue_refs() == []


def test_stats_figures_from_the_log() -> None:
    def out(i: int, result: str, queued_s: int, done_s: int) -> QueueOutcome:
        at = f"2026-01-01T00:{done_s // 60:02d}:{done_s % 60:02d}.000000Z"
        seq = f"{(1767225600 + queued_s) * 10**9:020d}"  # 2026-01-01T00:00:00Z + queued_s
        return QueueOutcome(task=f"t{i}", ref=f"{QUEUE_PREFIX}{seq}-t{i}", head="0" * 40, result=result, reason="", at=at)  # type: ignore[arg-type]

    log = QueueLog(outcomes=[out(i, "landed", 0, 60 * (i + 1)) for i in range(10)] + [out(10, "failed", 0, 30)],
                   counts=QueueCounts(gate_runs=15, landed=10, flaky=3))
    s = figures(log)
    assert (s.outcomes, s.landed) == (11, 10)
    assert s.landed_per_hour == 60.0  # 10 in the 10 minutes from the first queued to the last landed
    assert (s.wait_p50_s, s.wait_p95_s) == (300.0, 600.0)
    assert (s.gate_runs_per_landed, s.flaky_rate) == (1.5, 0.2)
    empty = figures(QueueLog())
    assert (empty.landed_per_hour, empty.wait_p50_s, empty.gate_runs_per_landed, empty.flaky_rate) == (None, None, None, None)
