"""ops/queue/lanes.py: the pure partition of ready queue entries into independent lanes."""

from __future__ import annotations

import random

from spark_git.ops.queue.lanes import RECENT, grouped, partition, touches_shared, worth_splitting


def fs(*paths: str) -> frozenset[str]:
    return frozenset(paths)


def test_disjoint_entries_get_one_lane_each() -> None:
    assert partition([fs("a.py"), fs("b.py"), fs("c/d.py")]) == [[0], [1], [2]]


def test_overlap_is_transitive_and_keeps_queue_order() -> None:
    # 0 and 2 share x.py, 2 and 4 share y.py: one lane 0, 2, 4; 1 and 3 share z.py
    changed = [fs("x.py"), fs("z.py"), fs("x.py", "y.py"), fs("z.py"), fs("y.py"), fs("w.py")]
    assert partition(changed) == [[0, 2, 4], [1, 3], [5]]


def test_a_file_and_a_path_under_it_overlap() -> None:
    """A file `a` and a file `a/b` cannot both land: the same lane, either order."""
    assert partition([fs("a"), fs("a/b"), fs("ab")]) == [[0, 1], [2]]
    assert partition([fs("d/e/f.py"), fs("d/e"), fs("d/g.py")]) == [[0, 1], [2]]


def test_a_shared_path_ties_every_entry_ahead_and_behind() -> None:
    changed = [fs("a.py"), fs("b.py"), fs("uv.lock", "c.py"), fs("d.py")]
    assert partition(changed, ["pyproject.toml", "uv.lock"]) == [[0, 1, 2, 3]]
    assert partition(changed) == [[0], [1], [2], [3]]  # without the config it is a file like any other


def test_shared_globs_match_the_whole_path() -> None:
    assert touches_shared(fs("sub/pyproject.toml"), ["*pyproject.toml"])
    assert not touches_shared(fs("sub/pyproject.toml"), ["pyproject.toml"])
    assert touches_shared(fs("ci/x/y.yml"), ["ci/*"])


def test_empty_inputs() -> None:
    assert partition([]) == []
    assert partition([], ["uv.lock"]) == []
    assert partition([fs(), fs()]) == [[0], [1]]  # no change: nothing to interact with


def _related(a: frozenset[str], b: frozenset[str]) -> bool:
    return any(p == q or q.startswith(p + "/") or p.startswith(q + "/") for p in a for q in b)


def test_matches_the_definition_on_random_inputs() -> None:
    """Brute force: two entries share a lane iff a chain of related entries joins them; lanes are
    ordered by their first entry, each in queue order."""
    rng = random.Random(7)
    names = ["a", "a/b", "a/c", "b", "b/x/y", "c", "d", "e/f"]
    for _ in range(300):
        changed = [frozenset(rng.sample(names, rng.randint(0, 2))) for _ in range(rng.randint(1, 9))]
        lanes = partition(changed)
        lane_of = {i: k for k, lane in enumerate(lanes) for i in lane}
        assert sorted(lane_of) == list(range(len(changed)))
        assert all(lane == sorted(lane) for lane in lanes) and [lane[0] for lane in lanes] == sorted(lane[0] for lane in lanes)
        for i in range(len(changed)):
            for j in range(len(changed)):
                if _related(changed[i], changed[j]):
                    assert lane_of[i] == lane_of[j], (changed, lanes)
        for lane in lanes:  # each lane is connected: no two unrelated groups merged
            seen, todo = {lane[0]}, [lane[0]]
            while todo:
                i = todo.pop()
                for j in lane:
                    if j not in seen and _related(changed[i], changed[j]):
                        seen.add(j)
                        todo.append(j)
            assert seen == set(lane), (changed, lanes)


def test_lanes_grouped_one_group_per_runner() -> None:
    """Past `most` groups a lane joins the smallest group so far (the first of equals); queue order kept."""
    assert grouped([[0], [1, 2], [3], [4]], 2) == [[0, 3, 4], [1, 2]]
    assert grouped([[0, 5], [1], [2]], 4) == [[0, 5], [1], [2]]
    assert grouped([[0], [1], [2]], 1) == [[0, 1, 2]]
    assert grouped([], 3) == []


def test_a_batch_is_split_only_once_recent_tasks_failed_often() -> None:
    calm, rough = [False] * 40 + [True] * 4, [False] * 40 + [True] * 6  # of the last 32: 4 culprits (12.5 %), 6 (18.75 %)
    assert not worth_splitting([], 0.16) and not worth_splitting(calm, 0.16) and worth_splitting(rough, 0.16)
    assert worth_splitting([], 0.0) and worth_splitting(calm, 0.0)  # 0: always
    assert not worth_splitting([True] * 31 + [False] * RECENT, 0.01)  # only the last RECENT count
