"""`spark-git merge` / `sync`: landing, refusals that change nothing, conflicts, attribution."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import git, write

from tests.mergekit import PY, Task, config

OK_GATE = [PY, "-c", "print('gate ok')"]


def test_merge_lands_and_records_everything(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=OK_GATE))
    base = t.head()
    c1 = t.commit("a1", {"src/new.py": "x = 1\n"}, "[a1] add new")
    r = t.merge("a1")
    assert r.returncode == 0, r
    d = r.json["data"]
    # Already prefixed, but without trailers: stamped, so the landed id differs from c1 (same tree).
    new_head = t.head()
    assert d["old_head"] == base and d["new_head"] == new_head and t.head("a1") == new_head
    assert git(t.repo, "rev-parse", f"{new_head}^{{tree}}") == git(t.repo, "rev-parse", f"{c1}^{{tree}}")
    assert git(t.repo, "rev-parse", f"{new_head}^") == base
    msg = git(t.repo, "log", "-1", "--format=%B", new_head)
    assert msg.startswith("[a1] add new") and "Spark-Agent: a1" in msg and "Spark-Task: t1" in msg
    assert git(t.wt(), "rev-parse", "HEAD") == new_head and git(t.wt(), "status", "--porcelain") == ""
    assert json.loads((t.root / "agents/a1/status.json").read_text())["last_merge_sha"] == new_head
    assert t.task_json()["agents"]["a1"]["last_merge_sha"] == new_head
    kinds = {n["kind"]: n for n in t.notes(new_head)}
    assert kinds["attribution"]["agent"] == "a1" and kinds["attribution"]["task"] == "t1" and kinds["attribution"]["session"] == "s1"
    assert kinds["gate"]["passed"] is True and kinds["gate"]["tree"] == git(t.repo, "rev-parse", f"{new_head}^{{tree}}")
    log = Path(kinds["gate"]["log_path"]).read_text()
    assert "gate ok" in log
    trail = t.audit()
    assert [c["sha"] for c in trail["commits"]] == [new_head] and trail["commits"][0]["files"] == ["src/new.py"]
    assert trail["build_verifications"][-1]["result"] == "passed" and trail["build_verifications"][-1]["commit"] == new_head
    assert git(t.repo, "config", "notes.rewriteRef") == "refs/notes/spark"
    # The old (unstamped) commit stays reachable.
    assert git(t.repo, "for-each-ref", "--contains", c1, "--format=%(refname)", "refs/spark/archive/").startswith("refs/spark/archive/t1/")


def test_nothing_new_is_ok_and_changes_nothing(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=OK_GATE))
    before = t.snapshot(["a1"])
    r = t.merge("a1")
    assert r.returncode == 0, r
    assert r.json["data"]["landed"] == [] and r.json["data"]["gate"] is None
    assert t.snapshot(["a1"]) == before
    assert not (t.root / "logs").exists()


def test_dirty_worktrees_block_and_change_nothing(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=OK_GATE))
    t.commit("a1", {"f.txt": "1\n"}, "[a1] f")
    write(t.wt("a1") / "untracked.txt", "u\n")
    write(t.wt("a1") / "src/app.py", "changed\n")
    before = t.snapshot(["a1"])
    r = t.merge("a1")
    assert r.returncode == 3, r
    assert sorted(r.json["data"]["files"]) == [" M src/app.py", "?? untracked.txt"]
    assert t.snapshot(["a1"]) == before
    (t.wt("a1") / "untracked.txt").unlink()
    git(t.wt("a1"), "checkout", "--", "src/app.py")
    write(t.wt() / "stray.txt", "s\n")
    before = t.snapshot(["a1"])
    r = t.merge("a1")
    assert r.returncode == 3 and "task worktree is not clean" in r.json["summary"], r
    assert r.json["data"]["files"] == ["?? stray.txt"]
    assert t.snapshot(["a1"]) == before


def test_bad_input_and_other_session(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=OK_GATE))
    r = t.merge("nobody")
    assert r.returncode == 2 and r.json["data"]["agents"] == ["a1"], r
    r = t.merge("a1", session="intruder")
    assert r.returncode == 3 and "owned by session s1" in r.json["summary"], r
    r = t.spark("merge", "no-such-task", "--agent", "a1")
    assert r.returncode == 2 and "no task" in r.stderr and "Traceback" not in r.stderr, r


def test_same_lines_conflict_restores_everything_then_sync_resolves(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1", "a2"], config(build=OK_GATE))
    t.commit("a1", {"src/app.py": "line1\nA1 WAS HERE\nline3\n"}, "[a1] edit line2")
    t.commit("a2", {"src/app.py": "line1\nA2 WAS HERE\nline3\n", "other.txt": "o\n"}, "[a2] edit line2 too")
    assert t.merge("a1").returncode == 0
    before = t.snapshot(["a1", "a2"])
    r = t.merge("a2")
    assert r.returncode == 3, r
    assert r.json["data"]["conflicts"] == ["src/app.py"]
    assert "spark-git sync t1 --agent a2" in r.json["next"]
    assert t.snapshot(["a1", "a2"]) == before
    assert not (t.root / "agents/a2/.spark-merge-rebase").exists()

    r = t.spark("--json", "sync", "t1", "--agent", "a2")
    assert r.returncode == 3 and r.json["status"] == "BLOCKED" and r.json["data"]["conflicts"] == ["src/app.py"], r
    assert any("git rebase --continue" in n for n in r.json["next"])
    # merge while the agent's rebase is in progress: refused, the agent's rebase is left alone
    r2 = t.merge("a2")
    assert r2.returncode == 3 and "rebase is in progress" in r2.json["summary"]
    assert "GIT_EDITOR=true git rebase --continue" in r2.json["data"]["hint"]  # an agent cannot use the editor git opens
    r3 = t.spark("--json", "sync", "t1", "--agent", "a2")  # again, while the rebase waits
    assert r3.returncode == 3 and "GIT_EDITOR=true git rebase --continue" in r3.json["data"]["hint"], r3
    (note,) = [f for f in t.spark("--json", "doctor", "t1").json["data"]["findings"] if f["kind"] == "rebase-in-progress"]
    assert "GIT_EDITOR=true git rebase --continue" in note["repair"], note
    write(t.wt("a2") / "src/app.py", "line1\nA1 WAS HERE\nA2 WAS HERE\nline3\n")
    git(t.wt("a2"), "add", "src/app.py")
    git(t.wt("a2"), "-c", "core.editor=true", "rebase", "--continue")
    r = t.merge("a2")
    assert r.returncode == 0, r
    assert git(t.repo, "show", f"{t.head()}:src/app.py") == "line1\nA1 WAS HERE\nA2 WAS HERE\nline3"
    assert git(t.repo, "rev-list", "--count", "--merges", t.head()) == "0"


def test_attribution_require_refuses_and_add_stamps(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=OK_GATE, attribution="require"))
    ok = t.commit("a1", {"a.txt": "a\n"}, "[a1] good")
    bad = t.commit("a1", {"b.txt": "b\n"}, "no prefix here")
    before = t.snapshot(["a1"])
    r = t.merge("a1")
    assert r.returncode == 3, r
    assert r.json["data"]["commits"] == [f"{bad[:12]} no prefix here"]
    assert t.snapshot(["a1"]) == before
    git(t.wt("a1"), "commit", "--amend", "-q", "-m", "fixed\n\nSpark-Agent: a1")
    r = t.merge("a1")
    assert r.returncode == 0, r
    # require mode does not rewrite: the agent's own commits land with their ids
    assert git(t.repo, "rev-parse", f"{t.head()}^") == ok
    assert r.json["data"]["stamped"] == 0


def test_who_and_log_after_rebases(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1", "a2"], config(build=OK_GATE))
    t.commit("a1", {"one.txt": "1\n2\n"}, "one")
    t.commit("a2", {"two.txt": "1\n"}, "two")
    t.commit("a2", {"two.txt": "1\n2\n3\n", "src/app.py": "line1\n"}, "two again")
    assert t.merge("a1").returncode == 0
    assert t.merge("a2").returncode == 0  # rebased onto a1's work, then stamped
    r = t.spark("--json", "who", "t1")
    assert r.returncode == 0, r
    agents = {w["agent"]: w for w in r.json["data"]["agents"]}
    assert set(agents) == {"a1", "a2"} and r.json["data"]["unattributed"] == []
    assert agents["a1"]["files"] == ["one.txt"] and agents["a1"]["added"] == 2 and agents["a1"]["removed"] == 0
    assert sorted(agents["a2"]["files"]) == ["src/app.py", "two.txt"] and agents["a2"]["added"] == 3 and agents["a2"]["removed"] == 2
    assert len(agents["a2"]["commits"]) == 2
    r = t.spark("--json", "log", "t1")
    commits = r.json["data"]["commits"]
    assert [(c["agent"], c["agent_source"]) for c in commits] == [("a2", "note"), ("a2", "note"), ("a1", "note")]
    assert commits[0]["gates"][0]["passed"] is True and commits[0]["landed"] is True
    human = t.spark("log", "t1")
    assert "[a2] two again" in human.stdout
