"""`spark-git ci github|gitlab` (issue 34, item 3): the job is printed or written, never over another; and
what it runs works: over a bare remote in remote mode, a landing pushed by spark-git (its attestation in
the same push as main) verifies in a fresh clone with the job's exact command, and a direct push to the
remote's main then fails that command with exit 1, naming the commit."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from fixtures.repo import Run, commit, git, make_repo, spark
from fixtures.servers import bare, machine, seed

from spark_git.core.paths import state_dir
from spark_git.ops.shared import attest
from tests.mergekit import config
from tests.queuekit import CULPRIT_GATE
from tests.verifykit import ATTEST, no_state_env

CONFIG = config(final=CULPRIT_GATE, non_interactive=True).replace("[approval]\n", '[approval]\nallowed_signers = ".spark/approvers"\n')


def _command(text: str) -> list[str]:
    """The job's `spark-git …` line, as the forge's shell would split it."""
    lines = [ln.strip().removeprefix("- ").removeprefix("run: ") for ln in text.splitlines()]
    found = [ln for ln in lines if ln.startswith("spark-git ")]
    assert len(found) == 1, text
    return shlex.split(found[0])


def _run_job(url: str, tmp: Path, name: str, job: list[str]) -> Run:
    """The job in a fresh full clone of the remote, as the forge runs it: no state directory, no key."""
    c = tmp / name
    git(tmp, "clone", "-q", url, str(c))
    assert job[0] == "spark-git"
    return spark(c, *job[1:], "--json", env=no_state_env(tmp))


def test_print_or_write_and_never_over_another_job(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n"}, config=CONFIG)
    r = spark(repo, "--json", "ci", "github")
    assert r.returncode == 0 and r.json["data"]["written"] == "printed" and not (repo / ".github").exists(), r
    assert "branches: [main]" in r.json["data"]["text"] and "fetch-depth: 0" in r.json["data"]["text"]
    assert _command(r.json["data"]["text"]) == ["spark-git", "verify", "--fetch"]
    for _ in range(2):
        w = spark(repo, "--json", "ci", "github", "--write")
    assert w.json["data"]["written"] == "unchanged" and (repo / ".github/workflows/spark-verify.yml").read_text() == r.json["data"]["text"], w
    (repo / ".gitlab-ci.yml").write_text("test:\n  script:\n    - make test\n")
    g = spark(repo, "--json", "ci", "gitlab", "--write")
    assert g.returncode == 0 and g.json["data"]["written"] == "appended", g
    text = (repo / ".gitlab-ci.yml").read_text()
    assert text.startswith("test:\n  script:\n    - make test\n") and _command(text) == ["spark-git", "verify", "--fetch"]
    (repo / ".gitlab-ci.yml").write_text("spark-verify:\n  script: [echo mine]\n")
    before = (repo / ".gitlab-ci.yml").read_bytes()
    bad = spark(repo, "--json", "ci", "gitlab", "--write")
    assert bad.returncode == 2 and bad.json["next"] and (repo / ".gitlab-ci.yml").read_bytes() == before, bad
    assert spark(repo, "--json", "ci", "bitbucket").returncode == 2


def _adopted_machine(tmp: Path) -> tuple[str, Path]:
    """A bare remote, one machine in remote mode with task t0 approved, approvers and landers pushed."""
    url = f"file://{bare(tmp)}"
    seed(tmp, url, {"README.md": "# shared\n"}, config=CONFIG)
    m = machine(tmp, url, "m0")
    env = {**os.environ, "SPARK_SESSION_ID": "s-t0"}
    assert spark(m, "start", "t0", "--agents", "", env=env).returncode == 0
    commit(tmp / "m0.tasks" / "t0" / "code", {"t0.txt": "t0\n"}, "t0: work")
    assert spark(m, "approve", "t0", "--changes", env=env).returncode == 0
    (m / ".spark").mkdir()
    (m / ".spark" / "approvers").write_text((state_dir() / "allowed_signers").read_text())
    (m / ".spark" / attest.LANDERS_FILE).write_text(attest.landers_line("m0@test", attest.lander().public) + "\n")
    git(m, "add", ".spark")
    git(m, "commit", "-q", "-m", "adopt spark-git: approvers and landers")
    git(m, "push", "-q", "origin", "main")
    return url, m


def test_the_jobs_command_passes_a_landing_and_fails_a_direct_push(tmp_path: Path) -> None:
    url, m = _adopted_machine(tmp_path)
    r = spark(m, "--json", "complete", "t0", env={**os.environ, "SPARK_SESSION_ID": "s-t0"})
    assert r.returncode == 0, r
    landed = git(m, "ls-remote", "origin", "refs/heads/main").split()[0]
    assert git(m, "ls-remote", "origin", ATTEST), "the attestation went out with main"
    for forge in ("github", "gitlab"):
        job = _command(spark(m, "--json", "ci", forge).json["data"]["text"])
        ok = _run_job(url, tmp_path, f"ci-ok-{forge}", job)
        assert ok.returncode == 0 and ok.json["data"]["landed"] == 1, ok
        assert [c["sha"] for c in ok.json["data"]["commits"] if c["status"] == "landed"] == [landed]

    dev = tmp_path / "dev"
    git(tmp_path, "clone", "-q", url, str(dev))
    pushed = commit(dev, {"evil.txt": "x\n"}, "straight onto main")
    git(dev, "push", "-q", "origin", "main")
    bad = _run_job(url, tmp_path, "ci-bad", job)
    assert bad.returncode == 1 and bad.json["status"] == "FAIL" and pushed[:12] in bad.json["summary"], bad
    assert [c["sha"] for c in bad.json["data"]["commits"] if c["status"] == "failed"] == [pushed]
    assert f"spark-git accept {pushed} --why TEXT" in bad.json["next"]

    git(m, "pull", "-q", "--ff-only", "origin", "main")  # the human keeps it: the decision goes to the remote
    a = spark(m, "--json", "accept", pushed, "--why", "the release manager's fix", env={**os.environ, "SPARK_SESSION_ID": "s-human"})
    assert a.returncode == 0 and a.json["data"]["pushed"] is True, a
    kept = _run_job(url, tmp_path, "ci-kept", job)
    assert kept.returncode == 0 and kept.json["data"]["accepted"] == 1, kept
