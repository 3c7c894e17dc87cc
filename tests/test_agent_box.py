"""`spark-git agent run` boxes a client that has no OS sandbox of its own (Gemini CLI 0.61) in
bubblewrap (ops/life/agentbox.py), proven with the real client played by the scripted model server:
scripts the hook cannot read fail in the kernel — into b's worktree, main's ref, the approval key and
the approvers — while the agent's own work (edit, test, commit on its branch) goes through. Without
bubblewrap the run is refused unless `--unboxed` accepts it, and its --json says so."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fixtures.modelserver import gemini_agent
from fixtures.modelserver.core import ModelServer, Say, Script, Tool, dead_proxy, require_binary
from fixtures.modelserver.gemini import GeminiApi
from fixtures.modelserver.gemini_agent import GeminiRun, GeminiTask
from fixtures.repo import Run, commit, git, spark, tree

OUTPUT = {"status": "OK", "summary": "work committed", "artifacts": {"files_changed": ["app.py"]}}


def sh(command: str) -> Tool:
    return Tool("run_shell_command", {"command": command})


def owner(env: dict[str, str]) -> dict[str, str]:
    """The coordinator's environment: the harness's, without an agent's SPARK_* identity."""
    return {**{k: v for k, v in env.items() if not k.startswith("SPARK_")}, "SPARK_SESSION_ID": "owner"}


def agent_run(t: GeminiTask, turns: list[Tool | Say], *flags: str, env: dict[str, str] | None = None) -> tuple[Run, GeminiRun]:
    script = Script(list(turns))
    with ModelServer(GeminiApi(), script) as srv:
        full = {**gemini_agent.client_env(owner(t.env), srv.url, dead_proxy()), **(env or {})}
        r = spark(t.main, "agent", "run", "t1", "a", "--client", "gemini", "--json", *flags, "--", "--yolo", env=full, process=True)
    return r, GeminiRun(r.returncode, r.stdout, r.stderr, 0.0, script)


@pytest.fixture
def t(tmp_path: Path) -> GeminiTask:
    return gemini_agent.gemini_task(tmp_path)


def keys(t: GeminiTask) -> tuple[Path, Path, list[str]]:
    """The human's approval key and approvers in the user's spark-git state dir, and the key's body lines."""
    state = Path(t.env["XDG_STATE_HOME"]) / "spark-git"
    state.mkdir(parents=True, exist_ok=True)
    key, allowed = state / "approval_ed25519", state / "allowed_signers"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    allowed.write_text("human ssh-ed25519 AAAAhuman\n")
    return key, allowed, [ln for ln in key.read_text().splitlines() if not ln.startswith("-----")]


