"""The simulated queue (scripts/sim_queue) and the real one take the same decisions on the same inputs:
6 approved tasks queued at once, culprits at given positions, a final gate that fails when the
candidate holds a culprit (SPARK_QUEUE_BATCH, or SPARK_TASK for a batch of one gated in its task
worktree) and logs each candidate it gates. Same tasks landed in the same order, same culprits named
in the same order, the same candidates gated, the same gate runs. Real processes, real git."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.repo import git

from spark_git.ops.landing.queuesim_day import Decisions, decisions
from tests.queuekit import Queue, gate_cmd

N = 6


def culprit_gate(log: Path, bad: set[str]) -> list[str]:
    return gate_cmd("import os, sys\n"
                    "b = os.environ.get('SPARK_QUEUE_BATCH') or os.environ['SPARK_TASK']\n"
                    f"open({str(log)!r}, 'a').write(b + '\\n')\n"
                    f"sys.exit(1 if set(b.split(',')) & set({sorted(bad)!r}) else 0)\n")


def real_queue(tmp: Path, culprits: set[int], batch_max: int) -> Decisions:
    """Every task `complete --no-wait`, then one `queue run` (a real process) drains the queue."""
    log = tmp / "gated.log"
    q = Queue(tmp, N, final=culprit_gate(log, {f"t{i}" for i in culprits}), extra=f"[queue]\nbatch_max = {batch_max}")
    base = git(q.repo, "rev-parse", "main")
    for t in q.tasks:
        assert q.spark(t, "complete", t, "--no-wait").returncode == 0
    r = q.spark("t0", "--json", "queue", "run", process=True)
    assert r.returncode == 0, r
    subjects = git(q.repo, "log", "--first-parent", "--reverse", "--format=%s", f"{base}..main").splitlines()
    assert all(s.startswith("spark-git: land task t") for s in subjects), subjects
    q.assert_landed_as_merges()
    assert q.queue_refs() == [] and q.scratch() == []
    qlog = q.queue_log()
    named = [int(o["task"][1:]) for o in qlog["outcomes"] if o["result"] == "failed"]
    gated = [[int(t[1:]) for t in line.split(",")] for line in log.read_text().splitlines()]
    assert qlog["gate_runs"] == len(gated)  # the queue's own count: one run per candidate the gate saw
    return Decisions([int(s.rsplit(" t", 1)[1]) for s in subjects], named, qlog["gate_runs"], gated)


@pytest.mark.usefixtures("unsandboxed")
@pytest.mark.parametrize(("culprits", "batch_max"), [(set(), 8), ({2}, 8), ({0, 5}, 8), ({1, 4}, 4), ({3}, 1)])
def test_the_simulated_queue_decides_as_the_real_one(tmp_path: Path, culprits: set[int], batch_max: int) -> None:
    real = real_queue(tmp_path, culprits, batch_max)
    assert real == decisions(N, culprits, batch_max=batch_max), real
    assert real == decisions(N, culprits, batch_max=batch_max, speculative=True)  # speculate.py at parallel=1
    assert sorted(real.landed + real.culprits) == list(range(N)) and not culprits & set(real.landed)


@pytest.fixture
def unsandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_BWRAP", "")  # the gate logs its candidates outside the tree (a sandboxed gate cannot)
