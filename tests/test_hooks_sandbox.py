"""Claude Code's sandbox for agent sessions (issue 12, defence in depth): with spark-git's Claude hooks
installed, every agent worktree gets `.claude/settings.local.json` with a sandbox of its own (Bash writes
limited to it, spark-git's files in it read-only, git outside); the coordinator's settings get none;
the file never makes a worktree dirty; `hooks uninstall` gives every file back as it was."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from fixtures.repo import commit, git, make_repo, sealed_env, spark, write

from spark_git.clients.claude.sandbox import EXCLUDE_LINE
from tests.hookutil import client_event, event, hook, put_in_state, replay

CONFIG = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'
LOCAL = Path(".claude/settings.local.json")
DENIED = (".claude", ".codex", ".gemini", ".git", ".spark-git.toml")


def expected(wt: Path) -> dict:
    """spark-git's sandbox for an agent worktree, minus the entries that follow the git common dir (ours())."""
    real = os.path.realpath(wt)
    home = next(p / "home" for p in wt.parents if (p / "home").is_dir())  # setup()'s sealed HOME
    state = os.path.realpath(home / ".local" / "state" / "spark-git")  # the approval key's directory: unreadable
    return {"enabled": True, "allowUnsandboxedCommands": False, "excludedCommands": ["git"],
            "filesystem": {"denyWrite": [f"/{real}/{d}" for d in DENIED if os.path.lexists(wt / d)], "denyRead": [f"/{state}"]}}  # `//` + an absolute path


def ours(sb: dict | None, wt: Path) -> bool:
    """The sandbox is spark-git's for `wt`: the fixed part as expected(), and git may write the object
    store, the worktree's admin dir and its own branch (refs/heads writable, every other branch there
    denied), nothing else of the common dir (main's HEAD, config, refs/spark…)."""
    if not isinstance(sb, dict):
        return False
    common = os.path.realpath(git(wt, "rev-parse", "--git-common-dir"))
    admin, branch = os.path.realpath(git(wt, "rev-parse", "--absolute-git-dir")), git(wt, "symbolic-ref", "--short", "HEAD")
    fs = sb["filesystem"]
    inside = [x for x in fs["denyWrite"] if x.startswith(f"/{common}/")]
    fixed = {**sb, "filesystem": {**{k: v for k, v in fs.items() if k != "allowWrite"}, "denyWrite": [x for x in fs["denyWrite"] if x not in inside]}}
    allow = {f"/{common}/objects", f"/{admin}", f"/{common}/refs/heads", f"/{common}/logs/refs/heads/{branch}"}
    denied = {f"/{common}/{p}" for p in ("HEAD", "config", "hooks", "info", "refs/heads/main", "logs/HEAD")}
    return (fixed == expected(wt) and set(fs["allowWrite"]) == allow and denied <= set(inside)
            and not any(x.startswith((f"/{admin}", f"/{common}/objects")) or x.endswith(f"/refs/heads/{branch}") for x in inside))


def setup(tmp_path: Path, files: dict[str, str] | None = None) -> tuple[Path, dict[str, str]]:
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n", **(files or {})}, config=CONFIG)
    return repo, env


def ok(r):
    assert r.returncode == 0, r
    return r


def sandbox_of(wt: Path) -> dict | None:
    p = wt / LOCAL
    return json.loads(p.read_text()).get("sandbox") if p.exists() else None


def clean(wt: Path) -> bool:
    return git(wt, "status", "--porcelain", "--untracked-files=all") == ""