def test_scripts_cannot_leave_the_box_and_normal_work_succeeds(t: GeminiTask) -> None:
    require_binary("bwrap")
    key, allowed, body = keys(t)
    common = Path(git(t.main, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    scripts = {  # written unseen, as a script an agent wrote earlier could be: the hook reads none of them
        "to_b.py": f"open({str(t.b / 'evil.txt')!r}, 'w').write('x')\n",
        "to_main.py": "import subprocess\nhead = subprocess.run(['git', 'rev-parse', 'HEAD'], capture_output=True, text=True).stdout\n"
                      f"open({str(common / 'refs/heads/main')!r}, 'w').write(head)\n",
        "update_main.sh": "git update-ref refs/heads/main HEAD\n",
        "key.sh": f"cat {key}\n",
        "add.sh": f"echo 'agent ssh-ed25519 AAAAagent' >> {allowed}\n",
    }
    commit(t.a, scripts, "a's scripts")
    main, b_ref, b_tree, approvers = git(t.main, "rev-parse", "main"), git(t.main, "rev-parse", "task-t1-agent-b"), tree(t.b), allowed.read_bytes()
    escapes = [sh(f"echo x > {t.b}/evil.txt; echo rc=$?"), sh("python3 to_b.py; echo rc=$?"), sh("python3 to_main.py; echo rc=$?"), sh("sh update_main.sh; echo rc=$?"),
               sh("sh key.sh; echo rc=$?"), sh("sh add.sh; echo rc=$?")]
    task_tip = commit(t.task, {"task.txt": "from the task\n"}, "the task moves on")
    work = [Tool("write_file", {"file_path": str(t.a / "app.py"), "content": "def f():\n    return 1\n"}),
            sh("python -m pytest -q -p no:cacheprovider test_app.py"), sh("git switch -q -c a-scratch && git switch -q task-t1-agent-a && echo switched"),
            sh("git rebase -q t1 && echo rebased"), sh("git add app.py && git commit -q -m '[a] app' && echo committed")]
    r, run = agent_run(t, [*escapes, *work, Say(json.dumps(OUTPUT))])
    assert r.returncode == 0, r
    data = json.loads(r.stdout)["data"]
    assert data["boundary"] == "bubblewrap" and data["report_status"] == "COMPLETE", data
    out = run.results()
    assert len(out) == len(escapes) + len(work), out
    assert "<hook_context>spark-git: you are agent a" in run.first_prompt()  # the hooks run inside the box
    assert "spark-git: blocked" in out[0], out[0]  # the hook first, where it can read the command
    for result in out[1:len(escapes)]:
        assert "rc=0" not in result and ("Read-only file system" in result or "No such file" in result), "\n".join(out)
    assert "No such file" in out[4], out[4]  # the state dir is not there at all: an empty read-only tmpfs
    # on disk and in git: b, main and the approvers as they were; no key byte reached the model server
    assert (tree(t.b), git(t.main, "rev-parse", "task-t1-agent-b"), git(t.b, "status", "--porcelain")) == (b_tree, b_ref, "")
    assert git(t.main, "rev-parse", "main") == main
    assert allowed.read_bytes() == approvers
    sent = json.dumps([q["body"] for q in run.script.requests])
    assert not [b for b in body if b in sent]
    # normal work inside the box
    assert "1 passed" in out[len(escapes) + 1] and "switched" in out[-3] and "rebased" in out[-2] and "committed" in out[-1], "\n".join(out)
    assert git(t.a, "merge-base", "--is-ancestor", task_tip, "HEAD") == ""
    assert git(t.a, "log", "-1", "--format=%s") == "[a] app" and git(t.a, "show", "HEAD:app.py").startswith("def f():")
    assert git(t.a, "status", "--porcelain", "--untracked-files=all", "--", ".", ":(exclude)__pycache__") == ""


def test_without_bubblewrap_the_run_is_refused_unless_accepted(t: GeminiTask) -> None:
    env = {"SPARK_BWRAP": ""}  # bubblewrap hidden (core/gatebox.py)
    r, run = agent_run(t, [sh("echo hi"), Say(json.dumps(OUTPUT))], env=env)
    assert r.returncode == 3 and not run.script.requests, r
    out = json.loads(r.stdout)
    assert "bubblewrap (bwrap) is not installed, and `agent run` starts every agent inside it" in out["summary"], out
    assert out["next"] == ["spark-git agent run t1 a --client gemini --unboxed"], out
    r, run = agent_run(t, [sh("echo hi"), Say(json.dumps(OUTPUT))], "--unboxed", env=env)
    assert r.returncode == 0, r
    assert json.loads(r.stdout)["data"]["boundary"] == "none"
    assert "hi" in run.results()[0]


def test_what_runs_from_under_tmp_stays_visible_in_the_box(t: GeminiTask) -> None:
    """The box's /tmp is private, but a program that lives under /tmp (a checkout or venv there, e.g. a
    fresh clone in /tmp: its `spark-git` hook was "command not found" in the box) is shown again
    read-only: the PATH directories and spark-git's own Python and package."""
    import os
    import shutil
    import tempfile

    require_binary("bwrap")
    bin_dir = Path(tempfile.mkdtemp(prefix="spark-box-bin-", dir="/tmp"))
    try:
        (bin_dir / "probe-tool").write_text("#!/bin/sh\necho probed\n")
        (bin_dir / "probe-tool").chmod(0o755)
        env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        r, run = agent_run(t, [sh("probe-tool > seen.txt; touch /tmp/inside.txt"), Say(json.dumps(OUTPUT))], env=env)
        assert r.returncode == 0, r
        assert (t.a / "seen.txt").read_text() == "probed\n", run.results()
        assert (bin_dir / "probe-tool").read_text() == "#!/bin/sh\necho probed\n" and not Path("/tmp/inside.txt").exists()
    finally:
        shutil.rmtree(bin_dir, ignore_errors=True)


def test_an_agent_cannot_hand_the_user_a_git_dir_of_its_own(t: GeminiTask) -> None:
    """git runs what the config of the git dir it reads says (core.fsmonitor). Inside its box the agent
    cannot re-point its worktree's `.git` (pinned); a `commondir` it writes at the top of the common
    dir (which would re-point every git of the user, the human's own shell included) lands in the box's
    throwaway tmpfs; and the "submodule" it commits, whose `sub/.git` names a git dir it made, is never
    entered by the human's spark-git afterwards (tests/test_planted_gitdirs.py has the gate's side)."""
    require_binary("bwrap")
    mark = t.main.parent / "ran-as-the-user"
    common = Path(git(t.main, "rev-parse", "--path-format=absolute", "--git-common-dir"))
    evil = t.main.parent / "evilcommon"
    subprocess.run(["git", "init", "-q", "--bare", str(evil)], check=True)  # a git dir of the agent's: made for it here
    subprocess.run(["git", f"--git-dir={evil}", "config", "core.bare", "false"], check=True)
    (evil / "fsmon.sh").write_text(f"#!/bin/sh\necho ran >> {mark}\n")
    (evil / "fsmon.sh").chmod(0o755)
    subprocess.run(["git", f"--git-dir={evil}", "config", "core.fsmonitor", str(evil / "fsmon.sh")], check=True)
    scripts = {  # written unseen, as a script an agent wrote earlier could be
        "commondir.sh": f"echo {evil} > {common}/commondir; echo rc=$?\n",
        "repoint.sh": "printf 'gitdir: evilgit\\n' > .git\n",
        "plant.sh": (
            "set -e\n"
            "git init -q planted && mv planted/.git evilgit && rmdir planted\n"
            "git --git-dir=evilgit -c user.name=x -c user.email=x@x commit -q --allow-empty -m x\n"
            f"printf '#!/bin/sh\\necho ran >> {mark}\\n' > evilgit/fsmon.sh && chmod +x evilgit/fsmon.sh\n"
            "git --git-dir=evilgit config core.fsmonitor \"$PWD/evilgit/fsmon.sh\"\n"
            "mkdir sub && echo 'gitdir: ../evilgit' > sub/.git\n"
            "git update-index --add --cacheinfo \"160000,$(git --git-dir=evilgit rev-parse HEAD),sub\"\n"
            "echo evilgit/ > .gitignore && git add .gitignore && git commit -q -m '[a] a submodule of my own' && echo planted\n"
        ),
    }
    commit(t.a, scripts, "a's scripts")
    gitfile = (t.a / ".git").read_text()
    r, run = agent_run(t, [sh("sh repoint.sh; echo rc=$?"), sh("sh plant.sh 2>&1; echo rc=$?"), sh("sh commondir.sh"), Say(json.dumps(OUTPUT))])
    assert r.returncode == 0, r
    out = run.results()
    assert "rc=0" not in out[0] and (t.a / ".git").read_text() == gitfile, out[0]
    assert "planted" in out[1] and git(t.a, "ls-tree", "HEAD", "sub").startswith("160000 commit"), out[1]
    assert "rc=0" in out[2] and not (common / "commondir").exists(), out[2]  # written, in the box's tmpfs only
    assert not mark.exists()  # in the box, the agent's own git could not write there either
    subprocess.run(["git", "status", "--porcelain"], cwd=t.main, capture_output=True, check=True)  # the human's own git
    assert not mark.exists()
    human = {k: v for k, v in t.env.items() if not k.startswith("SPARK_")}  # the task's own human
    for args in (["status"], ["--json", "status", "t1"], ["doctor"]):  # each runs `git status` in a's worktree
        assert spark(t.main, *args, env=human).returncode == 0, args
        assert not mark.exists(), args
