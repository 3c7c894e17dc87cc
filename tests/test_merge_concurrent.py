"""8 agents run `spark-git merge` at the same moment (8 OS processes released through a pipe barrier):
all land, linear history, each agent commit exactly once, every landed tip gated, no lost merge."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fixtures.repo import git
from tests.mergekit import PY, Task, config

WRAPPER = r"""
import os, runpy, sys
ready, go = int(sys.argv[1]), int(sys.argv[2])
import spark_git.cli, spark_git.ops.merge, git.cmd, filelock  # warm start-up: race on the work, not the imports
os.write(ready, b".")
os.close(ready)
if os.read(go, 1) != b"g":
    sys.exit(99)
sys.argv = ["spark_git", *sys.argv[3:]]
runpy.run_module("spark_git", run_name="__main__", alter_sys=True)
"""


def run_together(cwd: Path, argvs: list[list[str]], env: dict[str, str]) -> list[subprocess.CompletedProcess]:
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    procs = []
    try:
        for args in argvs:
            procs.append(subprocess.Popen(
                [sys.executable, "-c", WRAPPER, str(ready_w), str(go_r), *args], cwd=cwd, env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=(ready_w, go_r),
            ))
        os.close(ready_w)
        ready_w = -1
        got = b""
        while len(got) < len(procs):  # every child is imported and waiting
            chunk = os.read(ready_r, 64)
            assert chunk, "a child died before the barrier"
            got += chunk
        os.write(go_w, b"g" * len(procs))  # release them all at once
        results = []
        for p in procs:
            out, err = p.communicate(timeout=600)
            results.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
        return results
    finally:
        for fd in (ready_r, ready_w, go_r, go_w):
            if fd >= 0:
                os.close(fd)


def test_eight_agents_merge_at_the_same_moment(tmp_path: Path) -> None:
    agents = [f"a{i}" for i in range(1, 9)]
    gate = [PY, "-c", "import pathlib, sys; sys.exit(0 if pathlib.Path('README.md').exists() else 1)"]
    t = Task(tmp_path, agents, config(build=gate))
    base = t.head()
    originals = {a: t.commit(a, {f"work/{a}.txt": f"written by {a}\n"}, f"work of {a}") for a in agents}
    env = dict(os.environ, SPARK_SESSION_ID="s1")
    results = run_together(t.repo, [["--json", "merge", "t1", "--agent", a] for a in agents], env)
    for a, r in zip(agents, results):
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
