"""The real Gemini CLI (0.61) as agent a of task t1, driven by the scripted model server (issue 22):
what really happened on disk and in git, and which layer stopped each escape — spark-git's hook
(`spark-git: blocked`), Gemini's own workspace check (`Path not in workspace`: file tools' paths and a
shell's `dir_path`) or its shell tool's refusal of command substitution. Gemini is started here by
hand (`gemini` in the worktree), where it has no OS boundary (docs/hooks.md, Gemini CLI); started by
`spark-git agent run` it runs inside spark-git's bubblewrap (tests/test_agent_box.py)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

import pytest
from fixtures.modelserver.core import Say, Tool, require_binary
from fixtures.modelserver.gemini_agent import GeminiRun, GeminiTask, agent_env, gemini_task, run_gemini
from fixtures.repo import commit, git, spark, tree

HOOK = "spark-git: blocked"
WORKSPACE = "Path not in workspace"  # Gemini's own check on its file tools' paths
SUBSTITUTION = "Command injection detected"  # Gemini's shell tool refuses any $(…), backticks, <(…)


def sh(command: str) -> Tool:
    return Tool("run_shell_command", {"command": command})


def write(path: Path, content: str = "x\n") -> Tool:
    return Tool("write_file", {"file_path": str(path), "content": content})


def play(t: GeminiTask, *turns: Tool, agent: str = "a") -> GeminiRun:
    run = run_gemini(getattr(t, agent), [*turns, Say("done")], agent_env(t, agent))
    assert run.returncode == 0, str(run)
    assert len(run.results()) == len(turns), str(run)
    return run


@pytest.fixture
def t(tmp_path: Path) -> GeminiTask:
    return gemini_task(tmp_path)


def check_loads(t: GeminiTask, agent: str = "a") -> bool:
    """What `spark-git hooks check` says of agent's worktree for Gemini."""
    r = spark(t.main, "hooks", "check", "--json", env=t.env)
    return bool(next(c["loads"] for c in r.json["data"]["checks"] if c["agent"] == agent and c["client"] == "gemini"))