def test_start_sandboxes_each_agent_worktree_and_the_agent_still_merges(tmp_path: Path) -> None:
    repo, env = setup(tmp_path)
    ok(spark(repo, "hooks", "install", env=env))
    commit(repo, {}, "spark-git's hooks")
    r = ok(spark(repo, "start", "t1", "--agents", "a1,a2", "--json", env=env))
    t = tmp_path / "repo.tasks/t1"
    agents = {a: t / "agents" / a / "code" for a in ("a1", "a2")}
    for wt in agents.values():
        assert ours(sandbox_of(wt), wt)  # its own path, not another agent's
        assert clean(wt), git(wt, "status", "--porcelain", "--untracked-files=all")
    assert {p["agent"]: p["sandbox"] for p in r.json["data"]["provisioning"]} == {None: False, "a1": True, "a2": True}
    # the coordinator's sessions (task worktree, main) get no sandbox
    assert not (t / "code" / LOCAL).exists() and not (repo / LOCAL).exists()
    assert "sandbox" not in json.loads((repo / ".claude/settings.json").read_text())
    assert clean(repo) and clean(t / "code")
    commit(agents["a1"], {"src/a.py": "a = 1\n"}, "[a1] work")
    ok(spark(repo, "merge", "t1", "--agent", "a1", env=env))  # the settings file does not make the worktree dirty
    assert git(t / "code", "show", "HEAD:src/a.py") == "a = 1"
    assert ".claude/settings.local.json" not in git(t / "code", "ls-files")


def test_agent_add_and_worktree_create_sandbox_the_new_worktree(tmp_path: Path) -> None:
    repo, env = setup(tmp_path)
    ok(spark(repo, "hooks", "install", "--scope", "local", env=env))  # not committed: main's local settings, ignored and copied
    ok(spark(repo, "start", "t1", "--agents", "a1", env=env))
    put_in_state(repo, "t1", "IMPLEMENTATION")
    t = tmp_path / "repo.tasks/t1"
    ok(spark(repo, "agent", "add", "t1", "helper", "--why", "a second pair of hands", env=env))
    hook_env = {k: v for k, v in env.items() if k != "SPARK_SESSION_ID"}
    made = replay(client_event("claude-WorktreeCreate", CWD=str(t / "code"), NAME="Feature X", SESSION="s1"), "claude", "worktree-create", env=hook_env)
    assert made.returncode == 0 and made.stdout.strip() == str(t / "agents/feature-x/code"), made
    for a in ("a1", "helper", "feature-x"):
        wt = t / "agents" / a / "code"
        data = json.loads((wt / LOCAL).read_text())
        assert ours(data["sandbox"], wt)
        assert "PreToolUse" in data["hooks"]  # the copied hooks are kept: the sandbox is merged over them
        assert clean(wt)
    assert "sandbox" not in json.loads((repo / LOCAL).read_text())
    assert clean(repo)


def test_install_and_uninstall_for_existing_agent_worktrees_byte_exact(tmp_path: Path) -> None:
    mine = '{\r\n    "permissions":{"allow":["Bash(ls)"]}, "x": "\\u00e9"\r\n}'
    repo, env = setup(tmp_path, {".gitignore": ".claude/settings.local.json\n"})
    write(repo / LOCAL, mine)  # the user's own local settings, copied into every new worktree
    ok(spark(repo, "start", "t1", "--agents", "a1,a2", env=env))
    t = tmp_path / "repo.tasks/t1"
    a1, a2 = t / "agents/a1/code", t / "agents/a2/code"
    (a2 / LOCAL).unlink()
    exclude = repo / ".git/info/exclude"
    before = exclude.read_bytes()
    assert sandbox_of(a1) is None  # no hooks installed, no sandbox

    r = ok(spark(repo, "hooks", "install", "--json", env=env))
    assert sorted(r.json["data"]["sandbox"]) == [str(a1), str(a2)]
    assert ours(sandbox_of(a1), a1) and ours(sandbox_of(a2), a2)
    state = "/" + os.path.realpath(Path(env["XDG_STATE_HOME"]) / "spark-git")  # the keys' directory: the file tools are kept out
    assert json.loads((a1 / LOCAL).read_text())["permissions"] == {
        "allow": ["Bash(ls)"], "deny": [f"{tool}({state}{tail})" for tool in ("Read", "Edit") for tail in ("", "/**")]}
    assert sandbox_of(t / "code") is None and (repo / LOCAL).read_bytes() == mine.encode()
    assert "/.claude/settings.local.json" in exclude.read_text().splitlines()
    assert ok(spark(repo, "hooks", "install", "--json", env=env)).json["data"]["sandbox"] == []  # idempotent

    r = ok(spark(repo, "hooks", "uninstall", "--json", env=env))
    assert sorted(r.json["data"]["sandbox"]) == [str(a1), str(a2)]
    assert (a1 / LOCAL).read_bytes() == mine.encode() and not (a2 / LOCAL).exists()
    assert not (repo / ".claude/settings.json").exists()
    assert "/.claude/settings.local.json" in exclude.read_text()  # copies remain in the worktrees: still kept out of git
    assert clean(a1) and clean(a2)
    assert before != exclude.read_bytes()


