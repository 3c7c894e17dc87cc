"""Issue 31 item 5: the records that decide carry a MAC no agent can compute (the user's records key in
the spark-git state directory). A task.json whose walk was rewritten with a recomputed sha256 chain,
and a status.json written for another agent, are refused by the commands that rely on them and
reported by doctor. Checked on disk and in git."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path

from fixtures.repo import git, make_repo, sealed_env, spark

from tests.hookutil import event, hook
from tests.protokit import FULL_CONFIG, REQUIREMENTS, P

WALK = ["REQUIREMENTS", "SYNTHESIS", "IMPLEMENTATION"]  # the plan approval skipped
A, B = "a-updater", "b-updater"
CONFIG = FULL_CONFIG + f"""[risk]
replace = ["agents"]
[risk.agents]
HIGH = ["{A}", "{B}"]
MEDIUM = ["{A}", "{B}"]
LOW = ["{A}", "{B}"]
"""


def _chain_hash(prev: str, entry: dict) -> str:
    """state/chain.py's unkeyed hash, as anyone can compute it."""
    body = {k: v for k, v in entry.items() if k not in ("hash", "mac") and v is not None}
    return hashlib.sha256(f"{prev}\n{json.dumps(body, sort_keys=True, separators=(',', ':'), ensure_ascii=False)}".encode()).hexdigest()


def _forge_walk(p: P) -> None:
    """Rewrites task.json: the real start (INIT, CLASSIFIED), then a walk to IMPLEMENTATION nobody made,
    the hash chain recomputed over the whole log."""
    path = p.root / "task.json"
    tj = json.loads(path.read_text())
    log, prev_state = tj["transition_log"][:2], "CLASSIFIED"
    assert [e["to"] for e in log] == ["INIT", "CLASSIFIED"]
    for to in WALK:
        log.append({"from": prev_state, "to": to, "at": "2026-01-01T12:00:00.000000Z", "session_id": "s1", "reason": "spark-git advance", "evidence": {}})
        prev_state = to
    prev = ""
    for e in log:  # the real entries keep their hashes and MACs: their bodies are unchanged
        e["hash"] = _chain_hash(prev, e)
        prev = e["hash"]
    tj.update(transition_log=log, state="IMPLEMENTATION")
    path.write_text(json.dumps(tj, indent=2))


def _classified(tmp_path: Path, task: str = "t1", repo: Path | None = None) -> P:
    p = P(tmp_path, task, config=CONFIG, repo=repo)
    p.ok("classify", task, "--files", "src/app.py")
    p.go()
    assert p.state() == "CLASSIFIED"
    return p


def _doctor(p: P, *args: str) -> list[dict]:
    return p.spark("--json", "doctor", p.task, *args).json["data"]["findings"]


def _refs(p: P) -> str:
    return git(p.repo, "for-each-ref", "--format=%(objectname) %(refname)")


def test_a_forged_walk_is_refused_by_merge_and_advance_and_reported_by_doctor(tmp_path: Path) -> None:
    # fails before: the rewritten walk fit the sha256 chain, and merge landed the agent's commit on the task branch
    p = _classified(tmp_path)
    _forge_walk(p)
    p.commit(A, {"src/app.py": "print('unplanned')\n"}, "work nobody planned")
    forged, refs = (p.root / "task.json").read_bytes(), _refs(p)
    r = p.spark("--json", "merge", p.task, "--agent", A)
    assert r.returncode == 3, r
    assert "does not carry spark-git's MAC" in r.json["summary"] and "spark-git doctor t1" in r.json["next"], r.json
    assert _refs(p) == refs and (p.root / "task.json").read_bytes() == forged  # the task branch did not move; nothing rewritten
    assert "unplanned" not in git(p.repo, "show", "t1:src/app.py")
    r = p.advance("VALIDATION")
    assert r.returncode == 3 and "does not carry spark-git's MAC" in r.json["summary"], r
    assert p.state() == "IMPLEMENTATION" and (p.root / "task.json").read_bytes() == forged
    main = git(p.repo, "rev-parse", "refs/heads/main")
    r = p.spark("--json", "complete", p.task)
    assert r.returncode == 3 and "does not carry spark-git's MAC" in r.json["summary"] and git(p.repo, "rev-parse", "refs/heads/main") == main, r
    found = [f for f in _doctor(p) if f["kind"] == "transitions-forged"]
    assert len(found) == 1 and "entry 2 (CLASSIFIED → REQUIREMENTS" in found[0]["problem"] and found[0]["broken"], found
    assert "spark-git abandon t1" in found[0]["repair"]