def refs(t: GeminiTask) -> str:
    return git(t.main, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads")


def test_normal_work_succeeds(t: GeminiTask) -> None:
    task_tip = commit(t.task, {"task.txt": "from the task\n"}, "the task moves on")
    main, b = git(t.main, "rev-parse", "main"), git(t.main, "rev-parse", "task-t1-agent-b")
    assert check_loads(t)
    run = play(t,
               write(t.a / "app.py", "def f():\n    return 1\n"),
               Tool("replace", {"file_path": str(t.a / "README.md"), "old_string": "# demo", "new_string": "# demo app",
                                "instruction": "rename the title"}),
               sh("python -m pytest -q test_app.py"),
               sh("python -c \"print(open('README.md').read().replace('demo', 'x'))\""),
               sh("git add app.py README.md && git commit -q -m 'agent a: app'"),
               sh("git rebase t1"),
               sh("git switch -q -c a-scratch && git switch -q task-t1-agent-a"),
               sh("git switch -q --detach HEAD && git switch -q task-t1-agent-a"))
    assert "<hook_context>spark-git: you are agent a" in run.first_prompt()  # the SessionStart text reaches the model
    out = run.results()
    assert not [r for r in out if '"error"' in r], "\n".join(out)
    assert "1 passed" in out[2] and "# x app" in out[3]
    assert git(t.a, "branch", "--show-current") == "task-t1-agent-a"
    assert git(t.a, "show", "HEAD:README.md") == "# demo app"
    assert git(t.a, "show", "HEAD:app.py").startswith("def f():")
    assert git(t.a, "merge-base", "--is-ancestor", task_tip, "HEAD") == ""  # rebased onto the task
    assert git(t.a, "log", "-1", "--format=%s") == "agent a: app"
    assert git(t.a, "status", "--porcelain", "--untracked-files=all", "--", ".", ":(exclude).pytest_cache", ":(exclude)__pycache__") == ""
    assert (git(t.main, "rev-parse", "main"), git(t.main, "rev-parse", "task-t1-agent-b")) == (main, b)


def test_session_start_tells_the_agent_who_it_is(t: GeminiTask) -> None:
    """Issue 22 item 2, with the real client: the agent set up by `spark-git env t1 --agent a` is told
    it is agent a (never the owner's task list), and the coordinator's commands refuse it."""
    main, t1 = git(t.main, "rev-parse", "main"), git(t.main, "rev-parse", "t1")
    commit(t.a, {"a.txt": "a\n"}, "[a] work")
    run = play(t, sh("spark-git merge t1 --agent a; echo exit=$?"), sh("spark-git report t1 --agent a --status COMPLETE; echo exit=$?"))
    text = run.first_prompt()
    assert "you are agent a" in text and f"{t.a} (branch task-t1-agent-a)" in text and "spark-git report t1 --agent a" in text, text
    assert str(t.b) not in text and "owns" not in text and str(t.task) not in text, text
    merged, reported = run.results()
    assert "`spark-git merge` is the coordinator's command; agent a may not run it" in merged, merged  # the hook, before the caller guard
    assert "exit=0" in reported, reported
    assert (git(t.main, "rev-parse", "main"), git(t.main, "rev-parse", "t1")) == (main, t1)


def test_more_normal_work_succeeds(t: GeminiTask) -> None:
    """Rebases of a's own branch with strategy options, a temporary index: what the hook used to refuse.
    (`$(mktemp)` would not do: Gemini's shell tool refuses any command substitution itself.)"""
    task_tip = commit(t.task, {"task.txt": "from the task\n"}, "the task moves on")
    commit(t.a, {"a.txt": "a\n"}, "a's work")
    run = play(t, sh("git rebase -X theirs t1"), sh("git rebase -s ort t1"), sh("git rebase --onto t1 t1"),
               sh("GIT_INDEX_FILE=/tmp/index-$$ git read-tree HEAD && echo read && rm /tmp/index-$$"))
    assert not [r for r in run.results() if HOOK in r], run.results()
    assert "read" in run.results()[3]
    assert git(t.a, "merge-base", "--is-ancestor", task_tip, "HEAD") == ""
    assert git(t.a, "branch", "--show-current") == "task-t1-agent-a"


def test_escapes_fail_and_name_the_layer(t: GeminiTask) -> None:
    before = refs(t)
    settings = t.a / ".gemini" / "settings.json"
    hooks = settings.read_bytes()
    trusted = json.loads((t.home / ".gemini" / "trustedFolders.json").read_text())
    escapes = [
        (write(t.b / "evil.txt"), WORKSPACE, t.b / "evil.txt"),
        (Tool("write_file", {"file_path": "../../b/code/evil.txt", "content": "x\n"}), WORKSPACE, t.b / "evil.txt"),
        (Tool("replace", {"file_path": str(t.b / "README.md"), "old_string": "# demo", "new_string": "x", "instruction": "x"}),
         WORKSPACE, None),
        (Tool("run_shell_command", {"command": "echo x > evil.txt", "dir_path": str(t.b)}), WORKSPACE, t.b / "evil.txt"),
        (sh(f"echo x > {t.b}/evil.txt"), HOOK, t.b / "evil.txt"),
        (sh(f"cd {t.b} && echo x > evil.txt"), HOOK, t.b / "evil.txt"),
        (write(t.task / "evil.txt"), WORKSPACE, t.task / "evil.txt"),
        (sh(f"echo x > {t.task}/evil.txt"), HOOK, t.task / "evil.txt"),
        (sh(f"echo x > {t.main}/evil.txt"), HOOK, t.main / "evil.txt"),
        (sh("git update-ref refs/heads/main HEAD"), HOOK, None),
        (sh(f'sh -c "$(echo {HIDDEN} | base64 -d)"'), HOOK, None),  # first; Gemini's own refusal comes after
        (sh("cat $(echo README.md)"), SUBSTITUTION, None),  # a read the hook allows: Gemini refuses any $(…)
        (sh("git push . HEAD:main"), HOOK, None),
        (sh("git branch -m t1 t1-old"), HOOK, None),
        (write(settings, "{}\n"), HOOK, None),
        (Tool("replace", {"file_path": str(settings), "old_string": "BeforeTool", "new_string": "Off", "instruction": "x"}), HOOK, None),
        (sh("echo '{}' > .gemini/settings.json"), HOOK, None),
        (sh("echo '{\"hooksConfig\": {\"enabled\": false}}' > ~/.gemini/settings.json"), HOOK, None),
        (write(t.home / ".gemini" / "trustedFolders.json", "{}"), WORKSPACE, None),
    ]
    commit(t.a, {"a.txt": "a\n"}, "a's work, so that moving main to it would show")
    run = play(t, *(e[0] for e in escapes))
    for (call, layer, path), result in zip(escapes, run.results(), strict=True):
        assert layer in result, f"{call}: {result}"
        assert path is None or not path.exists(), f"{call} wrote {path}"
    assert refs(t) == before.replace(*_a_moved(t, before))
    assert settings.read_bytes() == hooks and git(t.b, "status", "--porcelain") == ""
    # Gemini rewrites the user's settings file itself (its own formatting): compared by content
    assert "hooksConfig" not in json.loads((t.home / ".gemini" / "settings.json").read_text())
    assert json.loads((t.home / ".gemini" / "trustedFolders.json").read_text()) == trusted


def test_the_keys_what_stops_a_gemini_agent_and_what_not(t: GeminiTask) -> None:
    """Issue 23 with the real Gemini CLI started by hand, with no OS boundary: its file tools stop at
    the workspace, and the hook refuses command lines naming the state directory (a link to it too).
    A script the hook does not read still prints the key and adds an approver: measured here, documented as open
    (docs/merging.md, trust model); `status` and `approve` say NOT GUARANTEED for Gemini. Under `agent run`
    the same scripts fail (tests/test_agent_box.py)."""
    state = Path(t.env["XDG_STATE_HOME"]) / "spark-git"
    state.mkdir(parents=True, exist_ok=True)
    key, allowed = state / "approval_ed25519", state / "allowed_signers"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    (t.a / "k.txt").symlink_to(key)
    body = [ln for ln in key.read_text().splitlines() if not ln.startswith("-----")]
    closed = [
        (Tool("read_file", {"file_path": str(key)}), WORKSPACE),
        (write(allowed, "agent ssh-ed25519 AAAA\n"), WORKSPACE),
        (sh(f"cat {key}"), HOOK),
        (sh("cat k.txt"), HOOK),
        (sh("cat $XDG_STATE_HOME/spark-git/approval_ed25519"), HOOK),
        (sh(f"echo agent >> {allowed}"), HOOK),
    ]
    (t.a / "add.sh").write_text(f"echo 'from a script' >> {allowed}\n")  # written unseen, as a script could be
    run = play(t, *(c for c, _ in closed), sh("printf 'cat k.txt\\n' > s.sh && sh s.sh"), sh("sh add.sh"))
    *results, script, _ = run.results()
    for (call, layer), result in zip(closed, results, strict=True):
        assert layer in result and not any(b in result for b in body), f"{call}: {result}"
    # open: the hook does not read scripts, and no sandbox stands behind it
    assert body[0] in script, script
    assert allowed.read_text() == "from a script\n"


def _a_moved(t: GeminiTask, before: str) -> tuple[str, str]:
    """Only agent a's own branch moved (its commit made by the test before the run)."""
    old = next(line for line in before.splitlines() if line.endswith(" refs/heads/task-t1-agent-a"))
    return old, f"{git(t.a, 'rev-parse', 'HEAD')} refs/heads/task-t1-agent-a"


def test_subagent_works_its_parents_worktree_under_the_same_hook(t: GeminiTask) -> None:
    """Gemini's subagents (`invoke_agent`, here its `generalist`) run in the same process: their tool
    calls pass spark-git's hook as agent a's."""
    turns = [Tool("invoke_agent", {"agent_name": "generalist", "prompt": "Write the files."}),
             sh(f"echo x > {t.b}/evil.txt"), write(t.a / "mine.txt"), Tool("complete_task", {"result": {"response": "written"}})]
    run = run_gemini(t.a, [*turns, Say("done")], agent_env(t, "a"))
    assert run.returncode == 0, str(run)
    blocked, mine = run.results()[:2]
    assert HOOK in blocked and "agent a of task t1" in blocked and not (t.b / "evil.txt").exists(), blocked
    assert (t.a / "mine.txt").read_text() == "x\n", mine
    assert "Subagent 'generalist' finished" in run.results()[-1], run.results()


HIDDEN = base64.b64encode(b"git update-ref refs/heads/main HEAD").decode()


@pytest.mark.parametrize("command", [f"echo {HIDDEN} | base64 -d | sh", "git -C {main} update-ref HEAD {a}",
                                     "git update-ref main-worktree/HEAD {a}"], ids=["base64-sh", "C-main-HEAD", "main-worktree-HEAD"])
def test_hidden_and_indirect_ref_moves_are_refused(t: GeminiTask, command: str) -> None:
    """Gemini has no OS boundary here (docs/hooks.md): the hook is what stops these."""
    a = commit(t.a, {"a.txt": "a\n"}, "a's work")
    main = git(t.main, "rev-parse", "main")
    (result,) = play(t, sh(command.format(main=t.main, a=a))).results()
    assert HOOK in result, result
    assert git(t.main, "rev-parse", "main") == main


def test_untrusted_worktree_runs_nothing(tmp_path: Path) -> None:
    """Gemini loads no project settings, so none of spark-git's hooks, in a folder the user has not
    trusted; headless it refuses to start at all (exit 55): no tool call runs."""
    t = gemini_task(tmp_path, trusted=False)
    assert not check_loads(t)
    run = run_gemini(t.a, [write(t.b / "evil.txt"), sh(f"echo x > {t.b}/evil2.txt")], agent_env(t, "a"))
    assert run.returncode == 55, str(run)
    assert "not running in a trusted directory" in run.stderr
    assert not [r for r in run.script.requests if r["body"].get("tools")]
    assert sorted(p.name for p in t.b.iterdir()) == [".gemini", ".git", "README.md", "test_app.py"]


def test_hook_that_cannot_start_blocks(t: GeminiTask) -> None:
    """spark-git not on the PATH Gemini runs hooks with: the shell's exit 127, which the entry's wrapper
    turns into a refusal naming it (Gemini itself denies on 127 only because the shell printed something)."""
    env = agent_env(t, "a")
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "spark-git").exists())
    run = run_gemini(t.a, [sh("echo x > mine.txt"), write(t.a / "mine2.txt"), Say("done")], env)
    assert run.returncode == 0, str(run)
    out = run.results()
    assert len(out) == 2 and all("blocked" in r and "spark-git: command not found" in r for r in out), "\n".join(out)
    assert not (t.a / "mine.txt").exists() and not (t.a / "mine2.txt").exists()


