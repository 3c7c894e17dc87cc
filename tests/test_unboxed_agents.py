"""`status` and `hooks check` name every live agent that runs outside spark-git's box (issue 31 item 3):
a client started by hand in an agent's worktree is found through /proc; the same client inside a
box (bubblewrap, as `agent run` starts it) is not named."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from fixtures.modelserver.core import require_binary
from fixtures.repo import make_repo, sealed_env, spark


def test_a_client_started_by_hand_is_named_and_a_boxed_one_is_not(tmp_path: Path) -> None:
    require_binary("bwrap")
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="owner")
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    assert spark(repo, "start", "t1", "--agents", "a,b", env=env).returncode == 0
    wts = tmp_path / "repo.tasks" / "t1" / "agents"
    stand_in = tmp_path / "bin" / "claude"  # what /proc shows is a program named claude; sleep does the waiting
    stand_in.parent.mkdir()
    shutil.copy("/bin/sleep", stand_in)
    by_hand = subprocess.Popen([str(stand_in), "300"], cwd=wts / "a" / "code" / ".")
    boxed = subprocess.Popen(["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--proc", "/proc", "--chdir", str(wts / "b" / "code"),
                              "--die-with-parent", "--", str(stand_in), "300"])
    try:
        warnings = json.loads(spark(repo, "status", "--json", env=env).stdout)["data"]["warnings"]
        named = [w for w in warnings if "outside spark-git's box" in w]
        assert named == [f"agent a of task t1 runs Claude Code outside spark-git's box (pid {by_hand.pid}, started by hand): it can read the "
                         "user's files and write outside its worktree; stop it and use `spark-git agent run t1 a --client claude`"], warnings
        notes = json.loads(spark(repo, "hooks", "check", "--json", env=env).stdout)["data"]["notes"]
        assert [n for n in notes if "outside spark-git's box" in n] == named
    finally:
        for p in (by_hand, boxed):
            p.kill()
            p.wait()
    warnings = json.loads(spark(repo, "status", "--json", env=env).stdout)["data"]["warnings"]
    assert not [w for w in warnings if "outside spark-git's box" in w]  # gone with the process