def test_uninstall_gives_info_exclude_back_and_keeps_what_the_user_added(tmp_path: Path) -> None:
    repo, env = setup(tmp_path)
    exclude = repo / ".git/info/exclude"
    before = exclude.read_bytes()
    ok(spark(repo, "hooks", "install", env=env))
    commit(repo, {}, "spark-git's hooks")
    ok(spark(repo, "start", "t1", "--agents", "a1,a2", env=env))
    a1, a2 = (tmp_path / f"repo.tasks/t1/agents/{a}/code" for a in ("a1", "a2"))
    data = json.loads((a1 / LOCAL).read_text())
    data["env"] = {"MINE": "1"}  # the user edits a1's file after install
    (a1 / LOCAL).write_text(json.dumps(data))
    ok(spark(repo, "hooks", "uninstall", env=env))
    assert json.loads((a1 / LOCAL).read_text()) == {"env": {"MINE": "1"}}  # only the sandbox key went
    assert not (a2 / LOCAL).exists()
    assert exclude.read_bytes() != before  # a1 still has a file: it stays out of git
    (a1 / LOCAL).unlink()
    ok(spark(repo, "hooks", "install", env=env))
    ok(spark(repo, "hooks", "uninstall", env=env))
    assert exclude.read_bytes() == before and not (a1 / LOCAL).exists() and not (a2 / LOCAL).exists()


def test_uninstalling_one_scope_keeps_the_sandbox_while_another_holds_the_hooks(tmp_path: Path) -> None:
    repo, env = setup(tmp_path)
    ok(spark(repo, "hooks", "install", env=env))
    ok(spark(repo, "hooks", "install", "--scope", "user", env=env))
    commit(repo, {}, "spark-git's hooks")
    ok(spark(repo, "start", "t1", "--agents", "a1", env=env))
    a1 = tmp_path / "repo.tasks/t1/agents/a1/code"
    r = ok(spark(repo, "hooks", "uninstall", "--scope", "user", "--json", env=env))
    assert r.json["data"]["sandbox"] == [] and ours(sandbox_of(a1), a1)


def path_without(path: str, name: str, into: Path) -> str:
    """PATH with `name` hidden: each directory that holds it is replaced by one of symlinks to all its
    other entries (dropping /usr/bin itself would hide git and the shell with it)."""
    dirs = []
    for i, d in enumerate(path.split(os.pathsep)):
        if not (Path(d) / name).exists():
            dirs.append(d)
            continue
        twin = into / str(i)
        twin.mkdir(parents=True)
        for entry in Path(d).iterdir():
            if entry.name != name:
                (twin / entry.name).symlink_to(entry)
        dirs.append(str(twin))
    return os.pathsep.join(dirs)


