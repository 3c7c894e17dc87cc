"""Verdicts are authenticated (gates/verdictkey.py): a passing line copied onto a failing tree, by any
spelling an agent has, an edited line or an unauthenticated one is ignored and the gate runs (and
fails); a library changed outside the repository runs the gate again. The gate counts its runs in a
file outside the repository and fails while a flag file exists."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.repo import git, share_records_key

from spark_git.gates.verdictkey import key_path
from tests.mergekit import PY, Task, config

# The gate counts its runs in a file outside the repository, which the gate box hides: the verdicts
# are what is tested (tests/test_gate_box.py tests the box).
pytestmark = pytest.mark.usefixtures("unboxed")

REF = "refs/notes/spark-verdicts"


def _gate(counter: Path, fail_flag: Path, python: str = PY) -> list[str]:
    return [python, "-c", f"import os, sys; open({str(counter)!r}, 'a').write('run\\n'); sys.exit(3 if os.path.exists({str(fail_flag)!r}) else 0)"]


def _runs(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def _tree(repo: Path, rev: str) -> str:
    return git(repo, "rev-parse", f"{rev}^{{tree}}")


def _note_cmd(cwd: Path, args: list[str], env: dict[str, str] | None = None) -> None:
    r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    assert r.returncode == 0, r.stderr


def _fast_import(cwd: Path, tree: str, text: str) -> None:
    data = text.encode()
    # `N` takes commits only: the note goes in as the notes tree's file named by the tree id.
    stream = (f"commit {REF}\ncommitter A <a@b> 1700000000 +0000\ndata 6\nforge\nfrom {REF}^0\n"
              f"M 100644 inline {tree}\ndata {len(data)}\n").encode() + data + b"\n"
    r = subprocess.run(["git", "fast-import", "--quiet", "--force"], cwd=cwd, input=stream, capture_output=True)
    assert r.returncode == 0, r.stderr


def _python_ref_file(cwd: Path, tree: str, text: str) -> None:
    # Builds the notes commit on a scratch ref, then a Python script writes the verdicts ref's file.
    _note_cmd(cwd, ["notes", "--ref", "refs/notes/scratch", "add", "-f", "-m", text, tree])
    sha = git(cwd, "rev-parse", "refs/notes/scratch")
    common = Path(git(cwd, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    script = f"import pathlib; p = pathlib.Path({str(common / REF)!r}); p.parent.mkdir(parents=True, exist_ok=True); p.write_text({sha!r} + '\\n')"
    subprocess.run([sys.executable, "-c", script], check=True)
    git(cwd, "update-ref", "-d", "refs/notes/scratch")


SPELLINGS = {
    "notes --ref spark-verdicts": lambda cwd, tree, text: _note_cmd(cwd, ["notes", "--ref", "spark-verdicts", "add", "-f", "-m", text, tree]),
    "notes --ref notes/spark-verdicts": lambda cwd, tree, text: _note_cmd(cwd, ["notes", "--ref", "notes/spark-verdicts", "add", "-f", "-m", text, tree]),
    "GIT_NOTES_REF": lambda cwd, tree, text: _note_cmd(cwd, ["notes", "add", "-f", "-m", text, tree], {"GIT_NOTES_REF": REF}),
    "-c core.notesRef": lambda cwd, tree, text: _note_cmd(cwd, ["-c", f"core.notesRef={REF}", "notes", "add", "-f", "-m", text, tree]),
    "fast-import": _fast_import,
    "python writes the ref file": _python_ref_file,
}


def _passed_task(tmp_path: Path) -> tuple[Task, Path, Path, str]:
    """A task whose agent a1 merged a passing tree (its verdict recorded); returns that verdict's line."""
    counter, flag = tmp_path / "runs", tmp_path / "fail"
    gate = _gate(counter, flag)
    t = Task(tmp_path, ["a1"], config(build=gate, final=gate, non_interactive=True))
    t.commit("a1", {"feature.txt": "v1\n"}, "[a1] feature")
    assert t.merge("a1").returncode == 0
    (line,) = git(t.repo, "notes", "--ref", REF, "show", _tree(t.repo, t.head("a1"))).splitlines()
    return t, counter, flag, line


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_a_passing_verdict_copied_onto_a_failing_tree_is_not_reused_by_merge(tmp_path: Path, spelling: str) -> None:
    t, counter, flag, line = _passed_task(tmp_path)
    t.commit("a1", {"feature.txt": "broken\n"}, "[a1] break it")
    flag.write_text("x")  # the new tree fails its gate
    SPELLINGS[spelling](t.wt("a1"), _tree(t.repo, t.head("a1")), line)
    before = t.head()
    r = t.merge("a1")
    assert r.returncode == 1 and _runs(counter) == 2, r  # the copied line was ignored: the gate ran, and failed
    assert t.head() == before


def test_a_copied_verdict_does_not_land_through_complete(tmp_path: Path) -> None:
    t, counter, flag, line = _passed_task(tmp_path)
    main = git(t.repo, "rev-parse", "refs/heads/main")
    t.commit(None, {"feature.txt": "broken\n"}, "broken on the task branch")  # type: ignore[arg-type]
    flag.write_text("x")
    SPELLINGS["notes --ref spark-verdicts"](t.wt(), _tree(t.repo, t.head()), line)
    assert t.spark("approve", "t1", "--changes").returncode == 0
    c = t.spark("--json", "complete", "t1")
    assert c.returncode == 1 and _runs(counter) == 3, c  # the copied line was ignored: the gate ran, failed, and failed again (speculate.CONFIRM)
    assert git(t.repo, "rev-parse", "refs/heads/main") == main