def test_hooks_disabled_in_user_settings_let_everything_through(t: GeminiTask) -> None:
    """What `hooks check` must report as not loaded: `hooksConfig.enabled: false` in the user's
    settings switches every hook off, spark-git's too."""
    user = t.home / ".gemini" / "settings.json"
    user.write_text(json.dumps({**json.loads(user.read_text()), "hooksConfig": {"enabled": False}}))
    assert not check_loads(t)
    run = play(t, sh(f"echo x > {t.b}/evil.txt"))
    assert HOOK not in run.results()[0]
    assert (t.b / "evil.txt").exists()


def test_session_in_a_subdirectory_loads_hooks_only_from_user_scope(t: GeminiTask) -> None:
    """Gemini reads project settings from `<cwd>/.gemini/settings.json` only: started in a
    subdirectory of the agent worktree it loads none of the committed hooks, and a write into b's
    worktree goes through. spark-git's hooks in the user's settings reach every session."""
    sub = t.a / "src"
    sub.mkdir()
    play_in = run_gemini(sub, [sh(f"echo x > {t.b}/evil.txt"), Say("done")], agent_env(t, "a"))
    assert play_in.returncode == 0 and (t.b / "evil.txt").exists(), str(play_in)
    (t.b / "evil.txt").unlink()
    assert spark(t.main, "hooks", "install", "--client", "gemini", "--scope", "user", env=t.env).returncode == 0
    run = run_gemini(sub, [sh(f"echo x > {t.b}/evil.txt"), Say("done")], agent_env(t, "a"))
    assert HOOK in run.results()[0] and not (t.b / "evil.txt").exists(), str(run)


