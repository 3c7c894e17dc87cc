"""`spark-git verify` on bad input (issue 34, item 6): corrupt or truncated notes, an approval by a key
nobody listed, a rewritten and force-pushed base, a range with no landing, a shallow clone. Each has a
clear message and its exit code, and verify writes nothing: no ref moves, no state directory appears."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fixtures.repo import Run, commit, git

from spark_git.core import sshsig
from tests.verifykit import ATTEST, Queue, clone, day, resign, statement, verify


@pytest.fixture
def q(tmp_path: Path) -> Queue:
    return day(tmp_path / "day", 2)  # per test: the lander's key is in this test's sealed state directory


def _refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)") + git(repo, "rev-parse", "HEAD")


def _fetched(q: Queue, dest: Path) -> Path:
    c = clone(q, dest)
    git(c, "fetch", "-q", "origin", f"+{ATTEST}:{ATTEST}", "+refs/notes/spark:refs/notes/spark")
    return c


def _unchanged(c: Path, tmp: Path, *args: str) -> Run:
    before = _refs(c)
    r = verify(c, tmp, *args)
    assert _refs(c) == before, r
    assert not (tmp / "ci-home" / ".local").exists()  # no state directory, no key made
    return r


def _last(c: Path) -> str:
    return git(c, "rev-parse", "main")


def _failed(r: Run) -> dict[str, str]:
    assert r.returncode == 1 and r.json["status"] == "FAIL", r
    return {x["sha"]: x["reason"] for x in r.json["data"]["commits"] if x["status"] == "failed"}


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty-signature", "bad-base64"])
def test_a_corrupt_or_truncated_note_fails_its_commit_with_the_reason(q: Queue, tmp_path: Path, damage: str) -> None:
    c = _fetched(q, tmp_path / "c")
    note = git(c, "notes", f"--ref={ATTEST}", "show", _last(c))
    bad = {"garbage": "\x01\x02 not json {", "truncated": note[: len(note) // 2],
           "empty-signature": json.dumps({**json.loads(note), "signatures": [{**json.loads(note)["signatures"][0], "sig": ""}]}),
           "bad-base64": note.replace('"payload": "', '"payload": "!!', 1)}[damage]
    git(c, "notes", f"--ref={ATTEST}", "add", "-f", "-m", bad, _last(c))
    reasons = _failed(_unchanged(c, tmp_path))
    assert list(reasons) == [_last(c)], reasons
    assert "not a DSSE envelope" in reasons[_last(c)] or "does not verify" in reasons[_last(c)], reasons


def test_an_approval_signed_by_a_key_nobody_listed_fails(q: Queue, tmp_path: Path) -> None:
    c = _fetched(q, tmp_path / "c")
    key = tmp_path / "eve"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    stmt = statement(c, _last(c))
    rec = stmt["predicate"]["approval"]["record"]
    stmt["predicate"]["approval"]["signature"] = sshsig.sign(sshsig.Key(key, key.with_suffix(".pub").read_text().strip()), rec.encode())
    resign(c, _last(c), stmt)  # the real lander signs it: only the approval is foreign
    reasons = _failed(_unchanged(c, tmp_path))
    assert "not an allowed signer" in reasons[_last(c)], reasons


def test_a_rewritten_and_force_pushed_base_names_the_landing_it_rewrote(q: Queue, tmp_path: Path) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(q.repo), str(origin))
    git(origin, "fetch", "-q", str(q.repo), f"+{ATTEST}:{ATTEST}", "+refs/notes/spark:refs/notes/spark")
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", str(origin), str(ci))
    dev = tmp_path / "dev"
    git(tmp_path, "clone", "-q", str(origin), str(dev))
    old = _last(dev)
    git(dev, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--amend", "-m", "a landing, reworded")
    git(dev, "push", "-q", "--force", "origin", "main")
    new = _last(dev)
    heads = git(ci, "for-each-ref", "refs/heads/")
    reasons = _failed(verify(ci, tmp_path, "--fetch"))  # it fetches (its job), and writes nothing else
    assert git(ci, "for-each-ref", "refs/heads/") == heads and not (tmp_path / "ci-home" / ".local").exists()
    assert list(reasons) == [new] and f"rewrites the attested landing {old[:12]}" in reasons[new], reasons
    assert git(ci, "rev-parse", "refs/remotes/origin/main") == new  # --fetch verified the remote's base


def test_a_range_with_no_landing_is_refused_not_failed(q: Queue, tmp_path: Path) -> None:
    c = _fetched(q, tmp_path / "c")
    for rng in ("main~3..main~2", "main..main"):  # the adoption commit only; nothing
        r = _unchanged(c, tmp_path, rng)
        assert r.returncode == 2 and r.json["next"], r
    assert "no landing attestation in main~3..main~2" in verify(c, tmp_path, "main~3..main~2").json["summary"]
    r = _unchanged(c, tmp_path, "nosuch..main")
    assert r.returncode == 2 and "cannot read the range" in r.json["summary"], r


def test_a_shallow_clone_is_refused_before_anything_is_fetched(q: Queue, tmp_path: Path) -> None:
    c = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{q.repo}", str(c))
    for args in ((), ("--fetch",)):
        r = _unchanged(c, tmp_path, *args)
        assert r.returncode == 2 and "shallow clone" in r.json["summary"] and "git fetch --unshallow" in r.json["next"], r
    assert git(c, "for-each-ref", "refs/notes/") == ""


def test_a_note_holding_log_separators_cannot_hide_a_direct_push(q: Queue, tmp_path: Path) -> None:
    """Fails before: notes were read through `git log --format=…%N` split on \\x1e/\\x1f, so a note with
    a \\x1f on a direct push dropped that commit from the line and verify passed (exit 0)."""
    c = _fetched(q, tmp_path / "c")
    pushed = commit(c, {"evil.txt": "x\n"}, "pushed behind spark-git's back")
    git(c, "notes", f"--ref={ATTEST}", "add", "-m", "x\x1fy\x1ez", pushed)
    reasons = _failed(_unchanged(c, tmp_path))
    assert list(reasons) == [pushed] and "not a DSSE envelope" in reasons[pushed], reasons