def test_a_copied_verdict_does_not_land_through_the_queue(tmp_path: Path) -> None:
    t, counter, flag, line = _passed_task(tmp_path)
    main = git(t.repo, "rev-parse", "refs/heads/main")
    t.commit(None, {"feature.txt": "broken\n"}, "broken on the task branch")  # type: ignore[arg-type]
    flag.write_text("x")
    # the queue's candidate is a merge of the task into an unmoved main: the task head's tree
    SPELLINGS["fast-import"](t.wt(), _tree(t.repo, t.head()), line)
    assert t.spark("approve", "t1", "--changes").returncode == 0
    assert t.spark("complete", "t1", "--no-wait").returncode == 0
    t.spark("--json", "queue", "run")
    assert _runs(counter) == 3  # the candidate's gate ran (the copied line was ignored) and failed, twice (speculate.CONFIRM)
    assert git(t.repo, "rev-parse", "refs/heads/main") == main


@pytest.mark.parametrize("edit", ["result", "mac", "no mac"])
def test_an_edited_or_unauthenticated_verdict_is_ignored(tmp_path: Path, edit: str) -> None:
    t, counter, flag, _ = _passed_task(tmp_path)
    t.commit("a1", {"feature.txt": "broken\n"}, "[a1] break it")
    flag.write_text("x")
    assert t.merge("a1").returncode == 1  # a real, authenticated failure of this tree
    tree = _tree(t.repo, t.head("a1"))
    v = json.loads(git(t.repo, "notes", "--ref", REF, "show", tree).splitlines()[-1])
    if edit == "result":
        v.update(result="passed", exit_code=0)
    elif edit == "mac":
        v.update(result="passed", exit_code=0, mac="0" * 64)
    else:
        v.update(result="passed", exit_code=0)
        v.pop("mac")
    _note_cmd(t.wt("a1"), ["notes", "--ref", REF, "append", "-m", json.dumps(v, sort_keys=True, separators=(",", ":")), tree])
    r = t.merge("a1")
    assert r.returncode == 1 and _runs(counter) == 3, r


def test_the_key_lives_in_the_users_state_dir_0600_and_verdicts_carry_a_mac(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t, counter, _, line = _passed_task(tmp_path)
    common = Path(git(t.repo, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    key = key_path(common)
    assert key.is_relative_to(Path(os.environ["HOME"]) / ".local" / "state" / "spark-git")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_text().strip()) == 64
    assert len(json.loads(line)["mac"]) == 64
    state = tmp_path / "state"
    share_records_key(state)  # the same user's records (issue 31): only the verdict key is another
    monkeypatch.setenv("XDG_STATE_HOME", str(state))  # another user state: the human's approval is signed and verified there
    assert t.spark("approve", "t1", "--changes").returncode == 0
    c = t.spark("--json", "complete", "t1")  # another key: the build's verdict does not verify
    assert c.returncode == 0 and c.json["data"]["gate"]["ran"] and _runs(counter) == 2, c
    assert stat.S_IMODE((state / "spark-git" / key.parent.name / "verdict.key").stat().st_mode) == 0o600


def test_no_key_inside_the_repository_and_then_no_reuse(tmp_path: Path) -> None:
    t, counter, _, _ = _passed_task(tmp_path)
    inside = t.repo / ".git" / "state"  # an XDG_STATE_HOME inside the repository: an agent could read a key there
    assert t.spark("approve", "t1", "--changes").returncode == 0
    # the human's approval verifies without a state dir: the team's approvers file committed on main names their key
    pub = (Path(os.environ["XDG_STATE_HOME"]) / "spark-git" / "approval_ed25519.pub").read_text().split()[:2]
    signer = json.loads(json.loads((t.root / "task.json").read_text())["checkpoint"]["signed"])["signer"]
    cfg = (t.repo / ".spark-git.toml").read_text().replace("[approval]", '[approval]\nallowed_signers = ".approvers"')
    (t.repo / ".approvers").write_text(f'{signer} namespaces="spark-git-approval" {" ".join(pub)}\n')
    (t.repo / ".spark-git.toml").write_text(cfg)
    git(t.repo, "add", "-A")
    git(t.repo, "commit", "-qm", "team approvers")
    assert t.spark("update", "t1").returncode == 0  # the same patch on the new main: the approval is kept
    c = t.spark("--json", "complete", "t1", env={"XDG_STATE_HOME": str(inside)})
    assert c.returncode == 0 and c.json["data"]["gate"]["ran"] and _runs(counter) == 2, c
    assert not inside.exists()


def test_a_library_changed_outside_the_repository_runs_the_gate_again(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    counter, flag = tmp_path / "runs", tmp_path / "fail"
    gate = _gate(counter, flag, str(venv / "bin" / "python"))
    t = Task(tmp_path, ["a1"], config(build=gate, final=gate, non_interactive=True))
    t.commit("a1", {"feature.txt": "v1\n"}, "[a1] feature")
    assert t.merge("a1").returncode == 0 and _runs(counter) == 1
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "somelib-2.0.dist-info").mkdir()
    (site / "somelib-2.0.dist-info" / "RECORD").write_text("somelib/__init__.py,,\n")
    assert t.spark("approve", "t1", "--changes").returncode == 0
    c = t.spark("--json", "complete", "t1")
    assert c.returncode == 0 and _runs(counter) == 2 and c.json["data"]["gate"]["ran"], c
