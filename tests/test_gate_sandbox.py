"""The build and final gates run inside bubblewrap (core/gatebox.py, gates/confine.py): the gated
worktree and temp directories writable, the rest of the repository read-only, so a gate (the
agents' code) cannot move a ref or write into the main worktree, .git or another worktree, while git
inside the gate still reads the repository. core/proc's kills still reach a sandboxed run. Without
bwrap (SPARK_BWRAP="") `status` and `hooks check` say the gates run unsandboxed."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest
from fixtures.repo import git, spark

from spark_git.core import proc
from spark_git.core.gatebox import Sandbox
from tests.mergekit import PY, Task, config
from tests.prockit import daemon_gate, read_fifo, running, with_marker

if shutil.which("bwrap") is None:  # CI installs bubblewrap (.ci/run): there, a missing one is a failure
    if os.environ.get("CI") == "true":
        pytest.fail("bubblewrap (bwrap) is not installed: the gate sandbox cannot be tested", pytrace=False)
    pytest.skip("bubblewrap (bwrap) is not installed on this machine", allow_module_level=True)

# What the gate tries, each recorded as ok/refused in a JSON line it prints (the gate's log has it).
ESCAPES = r"""
import json, os, subprocess, sys, tempfile
main_wt, common, other = sys.argv[1:4]
res = {"cwd": os.getcwd()}
def attempt(name, f):
    try:
        f(); res[name] = "ok"
    except Exception as e:
        res[name] = f"refused: {e}"
def write(path):
    with open(path, "w") as fh:
        fh.write("x\n")
def git(*a):
    r = subprocess.run(["git", *a], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr.strip())
    return r.stdout
attempt("update-ref main", lambda: git("update-ref", "refs/heads/main", "HEAD"))
attempt("update-ref new branch", lambda: git("branch", "escaped"))
attempt("notes", lambda: git("notes", "--ref", "spark-verdicts", "add", "-f", "-m", "x", "HEAD"))
attempt("main worktree", lambda: write(os.path.join(main_wt, "escaped.txt")))
attempt(".git/refs", lambda: write(os.path.join(common, "refs", "heads", "main")))
attempt("other worktree", lambda: write(os.path.join(other, "escaped.txt")))
attempt("detach HEAD", lambda: git("update-ref", "--no-deref", "HEAD", git("rev-parse", "HEAD~1").strip()))  # re-point it elsewhere
attempt("push to a local remote", lambda: git("push", "origin", "HEAD:refs/heads/main"))
attempt("~/.gitconfig", lambda: git("config", "--global", "core.hooksPath", "/tmp/evil-hooks"))
def own():
    write("scratch.txt"); os.unlink("scratch.txt")
