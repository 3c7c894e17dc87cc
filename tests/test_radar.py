"""Conflict radar (issue 13): `status` says which agents' unmerged branches would conflict, with each
other or with the task head, and on which files, before anything is merged and without touching a
worktree; `merge` warns before its gate when the agent's work adds a conflict for another agent."""

from __future__ import annotations

from pathlib import Path

from fixtures.repo import commit, git, snapshot

from tests.protokit import P

LIGHT = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'
BASE = "one\ntwo\nthree\n"


def _task(tmp_path: Path) -> P:
    p = P(tmp_path, agents="a1,a2,a3", config=LIGHT, files={"README.md": "# demo\n", "src/app.py": BASE, "src/other.py": "x\n"})
    p.commit("a1", {"src/app.py": "one\nTWO by a1\nthree\n"}, "a1 edits line 2")
    p.commit("a2", {"src/app.py": "one\ntwo by a2\nthree\n", "src/a2.py": "new\n"}, "a2 edits line 2 too")
    p.commit("a3", {"src/other.py": "y\n"}, "a3 edits another file")
    return p


def _radar(p: P) -> dict:
    (t,) = p.ok("status", p.task)["data"]["tasks"]
    return t["radar"]


def test_status_names_the_pair_and_the_file_before_any_merge(tmp_path: Path) -> None:
    p = _task(tmp_path)
    wts = [p.wt(a) for a in ("a1", "a2", "a3")] + [p.wt()]
    before = snapshot(p.repo), [git(w, "status", "--porcelain") for w in wts]
    radar = _radar(p)
    assert (snapshot(p.repo), [git(w, "status", "--porcelain") for w in wts]) == before  # reads only
    assert git(p.repo, "fsck", "--no-progress") == ""  # the trial merges' trees went to scratch objects
    assert radar["note"] is None
    conflicts = [c for c in radar["checked"] if c["conflict"]]
    assert conflicts == [{"agent": "a1", "other": "a2", "conflict": True, "files": ["src/app.py"], "combined": []}]
    pairs = {(c["agent"], c["other"]) for c in radar["checked"]}
    assert pairs == {("a1", None), ("a2", None), ("a3", None), ("a1", "a2"), ("a1", "a3"), ("a2", "a3")}
    # The human views: the one-line summary names the pair, the full view names the file.
    out = p.spark("status").stdout
    assert "conflict a1/a2: src/app.py" in out, out
    out = p.spark("status", "--agents").stdout
    assert "⚠ a1 and a2 conflict in src/app.py" in out, out
    # --no-radar: not checked at all
    (t,) = p.ok("status", p.task, "--no-radar")["data"]["tasks"]
    assert t["radar"] is None


def test_an_agent_against_the_task_head(tmp_path: Path) -> None:
    p = _task(tmp_path)
    commit(p.wt(), {"src/app.py": "one\ntwo on the task\nthree\n"}, "coordinator edits line 2")
    radar = _radar(p)
    clash = {(c["agent"], c["other"]): c["files"] for c in radar["checked"] if c["conflict"]}
    assert clash == {("a1", None): ["src/app.py"], ("a2", None): ["src/app.py"], ("a1", "a2"): ["src/app.py"]}


def test_merged_agents_drop_out_and_merge_warns_before_its_gate(tmp_path: Path) -> None:
    p = _task(tmp_path)
    r = p.spark("merge", p.task, "--agent", "a1")
    assert r.returncode == 0, r
    assert "warning: a1 conflicts with a2's unmerged work in src/app.py" in r.stderr, r
    # a2 now conflicts with the task head (which holds a1's work); a1 has nothing unmerged.
    radar = _radar(p)
    assert [(c["agent"], c["other"], c["files"]) for c in radar["checked"] if c["conflict"]] == [("a2", None, ["src/app.py"])]
    assert not any("a1" in (c["agent"], c["other"]) for c in radar["checked"])
    # a3 touches nothing a2 touches: its merge warns of nothing, even though its rebased branch now
    # holds a1's change (that conflict is not a3's).
    d = p.ok("merge", p.task, "--agent", "a3")["data"]
    assert d["radar"] == []
    assert git(p.repo, "fsck", "--no-progress") == ""


def test_merge_json_carries_the_warning(tmp_path: Path) -> None:
    p = _task(tmp_path)
    r = p.spark("--json", "merge", p.task, "--agent", "a2")
    assert r.returncode == 0 and r.stderr == "", r
    assert r.json["data"]["radar"] == [{"agent": "a2", "other": "a1", "conflict": True, "files": ["src/app.py"], "combined": []}]


def test_a_git_without_merge_tree_write_tree_degrades_with_a_note(tmp_path: Path) -> None:
    # git < 2.38 answers `merge-tree --write-tree` / `--stdin` with a usage error (exit 129): a `git`
    # first on PATH does exactly that and passes everything else to the real git.
    import os
    import shutil

    p = _task(tmp_path)
    wrap = tmp_path / "oldgit"
    wrap.mkdir()
    (wrap / "git").write_text(f'#!/bin/sh\nif [ "$1" = merge-tree ]; then echo "usage: git merge-tree" >&2; exit 129; fi\nexec {shutil.which("git")} "$@"\n')
    (wrap / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{wrap}{os.pathsep}{os.environ['PATH']}", "SPARK_SESSION_ID": "s1"}
    from fixtures.repo import spark

    r = spark(p.repo, "--json", "status", p.task, env=env, process=True)
    assert r.returncode == 0, r
    radar = r.json["data"]["tasks"][0]["radar"]
    assert radar["checked"] == [] and "git >= 2.38" in radar["note"], radar
    r = spark(p.repo, "status", p.task, env=env, process=True)
    assert "conflict radar off: it needs git >= 2.38" in r.stdout, r
    r = spark(p.repo, "--json", "merge", p.task, "--agent", "a1", env=env, process=True)
    assert r.returncode == 0 and r.json["data"]["radar"] == [], r  # the merge itself goes on


def test_merge_warns_before_the_gate_runs(tmp_path: Path) -> None:
    # The gate fails: a warning given after it would never be seen. The refusal carries the radar too.
    p = P(tmp_path, agents="a1,a2", config=LIGHT + '[gates]\nbuild = ["sh", "-c", "echo gate ran >&2; exit 1"]\n',
          files={"README.md": "# demo\n", "src/app.py": BASE})
    p.commit("a1", {"src/app.py": "one\nTWO by a1\nthree\n"}, "a1 edits line 2")
    p.commit("a2", {"src/app.py": "one\ntwo by a2\nthree\n"}, "a2 edits line 2 too")
    r = p.spark("merge", p.task, "--agent", "a1")
    assert r.returncode == 1 and "warning: a1 conflicts with a2's unmerged work in src/app.py" in r.stderr, r
    j = p.spark("--json", "merge", p.task, "--agent", "a1")
    assert j.returncode == 1 and j.json["data"]["radar"] == [{"agent": "a1", "other": "a2", "conflict": True, "files": ["src/app.py"], "combined": []}], j