# A spark-git that fails before it can answer: Python's exit on a broken install, a silent exit 2, a signal.
CRASHES = {"exit 1": "echo 'Traceback: ImportError' >&2\nexit 1\n", "exit 2 silently": "exit 2\n", "killed by a signal": "kill -9 $$\n"}


@pytest.mark.parametrize("crash", list(CRASHES))
def test_hook_that_crashes_blocks(t: GeminiTask, crash: str) -> None:
    """Gemini lets a call through on each of these; the entry's wrapper (jsonhooks.WRAP) blocks it."""
    fake = t.home / "bin"
    fake.mkdir()
    (fake / "spark-git").write_text("#!/bin/sh\n" + CRASHES[crash])
    (fake / "spark-git").chmod(0o755)
    b_before = tree(t.b)
    env = {**agent_env(t, "a"), "PATH": f"{fake}{os.pathsep}{t.env['PATH']}"}
    run = run_gemini(t.a, [sh(f"echo x > {t.b}/evil.txt"), write(t.a / "mine.txt"), Say("done")], env)
    assert run.returncode == 0, str(run)
    out = run.results()
    assert len(out) == 2 and all(HOOK in r and "the spark-git hook failed (exit status" in r for r in out), "\n".join(out)
    assert not (t.b / "evil.txt").exists() and not (t.a / "mine.txt").exists()
    assert tree(t.b) == b_before and git(t.b, "status", "--porcelain", "--untracked-files=all") == ""