attempt("own worktree", own)
attempt("tmp", lambda: tempfile.NamedTemporaryFile().close())
attempt("git status", lambda: git("status", "--porcelain"))
attempt("git log", lambda: git("log", "-1", "--format=%H"))
state = os.path.join(os.path.expanduser("~"), ".local", "state", "spark-git")
res["state dir"] = sorted(os.listdir(state)) if os.path.isdir(state) else None
print("RESULT " + json.dumps(res))
"""


def _results(logs: Path, gate: str) -> dict:
    [line] = [ln for log in sorted(logs.glob(f"*-{gate}.log")) for ln in log.read_text().splitlines() if ln.startswith("RESULT ")]
    return dict(json.loads(line.removeprefix("RESULT ")))


def test_a_gate_cannot_move_refs_or_write_outside_its_worktree(tmp_path: Path) -> None:
    script = tmp_path / "repo.tasks" / "escape.py"  # where the gate can read it (the tasks root is shown to it, read-only)
    repo = tmp_path / "repo"  # where Task puts it: the gate is given the paths it attacks
    gate = [PY, str(script), str(repo), str(repo / ".git"), str(tmp_path / "repo.tasks" / "t1" / "agents" / "a2" / "code")]
    t = Task(tmp_path, ["a1", "a2"], config(build=gate, final=gate, non_interactive=True))
    script.write_text(ESCAPES)
    main_before = git(t.repo, "rev-parse", "refs/heads/main")
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(t.repo), str(origin))
    git(t.repo, "remote", "add", "origin", str(origin))
    gitconfig = Path(os.environ["HOME"]) / ".gitconfig"
    gitconfig.write_text("[user]\n\tname = Spark Test\n")
    t.commit("a1", {"feature.txt": "v1\n"}, "[a1] feature")
    m = t.merge("a1")
    assert m.returncode == 0, m
    assert t.spark("approve", "t1", "--changes").returncode == 0
    c = t.spark("--json", "complete", "t1", "--rerun")  # --rerun: the final gate runs too, in the task's clean checkout
    assert c.returncode == 0, c
    build, final = _results(t.root / "logs", "build"), _results(t.root / "logs", "final")
    checkouts = t.root.parent / ".gates" / "t1"
    assert build["cwd"] == str(checkouts / "build") and final["cwd"] == str(checkouts / "final")
    for r in (build, final):
        for name in ("update-ref main", "update-ref new branch", "notes", "main worktree", ".git/refs", "other worktree",
                     "push to a local remote", "detach HEAD"):
            assert r[name].startswith("refused"), (name, r)
        for name in ("own worktree", "tmp", "git status", "git log"):
            assert r[name] == "ok", (name, r)
        assert r["state dir"] in (None, [])  # the verdict key is hidden from the gate
        # `git config --global` writes the gate's throwaway HOME: the human's ~/.gitconfig (checked below) never sees it
    assert not (t.repo / "escaped.txt").exists() and not (t.wt("a2") / "escaped.txt").exists()
    assert git(t.repo, "rev-parse", "--verify", "-q", "refs/heads/escaped", check=False) == ""
    assert git(origin, "rev-parse", "refs/heads/main") == main_before and "hooksPath" not in gitconfig.read_text()
    # main moved by the landing itself (the task's work is on it), never by the gate
    assert git(t.repo, "rev-parse", "refs/heads/main") != main_before
    assert git(t.repo, "show", "refs/heads/main:feature.txt") == "v1"


def test_a_pytest_gate_passes_in_the_sandbox(tmp_path: Path) -> None:
    files = {"README.md": "# demo\n", ".gitignore": "__pycache__/\n.pytest_cache/\n", "src/app.py": "def f():\n    return 1\n",
             "tests/test_app.py": "import sys\nsys.path.insert(0, 'src')\nfrom app import f\n\ndef test_f():\n    assert f() == 1\n"}
    gate = [PY, "-m", "pytest", "-q", "tests"]
    t = Task(tmp_path, ["a1"], config(build=gate), files=files)
    t.commit("a1", {"src/app.py": "def f():\n    return 1  # still\n"}, "[a1] touch")
    m = t.merge("a1")
    assert m.returncode == 0 and m.json["data"]["gate"]["ran"] and m.json["data"]["gate"]["tests"] == {"passed": 1}, m


def test_without_bwrap_status_and_hooks_check_say_the_gates_are_unsandboxed(tmp_path: Path) -> None:
    t = Task(tmp_path, ["a1"], config(build=[PY, "-c", "pass"]))
    hidden = {"SPARK_BWRAP": ""}
    for args in (("--json", "status"), ("hooks", "check", "--json")):
        r = spark(t.repo, *args, env={**os.environ, **hidden})
        found = r.json["data"].get("warnings", []) + r.json["data"].get("notes", [])
        assert any("unsandboxed" in w for w in found), r
        r = spark(t.repo, *args)
        found = r.json["data"].get("warnings", []) + r.json["data"].get("notes", [])
        assert not any("unsandboxed" in w for w in found), r
    t.commit("a1", {"feature.txt": "v1\n"}, "[a1] feature")
    assert t.merge("a1", env=hidden).returncode == 0  # the gate still runs, as before, without the sandbox


def _box() -> Sandbox:
    bwrap = shutil.which("bwrap")
    assert bwrap
    return Sandbox(program=bwrap, readonly=(), writable=())


def test_a_sandboxed_run_still_kills_a_daemon_that_left_the_group(tmp_path: Path) -> None:
    fifo, marker = tmp_path / "pids.fifo", f"spark-daemon-{uuid.uuid4().hex}"
    os.mkfifo(fifo)
    with open(tmp_path / "out.log", "wb") as log:
        res = proc.run(["/bin/sh", "-c", daemon_gate(fifo, marker)], tmp_path, log, 600, sandbox=_box())
    assert res.exit_code == 0 and not res.timed_out, res
    daemon, child = (int(p) for p in Path(f"{fifo}.pids").read_text().split())
    assert with_marker(marker) == [] and not running(daemon) and not running(child)


def test_a_sandboxed_run_times_out_and_its_group_is_killed(tmp_path: Path) -> None:
    fifo = tmp_path / "pid.fifo"
    os.mkfifo(fifo)
    pids: list[int] = []
    with open(tmp_path / "out.log", "wb") as log:
        res = proc.run(["/bin/sh", "-c", f"sleep 300 & echo $! > {fifo}; wait"], tmp_path, log, 0.2, sandbox=_box(),
                       started=lambda: pids.append(int(read_fifo(fifo))))
    assert res.timed_out and res.exit_code == -9, res
    assert not running(pids[0])


def test_a_missing_command_is_still_exit_127_in_the_sandbox(tmp_path: Path) -> None:
    with open(tmp_path / "out.log", "wb") as log:
        res = proc.run(["no-such-command-xyz"], tmp_path, log, 60, sandbox=_box())
    assert res.exit_code == 127 and res.error == "cannot run 'no-such-command-xyz': No such file or directory", res


def test_a_pinned_path_gone_before_the_box_starts_does_not_stop_it(tmp_path: Path) -> None:
    """The paths pinned read-only inside a writable one are listed when the box is planned; one gone by the
    time bwrap starts (an index.lock of a git run beside it: two agents started at once by `agent run
    --all`, scripts/bench_day) made bwrap refuse to start ("Can't find source path"). The pins that are
    there still hold."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "kept").write_text("as it was\n")
    bwrap = shutil.which("bwrap")
    assert bwrap
    box = Sandbox(program=bwrap, readonly=(), writable=(work,), pinned=(work / "index.lock", work / "kept"), all_readonly=True)
    with open(tmp_path / "out.log", "wb") as log:
        res = proc.run(["/bin/sh", "-c", "echo started; echo x > kept; echo y > new"], work, log, 60, sandbox=box)
    out = (tmp_path / "out.log").read_text()
    assert res.exit_code == 0 and "started" in out and "Read-only file system" in out, (res, out)
    assert (work / "kept").read_text() == "as it was\n" and (work / "new").read_text() == "y\n"
