"""8 agents run `spark-git merge` at the same moment (8 OS processes released through a pipe barrier):
all land, linear history, each agent commit exactly once, every landed tip gated, no lost merge."""

from __future__ import annotations

from pathlib import Path

from fixtures.race import run_together
from fixtures.repo import git

from tests.mergekit import PY, Task, config


def test_eight_agents_merge_at_the_same_moment(tmp_path: Path) -> None:
    agents = [f"a{i}" for i in range(1, 9)]
    gate = [PY, "-c", "import pathlib, sys; sys.exit(0 if pathlib.Path('README.md').exists() else 1)"]
    t = Task(tmp_path, agents, config(build=gate))
    base = t.head()
    originals = {a: t.commit(a, {f"work/{a}.txt": f"written by {a}\n"}, f"work of {a}") for a in agents}
    results = run_together(t.repo, [(["--json", "merge", "t1", "--agent", a], {"SPARK_SESSION_ID": "s1"}) for a in agents])
    for a, r in zip(agents, results, strict=True):
        assert r.returncode == 0, (a, r.stdout, r.stderr)

    head = t.head()
    assert git(t.repo, "rev-list", "--count", "--merges", f"{base}..{head}") == "0"  # linear
    landed = git(t.repo, "rev-list", "--reverse", f"{base}..{head}").split()
    assert len(landed) == 8 and git(t.repo, "rev-list", "--count", "--first-parent", f"{base}..{head}") == "8"
    subjects = git(t.repo, "log", "--format=%s", f"{base}..{head}").splitlines()
    assert sorted(subjects) == sorted(f"[{a}] work of {a}" for a in agents)  # each exactly once
    for a in agents:
        assert git(t.repo, "show", f"{head}:work/{a}.txt") == f"written by {a}"
    # Every landed tip's tree passed its gate; one gate run per landed branch, no more.
    for sha in landed:
        tree = git(t.repo, "rev-parse", f"{sha}^{{tree}}")
        gate_notes = [n for n in t.notes(sha) if n["kind"] == "gate"]
        assert [(n["passed"], n["tree"]) for n in gate_notes] == [(True, tree)], sha
        assert [n["kind"] for n in t.notes(sha)].count("attribution") == 1
    trail = t.audit()
    assert len(trail["build_verifications"]) == 8 and all(b["result"] == "passed" for b in trail["build_verifications"])
    assert sorted(c["sha"] for c in trail["commits"]) == sorted(landed)
    tj = t.task_json()
    for a in agents:
        assert tj["agents"][a]["last_merge_sha"] in landed and t.head(a) == tj["agents"][a]["last_merge_sha"]
        assert originals[a] not in landed  # rewritten (rebased/stamped) ...
        # ... but never lost: still reachable from an archive ref or the agent's own branch
        assert git(t.repo, "for-each-ref", "--contains", originals[a], "--format=%(refname)", "refs/spark/archive/")
    assert git(t.repo, "fsck", "--no-progress") == ""
