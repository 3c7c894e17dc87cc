"""`spark-git verify` in a fresh clone (issue 34): a day of landings through the real queue verifies
from git alone (no state directory, no secret); each forgery is caught with its reason, exit 1."""

from __future__ import annotations

from pathlib import Path

from fixtures.repo import commit, git

from spark_git.ops.shared import attest
from tests.verifykit import ATTEST, clone, day, resign, statement, verify


def landings(repo: Path) -> list[str]:
    return git(repo, "log", "--first-parent", "--reverse", "--format=%H", "-3", "main").split()


def test_a_day_of_landings_verifies_in_a_fresh_clone_with_no_state(tmp_path: Path) -> None:
    q = day(tmp_path, 3)
    c = clone(q, tmp_path / "fresh")
    r = verify(c, tmp_path, "--fetch")
    assert r.returncode == 0, r
    d = r.json["data"]
    assert [x["task"] for x in d["commits"] if x["status"] == "landed"] == q.tasks
    assert d["failed"] == 0 and d["before"] == 2  # the initial and the adoption commit
    stmt = statement(c, landings(c)[-1])
    assert stmt["subject"][0]["digest"]["gitCommit"] == landings(c)[-1]
    assert stmt["predicate"]["gates"][0]["passed"] and stmt["predicate"]["approval"]["signer"]
    assert not (tmp_path / "ci-home" / ".local").exists()  # nothing written in the user's state


def test_without_the_notes_fetched_nothing_verifies_and_it_says_fetch(tmp_path: Path) -> None:
    q = day(tmp_path, 1)
    c = clone(q, tmp_path / "fresh")
    r = verify(c, tmp_path)
    assert r.returncode == 2 and r.json["data"]["hint"] == "spark-git verify --fetch", r
    assert git(c, "for-each-ref", "refs/notes/") == ""


def _forged(tmp_path: Path, name: str, q, forge) -> dict:  # type: ignore[no-untyped-def]
    c = clone(q, tmp_path / name)
    git(c, "fetch", "-q", "origin", f"+{ATTEST}:{ATTEST}", "+refs/notes/spark:refs/notes/spark")
    target = forge(c)
    r = verify(c, tmp_path)
    assert r.returncode == 1, r
    bad = [x for x in r.json["data"]["commits"] if x["status"] == "failed"]
    assert [x["sha"] for x in bad] == [target], r
    assert target[:12] in r.json["summary"]
    way = f"git notes --ref={ATTEST} show {target}" if bad[0]["noted"] else f"spark-git accept {target} --why TEXT"
    assert way in r.json["next"], r.json["next"]  # a note that does not verify is looked at, not hidden by an acceptance
    return bad[0]