def test_a_walk_copied_from_another_task_does_not_verify(tmp_path: Path) -> None:
    """The MAC names the task: a genuine log of t2, further along, copied into t1, is refused."""
    p = P(tmp_path, config=CONFIG)
    q = _classified(tmp_path, "t2", repo=p.repo)
    theirs = json.loads((q.root / "task.json").read_text())
    tj = json.loads((p.root / "task.json").read_text())
    tj.update(transition_log=theirs["transition_log"], state=theirs["state"])
    (p.root / "task.json").write_text(json.dumps(tj, indent=2))
    r = p.advance()
    assert r.returncode == 3 and "entry 0 (None → INIT" in r.json["summary"] and "MAC" in r.json["summary"], r
    assert q.state() == "CLASSIFIED" and q.advance().json["summary"].count("MAC") == 0  # t2's own log still verifies


def _at_requirements(tmp_path: Path) -> P:
    p = _classified(tmp_path)
    p.go()
    assert p.state() == "REQUIREMENTS"
    for a in (A, B):
        p.requirements(a, REQUIREMENTS)
    p.report(A)
    return p


def test_another_agents_report_is_refused_and_reported(tmp_path: Path) -> None:
    # fails before: agent a wrote b's status.json (its own report, renamed) and advance took it as b's
    p = _at_requirements(tmp_path)
    mine = json.loads(p.status_file("a-updater").read_text())
    p.status_file("b-updater").write_text(json.dumps({**mine, "agent": "b-updater"}))  # from a's shell: the file is all it takes
    before = p.snapshot()
    r = p.advance()
    assert r.returncode == 3, r
    assert any(u.startswith("agent b-updater has no report that counts") and "does not carry spark-git's MAC" in u
               and "spark-git report t1 --agent b-updater" in u for u in r.json["data"]["unmet"]), r.json["data"]["unmet"]
    assert p.state() == "REQUIREMENTS" and p.snapshot() == before
    doc = _doctor(p)
    found = [f for f in doc if f["kind"] == "report-forged"]
    assert len(found) == 1 and found[0]["details"]["agent"] == "b-updater" and "spark-git report t1 --agent b-updater" in found[0]["repair"], doc
    assert not [f for f in doc if f["kind"] == "report-forged" and f["details"]["agent"] == "a-updater"]
    p.report("b-updater")  # b reports for itself: its own report replaces the forged one
    assert p.go()["to"] == "SYNTHESIS"


def test_a_hand_written_report_is_refused_and_doctor_fix_sets_it_aside(tmp_path: Path) -> None:
    p = _at_requirements(tmp_path)
    forged = {"agent": "b-updater", "task": "t1", "status": "COMPLETE", "updated_at": "2026-01-01T12:00:00.000000Z"}
    p.status_file("b-updater").write_text(json.dumps(forged))
    assert p.advance().returncode == 3 and p.state() == "REQUIREMENTS"
    found = _doctor(p, "--fix")
    assert any(f["kind"] == "report-forged" and f["fixed"] for f in found), found
    aside = list(p.status_file("b-updater").parent.glob("status.json.forged-*"))
    assert len(aside) == 1 and json.loads(aside[0].read_text()) == forged  # kept, not deleted
    assert json.loads(p.status_file("b-updater").read_text())["status"] == "NEW"
    assert not [f for f in _doctor(p) if f["kind"] == "report-forged"]  # the fresh one verifies


def test_the_records_key_is_refused_to_an_agent_by_the_hook(tmp_path: Path) -> None:
    """The key lives beside the approval and verdict keys: the hook refuses it to an agent's shell and
    file tools (the boxes hide the whole directory: tests/test_agent_box.py)."""
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="owner")
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    assert spark(repo, "start", "t1", "--agents", "a1", env=env).returncode == 0
    key = Path(env["XDG_STATE_HOME"]) / "spark-git" / "records.key"
    assert key.is_file() and stat.S_IMODE(key.stat().st_mode) == 0o600  # made by start, for the first transition's MAC
    a1 = tmp_path / "repo.tasks" / "t1" / "agents" / "a1" / "code"
    agent = {**env, "SPARK_SESSION_ID": ""}
    for ev in (event(a1, "Bash", command=f"cat {key}"), event(a1, "Bash", command="cat $XDG_STATE_HOME/spark-git/records.key"),
               event(a1, "Write", file_path=str(key), content="00\n")):  # Read: Claude Code's permission rules (sandbox.py)
        r = hook(ev, agent)
        assert r.returncode == 2 and "spark-git state directory" in r.stderr, (ev["tool_input"], r)
