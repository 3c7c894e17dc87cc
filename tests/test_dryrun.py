"""`--dry-run` on `cleanup`, `abandon`, `doctor --fix` and `lock break`: it names what the real run
would archive, move aside, remove and delete, and changes nothing (refs, worktrees, the main
worktree's status, every file under the tasks root, byte for byte)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from fixtures.repo import commit, git, make_repo, snapshot, spark, write

CONFIG = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'


def run(repo: Path, *args: str, session: str = "s1"):
    return spark(repo, *args, env={**os.environ, "SPARK_SESSION_ID": session})


def ok(r):
    assert r.returncode == 0, r
    return r


@pytest.fixture
def lrepo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# demo\n", ".gitignore": "*.local\n"}, config=CONFIG)


def busy_task(repo: Path) -> Path:
    """A task with an unmerged commit, uncommitted work, an ignored file and a nested repository."""
    ok(run(repo, "start", "t1", "--agents", "a1,a2"))
    root = repo.parent / "repo.tasks" / "t1"
    commit(root / "agents/a1/code", {"a1.txt": "a1\n"}, "[a1] unmerged work")
    write(root / "agents/a2/code/draft.txt", "never committed\n")
    write(root / "agents/a2/code/.env.local", "SECRET=1\n")
    nested = root / "agents/a1/code/vendor/lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    return root


def acted_on(d: dict) -> dict[str, object]:
    """What a run acted on, comparable between a dry run and the real one (a new commit's sha differs)."""
    return {
        "archived": sorted((a["ref"].rsplit("/", 1)[0], a["what"], tuple(a["files"])) for a in d["archived"]),
        **{k: d[k] for k in ("removed_worktrees", "deleted_branches", "kept_branches", "kept_paths", "final_state")},
    }


@pytest.mark.parametrize("argv", [["abandon", "t1", "--why", "stop"], ["cleanup", "t1", "--abandon", "--why", "stop"]])
def test_dry_run_changes_nothing_and_names_what_the_real_run_does(lrepo: Path, argv: list[str]) -> None:
    busy_task(lrepo)
    before = snapshot(lrepo)
    dry = ok(run(lrepo, *argv, "--dry-run", "--json"))
    assert snapshot(lrepo) == before
    d = dry.json["data"]
    assert d["dry_run"] is True and dry.json["summary"].startswith("dry run, nothing changed")
    assert dry.json["next"] == [f"spark-git {' '.join(argv)}"]
    whats = {a["what"].split(" in ")[0].split(" of ")[0] for a in d["archived"]}
    assert whats == {"uncommitted work", "ignored files", "branch task-t1-agent-a1"}, d["archived"]
    assert len(d["removed_worktrees"]) == 3 and len(d["kept_paths"]) == 1
    human = ok(run(lrepo, *argv, "--dry-run"))
    assert "would archive" in human.stdout and "would remove" in human.stdout and snapshot(lrepo) == before
    real = ok(run(lrepo, *argv, "--json"))
    assert real.json["data"]["dry_run"] is False
    assert acted_on(d) == acted_on(real.json["data"])


def test_cleanup_dry_run_of_a_complete_task_matches_the_cleanup(lrepo: Path) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    commit(lrepo.parent / "repo.tasks/t1/agents/a1/code", {"f.txt": "f\n"}, "[a1] work")
    for args in (("merge", "t1", "--agent", "a1"), ("approve", "t1", "--changes"), ("complete", "t1")):
        ok(run(lrepo, *args))
    before = snapshot(lrepo)
    dry = ok(run(lrepo, "cleanup", "t1", "--dry-run", "--json")).json
    assert snapshot(lrepo) == before
    assert dry["next"] == ["spark-git cleanup t1"]
    real = ok(run(lrepo, "cleanup", "t1", "--json")).json
    assert acted_on(dry["data"]) == acted_on(real["data"]) and sorted(real["data"]["deleted_branches"]) == ["t1", "task-t1-agent-a1"]


def test_dry_run_refuses_as_the_real_run_would(lrepo: Path) -> None:
    busy_task(lrepo)
    before = snapshot(lrepo)
    r = run(lrepo, "cleanup", "t1", "--dry-run", "--json")  # not COMPLETE
    assert r.returncode == 3 and snapshot(lrepo) == before, r
    r = run(lrepo, "abandon", "t1", "--why", "x", "--dry-run", "--json", session="other")  # not the owner
    assert r.returncode == 3 and snapshot(lrepo) == before, r


def test_doctor_fix_dry_run_lists_what_fix_repairs(lrepo: Path) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1,a2"))
    root = lrepo.parent / "repo.tasks" / "t1"
    shutil.rmtree(root / "agents/a1/code")  # a vanished worktree: --fix re-adds it
    before = snapshot(lrepo)
    dry = ok(run(lrepo, "doctor", "--fix", "--dry-run", "--json")).json
    assert snapshot(lrepo) == before
    assert dry["data"]["dry_run"] is True and dry["next"] == ["spark-git doctor --fix"]
    would = sorted((f["where"], f["kind"]) for f in dry["data"]["findings"] if f["fixable"])
    assert would and not any(f["fixed"] for f in dry["data"]["findings"])
    real = run(lrepo, "doctor", "--fix", "--json").json
    assert sorted((f["where"], f["kind"]) for f in real["data"]["findings"] if f["fixed"]) == would


def test_lock_break_dry_run(lrepo: Path) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    before = snapshot(lrepo)
    dry = ok(run(lrepo, "lock", "break", "t1", "--why", "gone home", "--dry-run", "--json", session="s2")).json
    assert snapshot(lrepo) == before
    d = dry["data"]
    assert (d["dry_run"], d["previous_owner"], d["new_owner"], d["rebuilt"]) == (True, "s1", "s2", False)
    assert dry["next"] == ["spark-git lock break t1 --why 'gone home'"]
    (lrepo.parent / "repo.tasks/t1/task.json").write_text("{corrupt")
    before = snapshot(lrepo)
    d = ok(run(lrepo, "lock", "break", "t1", "--why", "x", "--dry-run", "--json", session="s2")).json["data"]
    assert snapshot(lrepo) == before and d["rebuilt"] is True and d["corrupt_kept_as"]
    real = ok(run(lrepo, "lock", "break", "t1", "--why", "x", "--json", session="s2")).json["data"]
    assert (real["rebuilt"], real["new_owner"], real["noted_on"]) == (True, "s2", d["noted_on"])
    before = snapshot(lrepo)
    ok(run(lrepo, "lock", "main", session="s3"))
    locked = snapshot(lrepo)
    d = ok(run(lrepo, "lock", "break", "main", "--why", "x", "--dry-run", "--json")).json["data"]
    assert snapshot(lrepo) == locked and d["previous_owner"] == "s3" and before != locked