def test_each_forgery_is_caught_with_its_reason(tmp_path: Path) -> None:
    q = day(tmp_path, 2)

    def direct_push(c: Path) -> str:
        return commit(c, {"evil.txt": "x\n"}, "pushed behind spark-git's back")

    def by_hand(c: Path) -> str:
        sha = direct_push(c)
        git(c, "notes", f"--ref={ATTEST}", "add", "-m", '{"payload": "e30=", "payloadType": "application/vnd.in-toto+json"}', sha)
        return sha

    def copied(c: Path) -> str:
        note = git(c, "notes", f"--ref={ATTEST}", "show", landings(c)[-1])
        sha = direct_push(c)
        git(c, "notes", f"--ref={ATTEST}", "add", "-m", note, sha)
        return sha

    def unlisted(c: Path) -> str:
        sha = landings(c)[-1]
        resign(c, sha, statement(c, sha), attest.lander(tmp_path / "other-machine"))
        return sha

    def other_head(c: Path) -> str:
        first, last = landings(c)[-2], landings(c)[-1]
        stmt = statement(c, last)
        stmt["predicate"]["approval"] = statement(c, first)["predicate"]["approval"]
        stmt["predicate"]["task"] = statement(c, first)["predicate"]["task"]
        resign(c, last, stmt)
        return last

    def other_tree(c: Path) -> str:
        sha = landings(c)[-1]
        stmt = statement(c, sha)
        stmt["predicate"]["gates"][0]["tree"] = git(c, "rev-parse", f"{landings(c)[-2]}^{{tree}}")
        resign(c, sha, stmt)
        return sha

    def failed_gate(c: Path) -> str:
        sha = landings(c)[-1]
        stmt = statement(c, sha)
        stmt["predicate"]["gates"][0]["passed"] = False
        resign(c, sha, stmt)
        return sha

    def rewritten(c: Path) -> str:
        git(c, "commit", "-q", "--amend", "-m", "a rewritten landing")
        return git(c, "rev-parse", "HEAD")

    reasons = {name: _forged(tmp_path, name, q, f)["reason"] for name, f in
               [("direct", direct_push), ("hand", by_hand), ("copied", copied), ("unlisted", unlisted),
                ("other-head", other_head), ("other-tree", other_tree), ("failed-gate", failed_gate), ("rewritten", rewritten)]}
    assert "behind spark-git's back" in reasons["direct"] and "behind spark-git's back" in reasons["rewritten"]
    assert "not a DSSE envelope" in reasons["hand"]
    assert "copied from another commit" in reasons["copied"]
    assert ".spark-landers does not list" in reasons["unlisted"]
    assert "not the approved head" in reasons["other-head"] or "neither the approved head" in reasons["other-head"]
    assert "not on the landed tree" in reasons["other-tree"]
    assert "gate did not pass" in reasons["failed-gate"]


def test_in_process_ssh_signature_check_agrees_with_ssh_keygen(tmp_path: Path) -> None:
    from spark_git.core import sshsig, sshsigverify

    key = sshsig.own_key("h@x", interactive=False, unprotected_ok=True, again="spark-git approve")
    other = attest.lander(tmp_path / "unused")  # a key the approvers do not list
    allowed = f'h@x namespaces="{sshsig.NAMESPACE}" {key.public}\n'
    sig = sshsig.sign(key, b"payload")
    cases = {"valid": (allowed, "h@x", b"payload", sig), "tampered": (allowed, "h@x", b"payloaD", sig),
             "other principal": (allowed, "eve@x", b"payload", sig),
             "unlisted key": (f'h@x namespaces="{sshsig.NAMESPACE}" {other.public}\n', "h@x", b"payload", sig),
             "other namespace": (f'h@x namespaces="git" {key.public}\n', "h@x", b"payload", sig),
             "truncated": (allowed, "h@x", b"payload", sig[: len(sig) // 2] + "\n-----END SSH SIGNATURE-----\n")}
    got = {name: (sshsigverify.verify(a, p, sshsig.NAMESPACE, d, s) is None, sshsig.verify(a, p, d, s) is None) for name, (a, p, d, s) in cases.items()}
    assert got == {name: (name == "valid", name == "valid") for name in cases}, got


def test_the_approval_verifies_by_hand_with_ssh_keygen(tmp_path: Path) -> None:
    """docs/merging.md's `ssh-keygen` steps, run as written in a fresh clone: the human's signature holds."""
    import re
    import subprocess

    doc = (Path(__file__).parent.parent / "docs" / "merging.md").read_text()
    script = re.search(r"### Verifying by hand\n.*?```sh\n(.*?)```", doc, re.S)
    assert script, "docs/merging.md has no `Verifying by hand` shell block"
    q = day(tmp_path, 1)
    c = clone(q, tmp_path / "fresh")
    git(c, "fetch", "-q", "origin", f"+{ATTEST}:{ATTEST}")
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", script.group(1)], cwd=c, capture_output=True, text=True)
    assert r.returncode == 0 and 'Good "spark-git-approval" signature' in r.stdout + r.stderr, r
    head, second = r.stdout.strip().splitlines()[-2:]
    assert head == second == git(c, "rev-parse", "main^2"), r.stdout
