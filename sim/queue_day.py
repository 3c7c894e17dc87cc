"""A busy day for the merge queue (scripts/sim_queue): a seeded workload, the strategies compared,
and the table. The model itself is queuesim.py."""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from sim.queue_model import GateModel, Result, Sim, Strategy, Task
from spark_git.core.config import QueueConfig
from spark_git.ops.landing.queuestats import nearest_rank

SHARED = ("pyproject.toml", "uv.lock")
LANES_FROM = QueueConfig.model_fields["lanes_from"].default  # the drain's default
STRATEGIES = (
    Strategy("serial", batch_max=1, speculative=False),
    Strategy("batch-and-bisect [today]", speculative=False),
    Strategy("speculative"),
    Strategy("speculative + lanes [the drain]", lanes="batch", shared=SHARED, lanes_from=LANES_FROM),
    Strategy("speculative + lanes, always split [lanes_from 0]", lanes="batch", shared=SHARED),
    Strategy("speculative + lanes, always split, recheck none", lanes="batch", shared=SHARED, recheck="none"),
    Strategy("speculative + lanes, always split, rechecks restarted [before]", lanes="batch", shared=SHARED, chain=False),
    Strategy("lanes across batches [the drain, pipeline]", lanes="queue", shared=SHARED, lanes_from=LANES_FROM),
    Strategy("lanes across batches, always [lanes_from 0]", lanes="queue", shared=SHARED),
    Strategy("stacked batches [the drain, pipeline]", stack=True),
)


@dataclass(frozen=True)
class Day:
    tasks: int = 1000
    hours: float = 24.0  # arrivals spread over this long (Poisson)
    areas: int = 50  # each task changes 1..max_areas of them
    max_areas: int = 3
    shared_p: float = 0.02  # a task also changes a [queue] shared file (uv.lock)
    culprit_p: float = 0.05
    seed: int = 1


def workload(d: Day) -> list[Task]:
    rng = random.Random(d.seed)
    t, out = 0.0, []
    for i in range(d.tasks):
        t += rng.expovariate(d.tasks / (d.hours * 3600))
        paths = {f"area{a:02d}/code.py" for a in rng.sample(range(d.areas), rng.randint(1, d.max_areas))}
        if rng.random() < d.shared_p:
            paths.add("uv.lock")
        out.append(Task(i, t, frozenset(paths), rng.random() < d.culprit_p))
    return out


@dataclass(frozen=True)
class Row:
    strategy: str
    runners: int
    landed: int
    landed_per_hour: float
    wait_p50_min: float
    wait_p95_min: float
    runs_per_landed: float
    cancelled: int  # speculative runs stopped once useless (in runs_per_landed: they held a runner)
    culprits: int  # named by the queue
    wrongly_blamed: int  # named, but not a culprit (a flake that every retry reproduced)
    rechecks: int
    ungated: int  # landings of a tree no gate passed


def row(tasks: list[Task], strategy: Strategy, runners: int, gate: GateModel) -> Row:
    r: Result = Sim(tasks, strategy, runners, gate).run()
    arrive = {t.id: t.arrive_s for t in tasks}
    waits = sorted((at - arrive[i]) / 60 for i, at in r.landed)
    span_h = (max((at for _, at in r.landed), default=0.0) - min(arrive.values(), default=0.0)) / 3600
    culprit = {t.id for t in tasks if t.culprit}
    return Row(strategy.name, runners, len(r.landed), round(len(r.landed) / span_h, 1) if span_h > 0 else 0.0,
               round(nearest_rank(waits, 0.5) or 0.0, 1), round(nearest_rank(waits, 0.95) or 0.0, 1),
               round(r.gate_runs / len(r.landed), 2) if r.landed else 0.0, r.cancelled, len(r.culprits),
               sum(1 for c in r.culprits if c not in culprit), r.rechecks, r.ungated)


HEAD = ("strategy", "runners", "landed", "landed/h", "wait p50 (min)", "wait p95 (min)", "gate runs/landed", "cancelled runs", "culprits found", "wrongly blamed", "rechecks", "ungated lands")


