"""The merge queue with `[queue] parallel = 2`, real processes: a culprit among 8 is named and the 7
others land at once, as the batch without it; two candidates gating when the drain is SIGKILLed →
one `doctor --fix` repairs, nothing lost, the next `queue run` lands the rest; Ctrl-C leaves no gate
process alive. The blocking gate holds a fifo open while it runs: its EOF says every gate is gone."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
from pathlib import Path

import pytest
from fixtures.repo import commit, git, spark_argv

from tests.queuekit import Queue, gate_cmd

# The gates here talk to the test through FIFOs and logs in tmp_path, which the gate box hides: the queue's
# decisions are what is tested (tests/test_gate_box.py tests the box).
pytestmark = pytest.mark.usefixtures("unboxed")

VERDICTS_REF = "refs/notes/spark-verdicts"


def passed_verdict(q: Queue, rev: str) -> bool:
    """main moved only to a tree whose final gate passed (its signed verdict note)."""
    tree = git(q.repo, "rev-parse", f"{rev}^{{tree}}")
    notes = git(q.repo, "notes", "--ref", VERDICTS_REF, "show", tree, check=False)
    return any(json.loads(ln).get("result") == "passed" for ln in notes.splitlines() if ln.startswith("{"))


def landed_tasks(q: Queue) -> list[str]:
    return [o["task"] for o in q.queue_log()["outcomes"] if o["result"] == "landed"]


def test_a_culprit_among_eight_with_two_runners_lands_the_seven_others_at_once(tmp_path: Path) -> None:
    q = Queue(tmp_path, 8, culprit=5, parallel=2)
    base = git(q.repo, "rev-parse", "main")
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    r = q.spark("t0", "--json", "queue", "run")
    assert r.returncode == 0, r
    got = {o["task"]: o for o in r.json["data"]["outcomes"]}
    assert got["t5"]["result"] == "failed" and got["t5"]["sent_back"] is True
    assert q.task_json("t5")["state"] == "IMPLEMENTATION"
    seven = [t for t in q.tasks if t != "t5"]
    assert sorted(landed_tasks(q)) == seven
    assert {got[t]["new_base"] for t in seven} == {git(q.repo, "rev-parse", "main")}, "one landing: the batch without t5"
    assert q.queue_log()["gate_runs"] <= 8  # the planner's most for one culprit among 8 (tests/test_speculate.py), stopped probes included
    assert git(q.repo, "rev-list", "--count", "--first-parent", f"{base}..main") == "7"
    assert passed_verdict(q, "main") and "bad.txt" not in q.landed_files()
    q.assert_landed_as_merges()
    assert q.queue_refs() == [] and q.scratch() == [] and q.queue_log()["running"] == []


def test_a_clean_batch_with_two_runners_lands_whole_on_its_own_verdict(tmp_path: Path) -> None:
    q = Queue(tmp_path, 4, parallel=2)
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    r = q.spark("t0", "--json", "queue", "run")
    assert r.returncode == 0, r
    assert sorted(landed_tasks(q)) == q.tasks
    assert len({o["new_base"] for o in r.json["data"]["outcomes"]}) == 1
    # the batch, prefix 2 unless it was stopped before its gate began, and prefix 3 when prefix 2 passed
    # first on a loaded machine (the planner's next split); a stopped run is counted too
    assert q.queue_log()["gate_runs"] in (1, 2, 3)
    assert passed_verdict(q, "main") and q.scratch() == [] and q.queue_log()["running"] == []


class Blocking:
    """A final gate that, while `block` exists, writes its pid to the `started` fifo, keeps that fifo
    open and waits forever on `hold` (a fifo nobody writes)."""

    def __init__(self, tmp: Path) -> None:
        self.started, self.hold, self.block = tmp / "started.fifo", tmp / "hold.fifo", tmp / "block"
        os.mkfifo(self.started)
        os.mkfifo(self.hold)
        self.block.touch()
        self.fd = os.open(self.started, os.O_RDONLY | os.O_NONBLOCK)  # before any gate opens it to write
        self.gate = gate_cmd(f"import os\nif os.path.exists({str(self.block)!r}):\n"
                             f"    w = open({str(self.started)!r}, 'w'); w.write(str(os.getpid()) + '\\n'); w.flush()\n"
                             f"    open({str(self.hold)!r}).read()\n")

    def wait_started(self, n: int, deadline_s: float = 120) -> list[int]:
        got = b""
        while got.count(b"\n") < n:
            ready, _, _ = select.select([self.fd], [], [], deadline_s)
            assert ready, f"{n} gates did not start: {got!r}"
            chunk = os.read(self.fd, 4096)
            assert chunk, f"the gates closed the fifo after {got!r}"
            got += chunk
        return [int(x) for x in got.split()]

    def wait_all_gone(self, deadline_s: float = 60) -> None:
        """EOF on `started`: no gate holds it open any more (each held it while it ran)."""
        while True:
            ready, _, _ = select.select([self.fd], [], [], deadline_s)
            assert ready, "a gate is still running"
            if not os.read(self.fd, 4096):
                return

    def close(self) -> None:
        self.block.unlink(missing_ok=True)
        os.close(self.fd)


def drain_with_two_gates_running(tmp_path: Path) -> tuple[Queue, Blocking, subprocess.Popen[str], dict[str, str]]:
    b = Blocking(tmp_path)
    q = Queue(tmp_path, 3, final=b.gate, parallel=2)
    heads = {t: git(q.repo, "rev-parse", t) for t in q.tasks}
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    p = subprocess.Popen(spark_argv("--json", "queue", "run"), cwd=q.repo, env=q.env("t0"), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert len(b.wait_started(2)) == 2  # the batch and prefix 1, at once
    running = q.queue_log()["running"]
    assert sorted(len(c["parts"]) for c in running) == [1, 3] and len(q.scratch()) == 2, running
    r = q.spark("t1", "--json", "queue")
    assert r.json["data"]["draining"] is True and r.json["data"]["parallel"] == 2 and len(r.json["data"]["running"]) == 2, r
    assert "gating: t0 in scratch-" in q.spark("t1", "queue").stdout
    return q, b, p, heads


def landed_after(q: Queue, b: Blocking, heads: dict[str, str]) -> None:
    """With the gate unblocked, the next `queue run` lands everything; nothing was lost, and main was
    only ever moved to a tree that passed (every value in its reflog since the base)."""
    base = git(q.repo, "rev-parse", "main")
    b.close()
    r = q.spark("t1", "--json", "queue", "run")
    assert r.returncode == 0, r
    assert sorted(landed_tasks(q)) == q.tasks and q.queue_refs() == []
    for t, head in heads.items():
        assert git(q.repo, "merge-base", "--is-ancestor", head, "main", check=False) == "", t
        assert [x["to"] for x in q.task_json(t)["transition_log"]].count("COMPLETE") == 1
    moves = git(q.repo, "reflog", "show", "--format=%H", "refs/heads/main").split()
    assert moves[0] != base and base in moves  # newest first
    assert all(passed_verdict(q, m) for m in moves[: moves.index(base)])
    q.assert_landed_as_merges()
    assert git(q.repo, "status", "--porcelain") == ""
    assert git(q.repo, "fsck", "--no-progress", "--no-dangling", "--connectivity-only") == ""


def test_sigkill_while_two_candidates_gate_then_one_doctor_fix_repairs(tmp_path: Path) -> None:
    q, b, p, heads = drain_with_two_gates_running(tmp_path)
    base = git(q.repo, "rev-parse", "main")
    p.kill()
    p.communicate(timeout=60)
    b.wait_all_gone()  # the watchdogs killed both gates' process groups
    r = q.spark("t0", "--json", "doctor", "--fix")
    kinds = {f["kind"]: f for f in r.json["data"]["findings"]}
    assert kinds["queue-drain-killed"]["fixed"] is True and "running candidate" in kinds["queue-drain-killed"]["problem"], r
    assert q.scratch() == [] and q.queue_log()["running"] == [] and q.queue_log().get("candidate") is None
    assert not (q.root / "main" / "task.json").exists()  # no main-worktree lock left
    assert git(q.repo, "worktree", "list", "--porcelain").count("worktree ") == 4  # main + 3 task worktrees
    assert git(q.repo, "rev-parse", "main") == base and len(q.queue_refs()) == 3  # nothing landed, nothing lost
    r = q.spark("t0", "--json", "doctor")
    assert "queue-drain-killed" not in {f["kind"] for f in r.json["data"]["findings"]}, r
    landed_after(q, b, heads)


def test_ctrl_c_while_two_candidates_gate_leaves_no_gate_process(tmp_path: Path) -> None:
    q, b, p, heads = drain_with_two_gates_running(tmp_path)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, (out, err)
    b.wait_all_gone()  # both gates were killed before the drain exited
    assert q.scratch() == [] and q.queue_log()["running"] == []
    assert len(q.queue_refs()) == 3
    landed_after(q, b, heads)


def test_sigterm_while_two_candidates_gate_kills_both_gates_and_the_next_run_repairs(tmp_path: Path) -> None:
    """SIGTERM runs no cleanup in the drain (Python's default): each run's watchdog kills its gate's
    process group; the next `queue run` recovers the scratch worktrees and running candidates first."""
    q, b, p, heads = drain_with_two_gates_running(tmp_path)
    p.terminate()
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGTERM
    b.wait_all_gone()
    assert len(q.scratch()) == 2 and len(q.queue_log()["running"]) == 2  # what doctor would report
    landed_after(q, b, heads)
    assert q.scratch() == [] and q.queue_log()["running"] == []


def gated_batches(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def logging_culprit_gate(log: Path, slow: tuple[str, ...] = ()) -> list[str]:
    """Fails on bad.txt; logs each candidate's tasks (SPARK_QUEUE_BATCH) and whether it passed; a
    candidate holding a `slow` task takes half a second more (which lane lands first, decided)."""
    return gate_cmd("import os, sys, time\nbad = os.path.exists('bad.txt')\n"
                    f"open({str(log)!r}, 'a').write(os.environ['SPARK_QUEUE_BATCH'] + (' FAIL' if bad else ' ok') + '\\n')\n"
                    f"time.sleep(0.5 if set(os.environ['SPARK_QUEUE_BATCH'].split(',')) & {set(slow)!r} else 0)\n"
                    "sys.exit(1 if bad else 0)\n")


@pytest.mark.parametrize("recheck", ["combined", "none"])
def test_lanes_land_apart_and_a_moved_lane_is_rechecked_on_the_combined_tree(tmp_path: Path, recheck: str) -> None:
    """Four tasks on disjoint files, two runners: lanes {t0, t2} and {t1, t3} (one group per runner).
    t1 breaks the gate: {t0, t2} lands on its own; t3 is named free of it by the planner and, the base
    having moved, merged again on it and (recheck "combined") gated on the combined tree first. The
    runs holding t3 take longer, so that lane cannot be decided before the other lane's one run ends."""
    log = tmp_path / "gated.log"
    q = Queue(tmp_path, 4, culprit=1, final=logging_culprit_gate(log, slow=("t3",)), parallel=2, extra=f'[queue]\nlanes = true\nlanes_from = 0\nrecheck = "{recheck}"')
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    r = q.spark("t0", "--json", "queue", "run")
    assert r.returncode == 0, r
    got = {o["task"]: o for o in r.json["data"]["outcomes"]}
    assert got["t1"]["result"] == "failed" and got["t1"]["sent_back"] is True and got["t1"]["batch"] == ["t1", "t3"]
    assert got["t0"]["batch"] == got["t2"]["batch"] == ["t0", "t2"] and got["t3"]["batch"] == ["t3"]
    assert got["t3"]["old_base"] == got["t2"]["new_base"], "t3 landed on top of the other lane"
    assert sorted(landed_tasks(q)) == ["t0", "t2", "t3"] and "bad.txt" not in q.landed_files()
    lines = gated_batches(log)
    assert "t0,t2 ok" in lines and "t1,t3 FAIL" in lines and "t1 FAIL" in lines
    assert lines.count("t3 ok") == (2 if recheck == "combined" else 1), lines  # the lane's run, then the combined tree's
    assert passed_verdict(q, "main") is (recheck == "combined")  # "none": main's tree itself was never gated
    q.assert_landed_as_merges()
    assert q.scratch() == [] and q.queue_log()["running"] == [] and q.queue_refs() == []


def test_a_task_touching_a_shared_path_ties_the_batch_into_one_lane(tmp_path: Path) -> None:
    log = tmp_path / "gated.log"
    q = Queue(tmp_path, 3, final=logging_culprit_gate(log), parallel=2, extra='[queue]\nlanes = true\nlanes_from = 0\nshared = ["uv.lock"]')
    commit(q.root / "t1" / "code", {"uv.lock": "pinned\n"}, "t1: lock")
    assert q.spark("t1", "approve", "t1", "--changes").returncode == 0
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    r = q.spark("t0", "--json", "queue", "run")
    assert r.returncode == 0, r
    assert {o["result"] for o in r.json["data"]["outcomes"]} == {"landed"} and len({o["new_base"] for o in r.json["data"]["outcomes"]}) == 1
    lines = gated_batches(log)
    assert "t0,t1,t2 ok" in lines and set(lines) <= {"t0 ok", "t0,t1 ok", "t0,t1,t2 ok"}, lines  # the batch and its prefixes: no lane apart