def test_hooks_check_reports_the_sandbox_and_bwrap(tmp_path: Path) -> None:
    repo, env = setup(tmp_path)
    ok(spark(repo, "hooks", "install", env=env))
    commit(repo, {}, "spark-git's hooks")
    ok(spark(repo, "start", "t1", "--agents", "a1", env=env))
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\n")
    (fake / "bwrap").chmod(0o755)
    no_bwrap = path_without(env["PATH"], "bwrap", tmp_path / "nobwrap")
    r = spark(repo, "hooks", "check", "--json", env={**env, "PATH": no_bwrap}, process=True)
    assert r.returncode == 0 and r.json["data"]["checks"][0]["sandbox"] is True, r
    assert r.json["data"]["bwrap"] is None and any("bwrap" in n for n in r.json["data"]["notes"])  # a note, not a failure
    r = spark(repo, "hooks", "check", "--json", env={**env, "PATH": f"{fake}{os.pathsep}{no_bwrap}"}, process=True)
    assert r.returncode == 0 and r.json["data"]["bwrap"] == str(fake / "bwrap") and r.json["data"]["notes"] == [], r
    assert shutil.which("spark-git", path=no_bwrap) and shutil.which("git", path=no_bwrap) and not shutil.which("bwrap", path=no_bwrap)


def test_the_hook_still_blocks_an_agent_writing_its_own_claude_settings(tmp_path: Path) -> None:
    repo, env = setup(tmp_path)
    ok(spark(repo, "hooks", "install", env=env))
    commit(repo, {}, "spark-git's hooks")
    ok(spark(repo, "start", "t1", "--agents", "a1", env=env))
    a1 = tmp_path / "repo.tasks/t1/agents/a1/code"
    before = (a1 / LOCAL).read_bytes()
    hook_env = {k: v for k, v in env.items() if k != "SPARK_SESSION_ID"}
    for cmd in ("echo '{\"sandbox\": {\"enabled\": false}}' > .claude/settings.local.json", f"rm {a1}/.claude/settings.local.json"):
        r = hook(event(a1, "Bash", command=cmd), env=hook_env)
        assert r.returncode == 2 and ".claude" in r.stderr, r
    r = hook(event(a1, "Write", file_path=str(a1 / LOCAL), content="{}"), env=hook_env)
    assert r.returncode == 2, r
    assert (a1 / LOCAL).read_bytes() == before


def test_ending_a_task_does_not_archive_the_sandbox_settings_as_ignored_work(tmp_path: Path) -> None:
    repo, env = setup(tmp_path)
    ok(spark(repo, "hooks", "install", env=env))
    commit(repo, {}, "spark-git's hooks")
    ok(spark(repo, "start", "t1", "--agents", "a1,a2", env=env))
    a2 = tmp_path / "repo.tasks/t1/agents/a2/code"
    data = json.loads((a2 / LOCAL).read_text())
    (a2 / LOCAL).write_text(json.dumps({**data, "env": {"MINE": "1"}}))  # a2's file now holds something of the user's
    r = ok(spark(repo, "abandon", "t1", "--why", "stop", "--json", env=env))
    refs = [a["ref"] for a in r.json["data"]["archived"]]
    assert not any("/ignored-a1/" in ref for ref in refs) and any("/ignored-a2/" in ref for ref in refs), refs


def test_a_new_task_of_an_ended_ones_name_gets_its_file_back_byte_exact(tmp_path: Path) -> None:
    """The memo of what the file held is keyed by its path: one left by the ended task's worktree is not
    taken for the new worktree's."""
    mine = '{"permissions":  {"allow": ["Bash(ls)"]}}\n'
    repo, env = setup(tmp_path, {".gitignore": ".claude/settings.local.json\n"})
    write(repo / LOCAL, mine)
    ok(spark(repo, "hooks", "install", env=env))
    commit(repo, {}, "spark-git's hooks")
    a1 = tmp_path / "repo.tasks/t1/agents/a1/code"
    ok(spark(repo, "start", "t1", "--agents", "a1", env=env))
    ok(spark(repo, "abandon", "t1", "--why", "again", env=env))
    write(repo / LOCAL, mine.replace("ls", "pwd"))
    ok(spark(repo, "start", "t1", "--agents", "a1", env=env))
    assert ours(sandbox_of(a1), a1)
    ok(spark(repo, "hooks", "uninstall", env=env))
    assert (a1 / LOCAL).read_text() == mine.replace("ls", "pwd")


