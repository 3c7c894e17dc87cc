"""Approvals are the human's SSH signatures (issue 23): `approve` signs with the human's key (created
once in the state directory when none is configured), `complete` and `doctor` verify it; a
hand-written, edited or foreign-signed approval lands nothing, and `doctor`/`audit` say so."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

from fixtures.modelserver.core import require_binary
from fixtures.repo import git, share_records_key, spark_argv

from tests.mergekit import PY, Task, config
from tests.ptyutil import answer_on_pty

OK_GATE = [PY, "-c", "pass"]


def _ready(tmp_path: Path, **cfg) -> Task:
    t = Task(tmp_path, ["a1"], config(build=OK_GATE, **cfg))
    t.commit("a1", {"feature.txt": "v1\n"}, "[a1] feature")
    assert t.merge("a1").returncode == 0
    return t


def _state() -> Path:
    return Path(os.environ["XDG_STATE_HOME"]) / "spark-git"


def _refused(t: Task, needle: str) -> None:
    main = git(t.repo, "rev-parse", "refs/heads/main")
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 3, r
    assert any(needle in u for u in r.json["data"]["unmet"]), r.json["data"]["unmet"]
    assert "spark-git approve t1 --changes" in r.json["next"]
    assert git(t.repo, "rev-parse", "refs/heads/main") == main


def test_approve_signs_with_a_key_it_creates_once_and_complete_verifies(tmp_path: Path) -> None:
    t = _ready(tmp_path, non_interactive=True)
    key = _state() / "approval_ed25519"
    assert not key.exists()
    r = t.spark("--json", "approve", "t1", "--changes")
    assert r.returncode == 0, r
    d = r.json["data"]
    assert d["key_created"] and d["signed_with"] == str(key) and d["allowed_signers"] == str(_state() / "allowed_signers")
    assert str(key) in r.json["summary"]  # says where
    cp, head = t.task_json()["checkpoint"], t.head()
    rec = json.loads(cp["signed"])
    assert rec["commit"] == head and rec["tree"] == git(t.repo, "rev-parse", f"{head}^{{tree}}") and rec["base"] == "refs/heads/main"
    assert rec["patch_id"] == cp["patch_id"] and rec["base_commit"] == git(t.repo, "rev-parse", "refs/heads/main") and rec["task"] == "t1"
    # git's own tool agrees: the signature verifies against the recorded approvers
    (tmp_path / "sig").write_text(cp["signature"])
    v = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(_state() / "allowed_signers"), "-I", rec["signer"], "-n", "spark-git-approval",
                        "-s", str(tmp_path / "sig")], input=cp["signed"].encode(), capture_output=True)
    assert v.returncode == 0, v.stderr
    signers = (_state() / "allowed_signers").read_text()
    again = t.spark("--json", "approve", "t1", "--changes")  # the same head, validly signed: nothing is recorded twice
    assert again.returncode == 3 and "already approved" in again.json["summary"], again
    assert (_state() / "allowed_signers").read_text() == signers and len(signers.splitlines()) == 1  # one key per user, recorded once
    assert t.spark("--json", "complete", "t1").returncode == 0
    assert git(t.repo, "rev-parse", "refs/heads/main^2") == head  # the landing merge's second parent


def test_the_terminal_path_signs_with_the_same_typing(tmp_path: Path) -> None:
    t = _ready(tmp_path)
    rc, out = answer_on_pty(t.repo, ["approve", "t1", "--changes"], b"t1\n")
    assert rc == 0, out
    cp = t.task_json()["checkpoint"]
    assert cp["via"] == "terminal" and cp["signature"].startswith("-----BEGIN SSH SIGNATURE-----")
    assert t.spark("--json", "complete", "t1").returncode == 0


def test_a_hand_written_approval_lands_nothing_and_doctor_and_audit_report_it(tmp_path: Path) -> None:
    # fails before: a checkpoint written into task.json landed the task, doctor and audit saw nothing
    t = _ready(tmp_path, non_interactive=True)
    tj = t.task_json()
    tj["checkpoint"] = {"type": "changes", "commit_sha": t.head(), "approved": True, "approved_by": "human", "presented_at": "2026-01-01T00:00:00Z",
                        "approved_at": "2026-01-01T00:00:01Z"}
    (t.root / "task.json").write_text(json.dumps(tj))
    _refused(t, "not signed")
    doc = t.spark("--json", "doctor", "t1").json["data"]
    found = [f for f in doc["findings"] if f["kind"] == "approval-invalid"]
    assert len(found) == 1 and "not signed" in found[0]["problem"] and found[0]["broken"], doc["findings"]
    smells = t.spark("--json", "audit", "t1").json["data"]["smells"]
    assert any("does not count" in s and "not signed" in s for s in smells), smells
    assert any("no `approved` event" in s for s in smells), smells


def test_an_edited_signed_record_does_not_verify(tmp_path: Path) -> None:
    t = _ready(tmp_path, non_interactive=True)
    first = t.head()
    assert t.spark("approve", "t1", "--changes").returncode == 0
    t.commit("a1", {"feature.txt": "v2, not approved\n"}, "[a1] later")
    assert t.merge("a1").returncode == 0
    tj = t.task_json()
    tj["checkpoint"]["signed"] = tj["checkpoint"]["signed"].replace(first, t.head())  # the record moved onto the new head
    tj["checkpoint"]["commit_sha"] = t.head()
    (t.root / "task.json").write_text(json.dumps(tj))
    _refused(t, "signature does not verify")
    kinds = [f["kind"] for f in t.spark("--json", "doctor", "t1").json["data"]["findings"]]
    assert "approval-invalid" in kinds


def test_an_agent_approving_through_script_lands_nothing(tmp_path: Path) -> None:
    """Issue 23's autonomous landing: the agent commits a break, merges it with the owner's session and
    approves through `script -qec` (stdin is a terminal). Its sandbox keeps the human's state directory
    out of reach, so what it signs is signed with a key of its own: not an allowed approver."""
    final = [PY, "-c", "import sys; sys.exit('broken' in open('src/app.py').read())"]  # main's tests
    t = Task(tmp_path, ["a1"], config(build=OK_GATE, final=final))
    t.commit("a1", {"src/app.py": "raise SystemExit('broken')\n"}, "[a1] refactor")
    assert t.merge("a1").returncode == 0
    agent_env = dict(os.environ, SPARK_SESSION_ID="s1", XDG_STATE_HOME=str(tmp_path / "agent-state"))
    share_records_key(tmp_path / "agent-state")  # about the approval key: the records' MAC would refuse it earlier

    def script_approve(cwd: Path) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["script", "-qec", shlex.join(spark_argv("approve", "t1", "--changes")), "/dev/null"], input=b"t1\n", cwd=cwd,
                              env=agent_env, capture_output=True, timeout=120)

    r = script_approve(t.wt("a1"))  # from its worktree: the identity guard refuses it
    assert r.returncode == 3 and t.task_json()["checkpoint"] is None, r
    r = script_approve(t.repo)  # from the main worktree, unseen by the guard: isatty() is fooled, the key is its own
    assert r.returncode == 0 and t.task_json()["checkpoint"]["via"] == "terminal", r
    assert (tmp_path / "agent-state" / "spark-git" / "approval_ed25519").is_file()
    _refused(t, "signature does not verify")  # the human's complete: the agent's key is nobody's approver here
    assert "broken" not in git(t.repo, "show", "refs/heads/main:src/app.py")


def _key(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return " ".join(path.with_name(path.name + ".pub").read_text().split()[:2])


def test_the_team_file_is_read_from_the_base_branch_never_from_a_worktree(tmp_path: Path) -> None:
    human, agent = tmp_path / "human_key", tmp_path / "agent_key"
    team = f'human@example.invalid namespaces="spark-git-approval" {_key(human)}\n'
    forged = f'human@example.invalid namespaces="spark-git-approval" {_key(agent)}\n'
    cfg = config(build=OK_GATE).replace("[gates]", '[approval]\nallow_non_interactive = true\nallowed_signers = ".approvers"\n[gates]')
    t = Task(tmp_path, ["a1"], cfg, files={"README.md": "# demo\n", ".approvers": team})
    t.commit("a1", {"feature.txt": "v1\n"}, "[a1] feature")
    assert t.merge("a1").returncode == 0
    for k, v in (("gpg.format", "ssh"), ("user.signingkey", str(human)), ("user.email", "human@example.invalid")):
        git(t.repo, "config", k, v)
    # the agent signs as "human@example.invalid" with its own key and names that key in the main worktree's copy
    share_records_key(tmp_path / "agent-state")  # about the approval key: the records' MAC would refuse it earlier
    as_agent = {"XDG_STATE_HOME": str(tmp_path / "agent-state"), "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.signingkey",
                "GIT_CONFIG_VALUE_0": str(agent)}
    r = subprocess.run(spark_argv("approve", "t1", "--changes"), cwd=t.repo, env={**os.environ, "SPARK_SESSION_ID": "s1", **as_agent},
                       capture_output=True, text=True, timeout=120)  # not t.spark: the hints check would judge it in the human's environment
    assert r.returncode == 0, r.stderr
    (t.repo / ".approvers").write_text(team + forged)
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 3 and any("signature does not verify" in u for u in r.json["data"]["unmet"]), r
    git(t.repo, "checkout", "--", ".approvers")
    assert t.spark("approve", "t1", "--changes").returncode == 0
    (_state() / "allowed_signers").unlink()  # another machine: only the committed team file names the human
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 0, r
    assert git(t.repo, "rev-parse", "refs/heads/main^2") == t.head()


def test_approve_and_status_say_when_no_sandbox_keeps_agents_from_the_key(tmp_path: Path) -> None:
    t = _ready(tmp_path, non_interactive=True)
    assert t.spark("--json", "status").json["data"]["warnings"] == []  # Claude Code, bwrap on PATH: guarded
    (t.repo / ".codex").mkdir()  # this repository's agents run in Codex CLI too: spark-git sandboxes none of them
    r = t.spark("--json", "approve", "t1", "--changes")
    assert r.returncode == 0, r
    said = r.json["data"]["unguarded"]
    assert len(said) == 1 and said[0].startswith("Codex") and str(_state()) in said[0] and "NOT GUARANTEED" in r.json["summary"]
    assert said[0] in t.spark("--json", "status").json["data"]["warnings"]


def test_status_says_gemini_is_boxed_only_when_spark_git_starts_it(tmp_path: Path) -> None:
    """Gemini CLI has no sandbox of its own: `agent run` boxes it where bubblewrap is (ops/life/agentbox.py),
    a session started by hand is not; without bubblewrap no session is."""
    require_binary("bwrap")
    t = _ready(tmp_path, non_interactive=True)
    (t.repo / ".gemini").mkdir()
    boxed = [w for w in t.spark("--json", "status").json["data"]["warnings"] if w.startswith("Gemini CLI")]
    assert len(boxed) == 1 and "`spark-git agent run` starts run in bubblewrap" in boxed[0] and "started by hand" in boxed[0], boxed
    bare = [w for w in t.spark("--json", "status", env={"SPARK_BWRAP": ""}).json["data"]["warnings"] if w.startswith("Gemini CLI")]
    assert len(bare) == 1 and "agent run" not in bare[0] and str(_state()) in bare[0], bare


def test_doctor_reports_an_archive_ref_the_audit_trail_names_that_is_gone(tmp_path: Path) -> None:
    # fails before: `update-ref -d refs/spark/archive/…` destroyed archived work and doctor said nothing
    t = Task(tmp_path, ["a1"], config(build=OK_GATE))
    t.commit("a1", {"unmerged.txt": "work\n"}, "[a1] work nobody merged")
    r = t.spark("--json", "abandon", "t1", "--why", "stopped")
    assert r.returncode == 0, r
    refs = [a["ref"] for a in r.json["data"]["archived"]]
    assert refs, r.json["data"]
    assert not [f for f in t.spark("--json", "doctor").json["data"]["findings"] if f["kind"] == "archive-ref-missing"]
    git(t.repo, "update-ref", "-m", "x", "-d", refs[0])
    found = [f for f in t.spark("--json", "doctor").json["data"]["findings"] if f["kind"] == "archive-ref-missing"]
    assert [f["details"]["ref"] for f in found] == [refs[0]] and found[0]["where"] == "t1" and found[0]["broken"], found


def test_no_approval_key_or_approver_inside_the_repository(tmp_path: Path, monkeypatch) -> None:
    t = _ready(tmp_path, non_interactive=True)
    share_records_key(tmp_path / "outside")  # the same user's records key: only the approval key and approvers are new
    inside = t.repo / ".git" / "state"  # XDG_STATE_HOME where an agent could read and write
    monkeypatch.setenv("XDG_STATE_HOME", str(inside))
    r = t.spark("--json", "approve", "t1", "--changes")
    assert r.returncode == 3 and "inside the repository" in r.json["summary"] and t.task_json()["checkpoint"] is None, r
    assert not inside.exists()
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "outside"))
    assert t.spark("approve", "t1", "--changes").returncode == 0
    (inside / "spark-git").mkdir(parents=True)
    (inside / "spark-git" / "allowed_signers").write_text((tmp_path / "outside" / "spark-git" / "allowed_signers").read_text())
    monkeypatch.setenv("XDG_STATE_HOME", str(inside))  # the approvers copied inside count for nothing
    _refused(t, "signature does not verify")