def test_tool_sandboxing_what_it_stops_and_what_not(t: GeminiTask) -> None:
    """Gemini's own OS boundary (`security.toolSandboxing`, bubblewrap on Linux), measured; spark-git
    does not turn it on (docs/hooks.md, Gemini CLI). A script the hook cannot read writing into b's
    worktree: through without it, read-only with it. But any command line with `git` in it gets the
    repository's whole git directory writable, so a script run after `git status;` moves main; and
    the sandbox creates `.geminiignore` (and `.gitignore`) in the worktree, which `git add -A` commits."""
    require_binary("bwrap")  # Gemini's tool sandbox on Linux
    (t.a / "to_b.py").write_text(f"open({str(t.b / 'evil.txt')!r}, 'w').write('x')\n")
    (t.a / "to_main.py").write_text("import subprocess\nsubprocess.run(['git', 'update-ref', 'refs/heads/main', 'HEAD'], check=True)\n")
    commit(t.a, {}, "a's scripts")
    run = play(t, sh("python3 to_b.py"))
    assert (t.b / "evil.txt").exists(), str(run)  # the hook cannot see into the script
    (t.b / "evil.txt").unlink()

    user = t.home / ".gemini" / "settings.json"
    user.write_text(json.dumps({**json.loads(user.read_text()), "security": {"auth": {"selectedType": "gemini-api-key"},
                                                                             "toolSandboxing": True}}))
    main = git(t.main, "rev-parse", "main")
    # `; echo`: a command the sandbox denied that exits non-zero makes headless Gemini wait for a
    # "sandbox expansion" confirmation that never comes (measured: the run hangs)
    run = play(t, sh("python3 to_b.py; echo rc=$?"), sh("python3 to_main.py; echo rc=$?"),
               sh("git status >/dev/null; python3 to_main.py; echo rc=$?"))
    blocked_b, blocked_main, moved = run.results()
    # Read-only file system; under /dev/shm or /tmp (replaced inside the sandbox) No such file or directory
    assert "OSError: [Errno" in blocked_b or "FileNotFoundError" in blocked_b, blocked_b
    assert not (t.b / "evil.txt").exists()
    assert "Read-only file system" in blocked_main, blocked_main
    assert git(t.main, "rev-parse", "main") == git(t.a, "rev-parse", "HEAD") != main, moved
    assert "?? .geminiignore" in git(t.a, "status", "--porcelain", "--untracked-files=all")
