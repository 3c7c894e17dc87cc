"""`spark-git who` / `log`: attribution from notes, falling back to the trailer, then the subject prefix."""

from __future__ import annotations

from pathlib import Path

from fixtures.repo import commit, git

from tests.mergekit import PY, Task, config


def test_who_sources_and_sync_then_merge(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1", "a2"], config(build=[PY, "-c", "pass"], attribution="off"))
    t.commit("a1", {"a.txt": "1\n2\n3\n"}, "plain subject by a1")  # off: lands as is, the note says a1
    assert t.merge("a1").returncode == 0
    # Commits made straight on the task branch carry no notes: trailer, then prefix, else unattributed.
    c_trailer = commit(t.wt(), {"b.txt": "b\n"}, "by hand\n\nSpark-Agent: a9")
    c_prefix = commit(t.wt(), {"c.txt": "c\n"}, "[a8] by hand too")
    c_none = commit(t.wt(), {"README.md": "changed\n"}, "nobody's")
    # a2 catches up with sync (clean rebase), then merges
    t.commit("a2", {"d.txt": "d\n"}, "[a2] d")
    r = t.spark("--json", "sync", "t1", "--agent", "a2")
    assert r.returncode == 0 and r.json["data"]["rebased"] is True and r.json["data"]["conflicts"] == [], r
    assert git(t.repo, "merge-base", "--is-ancestor", t.head(), t.head("a2")) == ""
    assert t.merge("a2").returncode == 0
    r = t.spark("--json", "who", "t1")
    assert r.returncode == 0, r
    d = r.json["data"]
    got = {w["agent"]: (w["files"], w["added"], w["removed"], len(w["commits"])) for w in d["agents"]}
    assert got == {
        "a1": (["a.txt"], 3, 0, 1), "a2": (["d.txt"], 1, 0, 1), "a8": (["c.txt"], 1, 0, 1), "a9": (["b.txt"], 1, 0, 1),
    }
    assert d["unattributed"] == [c_none]
    sources = {c["sha"]: c["agent_source"] for c in t.spark("--json", "log", "t1").json["data"]["commits"]}
    assert sources[c_trailer] == "trailer" and sources[c_prefix] == "prefix" and sources[c_none] is None
    human = t.spark("who", "t1")
    assert human.returncode == 0 and "(unattributed)" in human.stdout and "a9" in human.stdout


def test_who_of_unknown_task_is_bad_input(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config())
    r = t.spark("--json", "who", "nope")
    assert r.returncode == 2, r
    r = t.spark("--json", "who", "t1")
    assert r.returncode == 0 and r.json["data"]["agents"] == [] and r.json["data"]["unattributed"] == []


def test_notes_follow_a_rebase_of_the_task_branch(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(attribution="off"))
    t.commit("a1", {"a.txt": "a\n"}, "plain subject")  # no prefix, no trailer: only the note attributes it
    assert t.merge("a1").returncode == 0
    landed = t.head()
    commit(t.repo, {"main-only.txt": "m\n"}, "main moved")
    git(t.wt(), "rebase", "-q", "main")  # what `complete` tells you to do when main moved
    rebased = t.head()
    assert rebased != landed
    commits = t.spark("--json", "log", "t1").json["data"]["commits"]
    assert [(c["sha"], c["agent"], c["agent_source"]) for c in commits] == [(rebased, "a1", "note")]


def test_who_log_and_audit_after_the_task_ended(tmp_path: Path) -> None:
    """History is most wanted after the task is gone: `who`, `log` and `audit` read an ended task from
    the snapshot and audit trail kept by cleanup/abandon (its branches are deleted by then)."""
    t = Task(tmp_path, ["a1", "a2"], config(non_interactive=True))
    t.commit("a1", {"a.txt": "a\n"}, "[a1] a")
    t.commit("a2", {"b.txt": "b\n"}, "[a2] b")
    assert t.spark("--json", "merge", "t1", "--all").returncode == 0
    assert t.spark("--json", "approve", "t1", "--changes").returncode == 0
    assert t.spark("--json", "complete", "t1").returncode == 0
    before_who, before_log = (t.spark("--json", "who", "t1").json["data"], t.spark("--json", "log", "t1").json["data"])
    assert {c["agent"] for c in before_log["commits"]} == {"a1", "a2"} and before_log["commits"][0]["approvals"]
    r = t.spark("--json", "cleanup", "t1")
    assert r.returncode == 0 and r.json["data"]["deleted_branches"], r
    assert not (t.root / "task.json").exists()
    who = t.spark("--json", "who", "t1")
    assert who.returncode == 0, who
    assert who.json["data"] == before_who
    log = t.spark("--json", "log", "t1")
    assert log.returncode == 0 and log.json["data"] == before_log, log
    audit = t.spark("--json", "audit", "t1")
    assert audit.returncode == 0 and audit.json["data"]["state"] is None and audit.json["data"]["timeline"], audit
    human = t.spark("who", "t1")
    assert human.returncode == 0 and "a1" in human.stdout and "a2" in human.stdout


def test_every_commit_a_merge_brought_is_landed_and_history_survives_abandon(tmp_path: Path) -> None:
    """`log --json` "landed": every commit a merge put on the task branch, not only its tip; `who`,
    `log` and `audit` still answer once the task is abandoned (unmerged work archived, not listed)."""
    t = Task(tmp_path, ["a1"], config())
    t.commit("a1", {"a.txt": "a\n"}, "[a1] a")
    t.commit("a1", {"b.txt": "b\n"}, "[a1] b")
    assert t.merge("a1").returncode == 0
    got = [(c["subject"], c["landed"]) for c in t.spark("--json", "log", "t1").json["data"]["commits"]]
    assert got == [("[a1] b", True), ("[a1] a", True)], got
    t.commit("a1", {"c.txt": "c\n"}, "[a1] c, never merged")
    before = t.spark("--json", "log", "t1").json["data"]
    assert t.spark("--json", "abandon", "t1", "--why", "changed our minds").returncode == 0
    log = t.spark("--json", "log", "t1")
    assert log.returncode == 0 and log.json["data"] == before, log
    who = t.spark("--json", "who", "t1")
    assert who.returncode == 0 and [(w["agent"], len(w["commits"])) for w in who.json["data"]["agents"]] == [("a1", 2)], who
    audit = t.spark("--json", "audit", "t1")
    assert audit.returncode == 0 and audit.json["data"]["timeline"], audit