def table(rows: Sequence[Row]) -> str:
    """A markdown table (docs/benchmarks.md quotes it as printed)."""
    cells = [HEAD, *((r.strategy, str(r.runners), str(r.landed), f"{r.landed_per_hour:.1f}", f"{r.wait_p50_min:.1f}", f"{r.wait_p95_min:.1f}",
                      f"{r.runs_per_landed:.2f}", str(r.cancelled), str(r.culprits), str(r.wrongly_blamed), str(r.rechecks), str(r.ungated)) for r in rows)]
    widths = [max(len(c[k]) for c in cells) for k in range(len(HEAD))]
    lines = ["| " + " | ".join(c[k].ljust(widths[k]) for k in range(len(HEAD))) + " |" for c in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


@dataclass(frozen=True)
class Decisions:
    landed: list[int]  # in landing order
    culprits: list[int]  # in the order named
    gate_runs: int
    gated: list[list[int]]  # each run's candidate: its tasks, in the order started


def decisions(n: int, culprits: set[int], batch_max: int = 8, parallel: int = 1, speculative: bool = False, per_task_s: float = 0.0,
              lanes: bool = False, flaky: frozenset[int] = frozenset(), retries: int = 0, slow: frozenset[int] = frozenset(),
              pipeline: bool = False, lanes_from: float = 0.0) -> Decisions:
    """What the queue decides for n tasks queued at once, each changing a file of its own (a gate of
    1 s plus per_task_s per task in the candidate, twice for a `slow` one, no random flakes; the first
    run on a tree holding a `flaky` task fails; `lanes`: [queue] lanes = true with `lanes_from`, `pipeline` too). The real queue must
    take the same decisions (tests/test_queuesim_real.py); `pipeline` without `lanes`: stacked batches."""
    tasks = [Task(i, 0.0, frozenset({f"t{i}.txt"}), i in culprits) for i in range(n)]
    gate = GateModel(mean_s=1.0, jitter_s=0.0, flake=0.0, retries=retries, per_task_s=per_task_s, flaky_tasks=flaky, slow_tasks=slow)
    mode: Literal["no", "batch", "queue"] = ("queue" if pipeline else "batch") if lanes else "no"
    stack = pipeline and not lanes and parallel > 1
    r = Sim(tasks, Strategy("fixed", batch_max=batch_max, speculative=speculative, lanes=mode, window=2 * batch_max, stack=stack,
                      lanes_from=lanes_from), parallel, gate).run()
    return Decisions([i for i, _ in r.landed], r.culprits, r.gate_runs, r.gated)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/sim_queue", description="The merge queue over a simulated busy day (virtual clock, seeded).")
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--hours", type=float, default=24.0, help="arrivals spread over this many hours")
    ap.add_argument("--gate-min", type=float, default=10.0, help="mean final-gate duration")
    ap.add_argument("--jitter-min", type=float, default=2.0, help="its standard deviation")
    ap.add_argument("--culprit", type=float, default=0.05, help="chance that a task breaks the gate")
    ap.add_argument("--flake", type=float, default=0.02, help="chance that one gate run fails by chance")
    ap.add_argument("--retries", type=int, default=1, help="[queue] retries")
    ap.add_argument("--runners", default="4,16", help="parallel runners, comma-separated")
    ap.add_argument("--shared", type=float, default=0.02, help="chance that a task also changes uv.lock (a [queue] shared path)")
    ap.add_argument("--batch-max", type=int, default=8, help="[queue] batch_max of every strategy but serial")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    runners = _runners(ap, a.runners)
    bad = [f"--{k.replace('_', '-')}" for k, ok in (("tasks", a.tasks >= 1), ("hours", a.hours > 0), ("gate_min", a.gate_min > 0), ("jitter_min", a.jitter_min >= 0),
                                                    ("culprit", 0 <= a.culprit <= 1), ("flake", 0 <= a.flake <= 1), ("shared", 0 <= a.shared <= 1),
                                                    ("retries", 0 <= a.retries <= 5), ("batch_max", 1 <= a.batch_max <= 64)) if not ok]
    if bad:
        ap.error(f"out of range: {', '.join(bad)} (chances are 0..1, retries 0..5, batch-max 1..64, the rest positive)")
    tasks = workload(Day(tasks=a.tasks, hours=a.hours, shared_p=a.shared, culprit_p=a.culprit, seed=a.seed))
    gate = GateModel(mean_s=a.gate_min * 60, jitter_s=a.jitter_min * 60, flake=a.flake, retries=a.retries, seed=a.seed)
    strategies = [s if s.batch_max == 1 else replace(s, batch_max=a.batch_max, window=2 * a.batch_max) for s in STRATEGIES]
    rows = [row(tasks, s, n, gate) for s in strategies for n in runners]
    print(f"{a.tasks} tasks over {a.hours:g} h (seed {a.seed}); gate {a.gate_min:g} ± {a.jitter_min:g} min; culprits {a.culprit:.0%}, "
          f"flakes {a.flake:.0%} per run, retries {a.retries}; {sum(t.culprit for t in tasks)} culprits drawn; batch_max {a.batch_max}, lanes over the first {2 * a.batch_max} waiting")
    print(table(rows))
    return 0


def _runners(ap: argparse.ArgumentParser, spec: str) -> list[int]:
    try:
        runners = [int(x) for x in spec.split(",") if x.strip()]
    except ValueError:
        runners = []
    if not runners or min(runners) < 1:
        ap.error(f"--runners {spec!r}: comma-separated numbers of at least 1, e.g. 4,16")
    return runners


if __name__ == "__main__":
    sys.exit(main())