def test_starts_at_once_write_the_exclude_line_once(tmp_path: Path) -> None:
    """info/exclude is read, changed and written by every start that makes agent worktrees: six starts
    racing as processes leave spark-git's line there exactly once and every agent worktree clean."""
    repo, env = setup(tmp_path)
    ok(spark(repo, "hooks", "install", env=env))
    commit(repo, {}, "spark-git's hooks")
    procs = [subprocess.Popen([sys.executable, "-m", "spark_git", "start", f"t{i}", "--agents", "a1"], cwd=repo, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for i in range(6)]
    assert all(p.wait() == 0 for p in procs), [p.stderr.read() for p in procs if p.stderr]
    lines = (repo / ".git/info/exclude").read_text().splitlines()
    assert lines.count(EXCLUDE_LINE) == 1, lines
    for i in range(6):
        assert clean(tmp_path / f"repo.tasks/t{i}/agents/a1/code")


def test_hooks_check_fails_on_any_loaded_settings_file_that_switches_hooks_or_sandbox_off(tmp_path: Path) -> None:
    """A session in an agent worktree also loads the MAIN worktree's .claude/settings.local.json (and the
    user's): `{"disableAllHooks": true}` there let a real Claude Code Write into b's worktree while
    check printed ✓. Every loaded file is read; any switch-off fails the check, naming file and key."""
    repo, env = setup(tmp_path)
    ok(spark(repo, "hooks", "install", env=env))
    commit(repo, {}, "spark-git's hooks")
    ok(spark(repo, "start", "t1", "--agents", "a1,a2", env=env))
    assert spark(repo, "hooks", "check", "--json", env=env).returncode == 0
    write(repo / LOCAL, '{"disableAllHooks": true}\n')
    r = spark(repo, "hooks", "check", "--json", env=env)
    assert r.returncode == 1 and r.json["status"] == "FAIL", r
    offs = [c["switched_off"] for c in r.json["data"]["checks"]]
    assert offs == [[f"{repo / LOCAL}: disableAllHooks = true turns Claude Code's hooks off"]] * 2, offs
    assert "SWITCHED OFF" in spark(repo, "hooks", "check", env=env).stdout
    write(repo / LOCAL, '{"sandbox": {"enabled": false}}\n')  # the main worktree's local file wins over the agent's
    r = spark(repo, "hooks", "check", "--json", env=env)
    assert r.returncode == 1 and all(c["switched_off"] == [f"{repo / LOCAL}: sandbox.enabled = false turns Claude Code's sandbox off"]
                                     for c in r.json["data"]["checks"]), r
    (repo / LOCAL).unlink()
    user = Path(env["HOME"]) / ".claude/settings.json"
    write(user, '{"sandbox": {"enabled": false}}\n')  # the agent's own local file wins over the user's: harmless
    assert spark(repo, "hooks", "check", "--json", env=env).returncode == 0
    write(user, '{"sandbox": {"enabled": false, "filesystem": {"disabled": true}}}\n')  # a key spark-git does not set
    r = spark(repo, "hooks", "check", "--json", env=env)
    assert r.returncode == 1 and all(c["switched_off"] == [f"{user}: sandbox.filesystem.disabled = true turns Claude Code's sandbox off"]
                                     for c in r.json["data"]["checks"]), r
    user.unlink()
    a1 = tmp_path / "repo.tasks/t1/agents/a1/code"
    data = json.loads((a1 / LOCAL).read_text())
    (a1 / LOCAL).write_text(json.dumps({**data, "sandbox": {**data["sandbox"], "allowUnsandboxedCommands": True}}))
    r = spark(repo, "hooks", "check", "--json", env=env)
    assert r.returncode == 1 and [bool(c["switched_off"]) for c in r.json["data"]["checks"]] == [True, False], r


def test_the_sandbox_names_only_paths_that_exist_as_tasks_come_and_go(tmp_path: Path) -> None:
    """Claude Code mounts /dev/null over a denied path that does not exist, which leaves an empty file
    (a broken ref for everybody) on the host while a command runs: every agent's list is rewritten
    when refs come (start, agent add) and go (abandon, cleanup)."""
    repo, env = setup(tmp_path)
    ok(spark(repo, "hooks", "install", env=env))
    commit(repo, {}, "spark-git's hooks")
    ok(spark(repo, "start", "t1", "--agents", "a1", env=env))
    ok(spark(repo, "start", "t2", "--agents", "a2", env=env))
    a1, a2 = tmp_path / "repo.tasks/t1/agents/a1/code", tmp_path / "repo.tasks/t2/agents/a2/code"
    common = os.path.realpath(repo / ".git")
    assert f"/{common}/refs/heads/task-t2-agent-a2" in sandbox_of(a1)["filesystem"]["denyWrite"]  # t1's agent, rewritten by t2's start
    ok(spark(repo, "abandon", "t2", "--why", "stop", env=env))
    deny = sandbox_of(a1)["filesystem"]["denyWrite"]
    assert not any("t2" in d for d in deny), deny
    assert all(os.path.lexists(d[1:]) for d in deny), [d for d in deny if not os.path.lexists(d[1:])]
    assert ours(sandbox_of(a1), a1) and not a2.exists()


def test_git_grants_follow_a_branch_template_with_directories(tmp_path: Path) -> None:
    """Agent branches under refs/heads/work/: a's own ref stays writable, b's beside it and every other
    ref and reflog denied; nothing named there is missing (a missing path would be mounted over)."""
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")
    repo = make_repo(tmp_path / "repo", config='agent_branch_template = "work/{task}--{agent}"\n' + CONFIG)
    ok(spark(repo, "hooks", "install", env=env))
    commit(repo, {}, "spark-git's hooks")
    ok(spark(repo, "start", "t1", "--agents", "a,b", env=env))
    a = tmp_path / "repo.tasks/t1/agents/a/code"
    common = os.path.realpath(repo / ".git")
    fs = sandbox_of(a)["filesystem"]
    assert f"/{common}/logs/refs/heads/work/t1--a" in fs["allowWrite"] and f"/{common}/refs/heads" in fs["allowWrite"]
    deny = set(fs["denyWrite"])
    assert {f"/{common}/refs/heads/work/t1--b", f"/{common}/refs/heads/main", f"/{common}/refs/heads/t1",
            f"/{common}/logs/refs/heads/work/t1--b", f"/{common}/refs/spark", f"/{common}/packed-refs"} <= deny
    assert not any(d.endswith(("t1--a", "/refs/heads/work")) for d in deny), deny
    assert all(os.path.lexists(d[1:]) for d in deny)


def test_hooks_check_shows_a_sandbox_gone_stale_and_install_brings_it_up_to_date(tmp_path: Path) -> None:
    """A branch made by hand is one spark-git did not deny: the sandbox is out of date until rewritten."""
    repo, env = setup(tmp_path)
    ok(spark(repo, "hooks", "install", env=env))
    commit(repo, {}, "spark-git's hooks")
    ok(spark(repo, "start", "t1", "--agents", "a1", env=env))
    git(repo, "branch", "side")
    r = spark(repo, "hooks", "check", "--json", env=env)
    assert r.returncode == 0 and r.json["data"]["checks"][0]["sandbox"] is False, r  # not a failure: the hook still runs
    assert "`spark-git hooks install`" in spark(repo, "hooks", "check", env=env).stdout
    ok(spark(repo, "hooks", "install", env=env))
    assert spark(repo, "hooks", "check", "--json", env=env).json["data"]["checks"][0]["sandbox"] is True
    a1 = tmp_path / "repo.tasks/t1/agents/a1/code"
    assert f"/{os.path.realpath(repo / '.git')}/refs/heads/side" in sandbox_of(a1)["filesystem"]["denyWrite"]
