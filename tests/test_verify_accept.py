"""A base branch moved behind spark-git's back (issue 34, item 4): `doctor` names the commit with the two
ways out; `spark-git accept` records the human's signed decision, which `verify` then shows as accepted,
in this repo and in a fresh clone; an acceptance that would not verify is refused, nothing written."""

from __future__ import annotations

from pathlib import Path

from fixtures.repo import commit, git

from tests.verifykit import ATTEST, clone, day, verify


def _refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)")


def test_doctor_names_a_direct_update_of_main_and_accept_records_the_humans_decision(tmp_path: Path) -> None:
    q = day(tmp_path, 2)
    landed = git(q.repo, "rev-parse", "main")
    tree = git(q.repo, "rev-parse", "main^{tree}")
    pushed = git(q.repo, "commit-tree", tree, "-p", landed, "-m", "hotfix straight onto main")
    git(q.repo, "update-ref", "refs/heads/main", pushed, landed)  # behind spark-git's back
    git(q.repo, "reset", "-q", "--hard", "main")

    r = q.spark("t0", "--json", "doctor")
    assert r.returncode == 1 and r.json["status"] == "FAIL", r
    found = [f for f in r.json["data"]["findings"] if f["kind"] == "base-unattested"]
    assert [f["details"]["commits"] for f in found] == [[pushed]], r.json["data"]["findings"]
    assert pushed[:12] in found[0]["problem"] and "revert it through a task" in found[0]["repair"]
    assert f"spark-git accept {pushed} --why TEXT" in r.json["next"], r.json["next"]
    v = verify(q.repo, tmp_path)
    assert v.returncode == 1 and v.json["data"]["failed"] == 1 and pushed[:12] in v.json["summary"], v

    a = q.spark("t0", "--json", "accept", pushed, "--why", "the on-call hotfix, reviewed in the incident")
    assert a.returncode == 0 and a.json["data"]["commit"] == pushed, a
    v = verify(q.repo, tmp_path)
    assert v.returncode == 0, v
    mine = next(c for c in v.json["data"]["commits"] if c["sha"] == pushed)
    assert mine["status"] == "accepted" and "the on-call hotfix" in mine["reason"], mine
    assert v.json["data"]["accepted"] == 1 and v.json["data"]["landed"] == 2
    r = q.spark("t0", "--json", "doctor")
    assert not [f for f in r.json["data"]["findings"] if f["kind"] == "base-unattested"], r

    c = clone(q, tmp_path / "fresh")  # the decision travels with the notes
    v = verify(c, tmp_path, "--fetch")
    assert v.returncode == 0 and v.json["data"]["accepted"] == 1, v


def test_an_acceptance_that_would_not_verify_or_is_not_needed_writes_nothing(tmp_path: Path) -> None:
    q = day(tmp_path, 1)
    landed = git(q.repo, "rev-parse", "main")
    before = _refs(q.repo)
    r = q.spark("t0", "--json", "accept", landed, "--why", "x")  # a landing verifies already
    assert r.returncode == 2 and "verifies already" in r.json["summary"], r
    r = q.spark("t0", "--json", "accept", "main~5", "--why", "x")
    assert r.returncode == 2, r
    r = q.spark("t0", "--json", "accept", landed, "--why", " ")
    assert r.returncode == 2 and r.json["next"], r
    assert _refs(q.repo) == before

    (q.repo / ".spark" / "approvers").write_text("")  # no approver listed at the next commit's parent
    git(q.repo, "commit", "-qam", "approvers emptied behind spark-git's back")
    pushed = commit(q.repo, {"x.txt": "x\n"}, "and a commit on top")
    before = _refs(q.repo)
    r = q.spark("t0", "--json", "accept", pushed, "--why", "keep it")
    assert r.returncode == 3 and "would not verify" in r.json["summary"] and r.json["next"], r
    assert _refs(q.repo) == before and git(q.repo, "notes", f"--ref={ATTEST}", "list", pushed, check=False) == ""


def test_verify_since_checks_every_commit_after_the_adoption(tmp_path: Path) -> None:
    """Without `[verify] since` a commit between the adoption and the first landing is listed as from
    before adoption; with it (set by a commit the human accepts) it fails like any direct push."""
    from tests.queuekit import Queue
    from tests.verifykit import adopt

    q = Queue(tmp_path, 1)
    adopted = adopt(q)
    early = commit(q.repo, {"early.txt": "x\n"}, "pushed before the first landing")
    assert q.spark("t0", "complete", "t0").returncode == 0
    r = verify(q.repo, tmp_path)
    assert r.returncode == 0 and {c["sha"]: c["status"] for c in r.json["data"]["commits"]}[early] == "before", r

    cfg = (q.repo / ".spark-git.toml").read_text() + f'[verify]\nsince = "{adopted}"\n'
    since = commit(q.repo, {".spark-git.toml": cfg}, "verify every commit after the adoption")
    assert q.spark("t0", "--json", "accept", since, "--why", "sets [verify] since").returncode == 0
    r = verify(q.repo, tmp_path)
    assert r.returncode == 1 and r.json["data"]["range"] == f"{adopted}..refs/heads/main", r
    got = {c["sha"]: c["status"] for c in r.json["data"]["commits"]}
    assert got[early] == "failed" and got[since] == "accepted" and r.json["data"]["landed"] == 1, got
