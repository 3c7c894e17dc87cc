"""A git dir that an agent or a gate made never runs as the user (issue 31, default-deny). git reads
the config of whatever git dir a worktree's `.git` names, and runs what it says (core.fsmonitor,
filters) on a plain `git status`. Two ways to make spark-git's own git read one, run for real:

- a committed gitlink whose `sub/.git` names a git dir the agent made: `git status` in the agent's
  worktree entered that "submodule" and ran its core.fsmonitor as the user. spark-git's git never
  enters a submodule by itself now (core/gitlite.py NO_SUBMODULES);
- gate code re-pointing its checkout's `.git` at a git dir of its own, or planting such a gitlink in
  the checkout's index: the status after the gate, and the next run's reset, ran it. The box pins the
  `.git` file, the status enters no submodule, and a checkout whose `.git` is not git's own is made
  again (ops/shared/gatetree.py).

The agent's own box pins its worktree's `.git` the same way (tests/test_agent_box.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures.repo import commit, git, make_repo, spark

from spark_git.core import gatebox
from tests.protokit import P

LIGHT = 'protocol = "light"\n'


# Run by the test itself and, as the agent's committed code, by a gate: one text for both.
PLANT = """\
import subprocess
from pathlib import Path


def plant(where, mark):
    # a git dir at where/evilgit whose core.fsmonitor appends to mark, and where/sub/.git naming it;
    # returns a commit of it (for a gitlink)
    where, mark = Path(where), Path(mark)
    subprocess.run(["git", "init", "-q", str(where / "planted")], check=True)
    (where / "planted" / ".git").rename(where / "evilgit")
    hook = where / "evilgit" / "fsmon.sh"
    hook.write_text("#!/bin/sh\\necho ran >> " + str(mark) + "\\n")
    hook.chmod(0o755)
    evil = ["git", "--git-dir=" + str(where / "evilgit")]
    subprocess.run([*evil, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    subprocess.run([*evil, "config", "core.fsmonitor", str(hook)], check=True)
    (where / "planted").rmdir()
    (where / "sub").mkdir()
    (where / "sub" / ".git").write_text("gitdir: ../evilgit\\n")
    return subprocess.run([*evil, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
"""
_planting: dict[str, Callable[[Path, Path], str]] = {}
exec(PLANT, _planting)  # the test's own text, shown to the gate as its code
plant = _planting["plant"]


def test_a_committed_gitlink_to_an_agents_git_dir_is_never_entered(tmp_path: Path) -> None:
    mark = tmp_path / "ran"
    p = P(tmp_path, config=LIGHT, agents="a1", files={"README.md": "# demo\n"})
    wt = p.wt("a1")
    sha = plant(wt, mark)
    git(wt, "update-index", "--add", "--cacheinfo", f"160000,{sha},sub")
    commit(wt, {".gitignore": "evilgit/\n"}, "[a1] a submodule of my own")
    mark.unlink(missing_ok=True)  # the test's own `git commit` entered it too
    subprocess.run(["git", "status", "--porcelain"], cwd=wt, capture_output=True, check=True)
    assert mark.exists()  # the attack is real: a plain `git status` there runs the agent's program
    mark.unlink()
    for args in (["status"], ["--json", "status", p.task], ["doctor"], ["--json", "merge", p.task, "--agent", "a1"]):
        r = p.spark(*args)
        assert not mark.exists(), (args, r)
    assert git(p.repo, "ls-tree", p.task, "sub").startswith("160000 commit")  # and the merge landed the gitlink as committed


@pytest.mark.skipif(gatebox.bwrap() is None, reason="bubblewrap is not installed (.ci/run installs it)")
def test_gate_code_cannot_point_its_checkout_at_a_git_dir_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mark = tmp_path / "ran"
    attack = PLANT + (
        "import os\n"
        "sha = plant(os.getcwd(), os.environ['MARK'])\n"
        "subprocess.run(['git', 'update-index', '--add', '--cacheinfo', '160000,' + sha + ',sub'], check=True)\n"
        "try:\n"
        "    open('.git', 'w').write('gitdir: evilgit\\n')\n"
        "    print('SWAPPED')\n"
        "except OSError as e:\n"
        "    print('PINNED', e.errno)\n"
    )
    config = f'{LIGHT}[gates]\nbuild = ["{sys.executable}", "attack.py"]\nenv = ["MARK"]\n'
    p = P(tmp_path, config=config, agents="a1", files={"README.md": "# demo\n", ".gitignore": "__pycache__/\n"})
    monkeypatch.setenv("MARK", str(mark))
    main = git(p.repo, "rev-parse", "main")
    p.commit("a1", {"attack.py": attack}, "a test helper")
    checkout = p.repo.parent / "repo.tasks" / ".gates" / p.task / "build"
    first = p.spark("--json", "merge", p.task, "--agent", "a1")
    log = sorted((p.root / "logs").glob("*-build.log"))[-1].read_text()
    assert "PINNED" in log, log  # the box kept the checkout's `.git` as git made it
    assert (checkout / ".git").read_text().startswith("gitdir: ") and "evilgit" not in (checkout / ".git").read_text()
    assert json.loads(first.stdout)["status"] != "OK", first  # it left files: refused, as a gate that writes its tree is
    assert not mark.exists(), log  # the status after the gate did not enter the planted submodule
    p.commit("a1", {"two.txt": "2\n"}, "two")  # the next merge resets the same checkout, planted index and all
    p.spark("--json", "merge", p.task, "--agent", "a1")
    assert not mark.exists()
    assert git(p.repo, "rev-parse", "main") == main


def test_a_gate_checkout_whose_git_file_was_re_pointed_is_made_again(tmp_path: Path) -> None:
    """Without a box (no bubblewrap) gate code can re-point the file; the next run does not use it."""
    mark = tmp_path / "ran"
    p = P(tmp_path, config=f'{LIGHT}[gates]\nbuild = "true"\n', agents="a1", files={"README.md": "# demo\n"})
    p.commit("a1", {"one.txt": "1\n"}, "one")
    assert p.spark("--json", "merge", p.task, "--agent", "a1").returncode == 0
    checkout = p.repo.parent / "repo.tasks" / ".gates" / p.task / "build"
    plant(checkout, mark)
    (checkout / ".git").write_text("gitdir: evilgit\n")  # what unsandboxed gate code could leave
    p.commit("a1", {"two.txt": "2\n"}, "two")
    r = p.spark("--json", "merge", p.task, "--agent", "a1")
    assert r.returncode == 0, r
    assert not mark.exists()
    assert not (checkout / "evilgit").exists()
    assert git(checkout, "rev-parse", "HEAD") == git(p.repo, "rev-parse", p.task)
    admin = Path(git(checkout, "rev-parse", "--absolute-git-dir"))
    assert admin.parent == (p.repo / ".git" / "worktrees").resolve() and os.path.realpath(admin / "gitdir") != ""


def test_a_real_submodules_git_dir_that_the_agent_rewrote_never_runs(tmp_path: Path) -> None:
    """A repository's real submodule, initialised in the agent's worktree: its git dir is in the agent's
    admin dir (`modules/<name>`), which the agent's box lets it write. doctor and abandon keep its
    commits and files from this repository's side (core/gitforeign.py) and never run git inside it."""
    mark = tmp_path / "ran"
    env = {**os.environ, "SPARK_SESSION_ID": "s1", "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow", "GIT_CONFIG_VALUE_0": "always"}
    lib = make_repo(tmp_path / "lib", {"lib.c": "int lib;\n"})
    repo = make_repo(tmp_path / "repo", config=LIGHT)
    git(repo, "submodule", "add", "-q", str(lib), "lib", env=env)
    git(repo, "commit", "-q", "-m", "add lib", env=env)
    assert spark(repo, "start", "t1", "--agents", "a1", env=env).returncode == 0
    sub = repo.parent / "repo.tasks/t1/agents/a1/code/lib"
    work = commit(sub, {"lib.c": "int lib = 2;\n"}, "work inside the submodule")
    (sub / "draft.c").write_text("uncommitted in the submodule\n")
    subgit = Path(git(sub, "rev-parse", "--absolute-git-dir"))
    hook = tmp_path / "fsmon.sh"
    hook.write_text(f"#!/bin/sh\necho ran >> {mark}\n")
    hook.chmod(0o755)
    git(sub, "config", "core.fsmonitor", str(hook))  # what the agent can write: its admin dir holds this config
    assert str(subgit).startswith(str(repo / ".git" / "worktrees"))
    subprocess.run(["git", "status", "--porcelain"], cwd=sub, capture_output=True, check=True)
    assert mark.exists()  # the attack is real: git run inside the submodule runs it
    mark.unlink()
    d = spark(repo, "--json", "doctor", env=env).json["data"]
    assert not mark.exists()
    (f,) = [f for f in d["findings"] if f["kind"] == "submodule-commits-only-here"]
    assert work[:12] in f["problem"]
    r = spark(repo, "--json", "abandon", "t1", "--why", "stop", env=env)
    assert r.returncode == 0, r
    assert not mark.exists()
    (kept,) = [a for a in r.json["data"]["archived"] if "/submodule-a1-lib/" in a["ref"]]
    assert work in git(repo, "rev-list", kept["sha"]).split()
    assert git(repo, "show", f"{kept['sha']}:draft.c") == "uncommitted in the submodule"
    assert kept["files"] == ["draft.c"]
