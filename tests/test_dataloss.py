"""Issue 12, "Data loss": ending a task never drops a nested repository or an ignored file, and never
acts on a path task.json names that the layout does not."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures.repo import commit, git, make_repo, snapshot, spark, write

CONFIG = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'


@pytest.fixture
def lrepo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# demo\n", ".gitignore": "*.env\nvendor/\n"}, config=CONFIG)


def run(repo: Path, *args: str, session: str = "s1"):
    return spark(repo, *args, env={**os.environ, "SPARK_SESSION_ID": session})


def ok(r):
    assert r.returncode == 0, r
    return r


def nested_repo(where: Path) -> str:
    """A git repository of its own at `where` with one commit and an uncommitted file; returns its head."""
    where.mkdir(parents=True)
    git(where, "init", "-q", "-b", "main")
    sha = commit(where, {"lib.c": "int x;\n"}, "nested work")
    write(where / "wip.c", "uncommitted in the nested repo\n")
    return sha


def assert_kept(repo: Path, task: str, listing: dict, head: str, rel: str) -> None:
    (entry,) = [k for k in listing["kept"] if k["path"].endswith(rel)]
    kept = Path(entry["path"])
    assert entry["task"] == task and kept.is_dir()
    assert git(kept, "rev-parse", "HEAD") == head
    assert (kept / "wip.c").read_text() == "uncommitted in the nested repo\n"


@pytest.mark.parametrize("how", [("abandon", "t1", "--why", "stop"), ("cleanup", "t1", "--force", "--abandon")])
def test_nested_repository_in_an_agent_worktree_survives_abandon(lrepo: Path, how: tuple[str, ...]) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    root = lrepo.parent / "repo.tasks" / "t1"
    head = nested_repo(root / "agents/a1/code/third_party/lib")
    r = ok(run(lrepo, *how, "--json"))
    assert not (root / "agents/a1/code").exists()
    listing = ok(run(lrepo, "archive", "list", "t1", "--json")).json["data"]
    assert_kept(lrepo, "t1", listing, head, "third_party/lib")
    assert any("third_party/lib" in p for p in r.json["data"]["kept_paths"])


def test_ignored_nested_repository_survives_plain_cleanup(lrepo: Path) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    root = lrepo.parent / "repo.tasks" / "t1"
    head = nested_repo(root / "code/vendor/dep")
    commit(root / "agents/a1/code", {"a.txt": "a\n"}, "[a1] work")
    ok(run(lrepo, "merge", "t1", "--agent", "a1"))
    ok(run(lrepo, "approve", "t1", "--changes"))
    ok(run(lrepo, "complete", "t1"))
    ok(run(lrepo, "cleanup", "t1"))
    assert not (root / "code").exists()
    assert_kept(lrepo, "t1", ok(run(lrepo, "archive", "list", "--json")).json["data"], head, "vendor/dep")


def test_ignored_files_are_archived_within_the_size_cap(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n", ".gitignore": "*.env\n*.bin\n"},
                     config=CONFIG + "[archive]\nignored_max_bytes = 1000\n")
    ok(run(repo, "start", "t1", "--agents", "a1"))
    code = repo.parent / "repo.tasks/t1/agents/a1/code"
    write(code / "local.env", "SECRET=1\n")
    write(code / "conf/dev.env", "X=2\n")
    (code / "big.bin").write_bytes(b"x" * 5000)
    dry = ok(run(repo, "abandon", "t1", "--why", "stop", "--dry-run", "--json")).json["data"]  # names everything the run will do
    big = repo.parent / "repo.tasks/t1/kept/a1/big.bin"
    assert str(big) in dry["kept_paths"] and (code / "big.bin").exists(), dry
    r = ok(run(repo, "abandon", "t1", "--why", "stop", "--json"))
    (ign,) = [a for a in r.json["data"]["archived"] if "/ignored-a1/" in a["ref"]]
    assert sorted(ign["files"]) == ["conf/dev.env", "local.env"] and ign["skipped"] == ["big.bin"]
    assert big.read_bytes() == b"x" * 5000 and str(big) in r.json["data"]["kept_paths"]  # over the cap: moved aside, not deleted
    assert [p for p in dry["kept_paths"] if p not in r.json["data"]["kept_paths"]] == []
    assert git(repo, "show", f"{ign['sha']}:local.env") == "SECRET=1"
    assert git(repo, "show", f"{ign['sha']}:conf/dev.env") == "X=2"
    refs = [e["ref"] for e in ok(run(repo, "archive", "list", "t1", "--json")).json["data"]["entries"]]
    assert ign["ref"] in refs
    assert json.loads((repo.parent / "repo.tasks/t1/audit-snapshot.json").read_text())["final_state"] == "ABANDONED"


# -- 3: paths in task.json are checked against the layout ----------------------------------------


def _edit_task(repo: Path, task: str, edit) -> None:
    p = repo.parent / "repo.tasks" / task / "task.json"
    d = json.loads(p.read_text())
    edit(d)
    p.write_text(json.dumps(d))


@pytest.mark.parametrize("target", ["other-task", "user-worktree"])
def test_abandon_refuses_a_worktree_path_the_layout_does_not_derive(lrepo: Path, tmp_path: Path, target: str) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    ok(run(lrepo, "start", "t2", "--agents", "a1"))
    mine = tmp_path / "mine"
    git(lrepo, "worktree", "add", "-q", "-b", "mine", str(mine))
    write(mine / "wip.txt", "the user's own work\n")
    victim = lrepo.parent / "repo.tasks/t2/agents/a1/code" if target == "other-task" else mine
    _edit_task(lrepo, "t1", lambda d: d["agents"]["a1"].update(worktree=str(victim)))
    before = snapshot(lrepo)
    r = run(lrepo, "abandon", "t1", "--why", "stop", "--json")
    assert r.returncode == 3 and str(victim) in r.json["summary"], r
    assert snapshot(lrepo) == before and (mine / "wip.txt").exists()


def test_abandon_refuses_a_branch_the_layout_does_not_derive(lrepo: Path) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    git(lrepo, "branch", "release")
    _edit_task(lrepo, "t1", lambda d: d["agents"]["a1"].update(branch="release"))
    before = snapshot(lrepo)
    r = run(lrepo, "abandon", "t1", "--why", "stop", "--json")
    assert r.returncode == 3 and "release" in r.json["summary"], r
    assert snapshot(lrepo) == before
    assert "task-json-paths" in [f["kind"] for f in run(lrepo, "doctor", "--json").json["data"]["findings"]]


@pytest.mark.parametrize("argv", [("merge", "t1", "--agent", "a1"), ("sync", "t1", "--agent", "a1"), ("update", "t1"),
                                  ("complete", "t1"), ("agent", "add", "t1", "a2", "--why", "more")])
def test_every_command_refuses_a_worktree_path_the_layout_does_not_derive(lrepo: Path, argv: tuple[str, ...]) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    ok(run(lrepo, "start", "t2", "--agents", "a1"))
    commit(lrepo.parent / "repo.tasks/t1/agents/a1/code", {"a.txt": "a\n"}, "[a1] a")
    victim = lrepo.parent / "repo.tasks/t2/agents/a1/code"
    _edit_task(lrepo, "t1", lambda d: d["agents"]["a1"].update(worktree=str(victim)))
    before = snapshot(lrepo)
    r = run(lrepo, "--json", *argv)
    assert r.returncode == 3 and str(victim) in r.json["summary"], r
    assert snapshot(lrepo) == before


# -- 5, 7: only branches spark-git created are deleted --------------------------------------------


def test_abandon_keeps_a_users_branch_an_agent_worktree_was_switched_to(lrepo: Path) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    git(lrepo, "branch", "release")
    release = git(lrepo, "rev-parse", "release")
    git(lrepo.parent / "repo.tasks/t1/agents/a1/code", "switch", "-q", "release")
    r = ok(run(lrepo, "abandon", "t1", "--why", "stop", "--json"))
    assert "release" not in r.json["data"]["deleted_branches"]
    assert git(lrepo, "rev-parse", "release") == release


def test_a_look_alike_agent_branch_of_the_user_survives_doctor_fix_and_cleanup(lrepo: Path) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    git(lrepo, "branch", "task-t1-agent-notes")  # the user's, not spark-git's
    sha = git(lrepo, "rev-parse", "task-t1-agent-notes")
    d = ok(run(lrepo, "doctor", "--fix", "--json")).json["data"]
    assert "stray-agent-branch" not in [f["kind"] for f in d["findings"]]
    ok(run(lrepo, "abandon", "t1", "--why", "stop"))
    assert git(lrepo, "rev-parse", "task-t1-agent-notes") == sha


@pytest.mark.parametrize(("first", "tasks", "then", "other"), [
    ('agent_branch_template = "{task}--{agent}"\n', [("task-t1-agent-zzz", "a1"), ("t1", "a1")], "", "task-t1-agent-zzz"),
    ("", [("fix-ui", "a1"), ("fix", "a1")], 'agent_branch_template = "{task}-{agent}"\n', "fix-ui"),
])
def test_another_live_tasks_branches_survive_doctor_fix_and_abandon(tmp_path: Path, first: str, tasks: list[tuple[str, str]], then: str, other: str) -> None:
    """Defect 5 where start cannot refuse: the tasks began under templates that did not collide, and
    the templates changed since. `other`'s branches look like agent branches of the next task."""
    repo = make_repo(tmp_path / "repo", config=first + CONFIG)
    for task, agent in tasks:
        ok(run(repo, "start", task, "--agents", agent))
    (repo / ".spark-git.toml").write_text(then + CONFIG)
    git(repo, "commit", "-q", "-am", "templates changed")
    commit(repo.parent / "repo.tasks" / other / "code", {"coord.txt": "c\n"}, "the other task's work")
    branches = {b: git(repo, "rev-parse", b) for b in git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()}
    mine = [b for b in branches if b.startswith(other)]
    d = ok(run(repo, "doctor", "--fix", "--json")).json["data"]
    assert "stray-agent-branch" not in [f["kind"] for f in d["findings"]], d
    ok(run(repo, "agent", "add", other, "a2", "--why", "more"))
    git(repo, "worktree", "remove", "--force", str(repo.parent / "repo.tasks" / other / "code"))  # its branch no longer checked out
    ok(run(repo, "abandon", tasks[1][0], "--why", "stop"))
    assert {b: git(repo, "rev-parse", b) for b in mine} == {b: branches[b] for b in mine}


@pytest.mark.parametrize(("templates", "before", "refused"), [
    ("", [], ("task-t1-agent-zzz",)),  # agent zzz of a task t1 would own its branch
    ('agent_branch_template = "{task}-{agent}"\n', [], ("fix-ui",)),
    ('agent_branch_template = "{task}-{agent}"\n', [("fix", "--agents", "ui")], ("fix-ui",)),
    ('agent_branch_template = "{task}-{agent}"\n', [], ("fix", "--agents", "ui,ui-x")),
])
def test_start_refuses_names_the_branch_templates_let_collide(tmp_path: Path, templates: str, before: list[tuple[str, ...]], refused: tuple[str, ...]) -> None:
    repo = make_repo(tmp_path / "repo", config=templates + CONFIG)
    for args in before:
        run(repo, "start", *args)  # may itself be refused: what matters is the next start
    state = snapshot(repo)
    r = run(repo, "start", *refused, "--json")
    assert r.returncode == 2, r
    assert snapshot(repo) == state


# -- 2: complete never overwrites an ignored file in the main worktree ----------------------------


def test_complete_refuses_to_overwrite_an_ignored_file_in_the_main_worktree(lrepo: Path) -> None:
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    code = lrepo.parent / "repo.tasks/t1/agents/a1/code"
    write(code / "local.env", "EXAMPLE=1\n")
    git(code, "add", "-f", "local.env")
    git(code, "commit", "-q", "-m", "[a1] add an example local.env")
    ok(run(lrepo, "merge", "t1", "--agent", "a1"))
    ok(run(lrepo, "approve", "t1", "--changes"))
    write(lrepo / "local.env", "SECRET=hunter2\n")
    before = snapshot(lrepo)
    r = run(lrepo, "complete", "t1", "--json")
    assert r.returncode == 3 and "local.env" in r.stdout, r
    assert (lrepo / "local.env").read_text() == "SECRET=hunter2\n"
    after = snapshot(lrepo)
    after["tasks"].pop("main", None)  # type: ignore[attr-defined]  # the main lock's (empty) directory
    assert after == before


def _ready_to_complete(repo: Path, files: dict[str, str], remove: tuple[str, ...] = ()) -> None:
    ok(run(repo, "start", "t1", "--agents", "a1"))
    code = repo.parent / "repo.tasks/t1/agents/a1/code"
    if remove:
        git(code, "rm", "-q", *remove)
    for name, content in files.items():
        write(code / name, content)
    git(code, "add", "-f", *files)
    git(code, "commit", "-q", "-m", "[a1] add files")
    ok(run(repo, "merge", "t1", "--agent", "a1"))
    ok(run(repo, "approve", "t1", "--changes"))


def test_complete_refuses_to_replace_an_ignored_file_by_a_directory_the_task_adds(lrepo: Path) -> None:
    """git deletes an ignored `cfg.env` to write `cfg.env/inner`, as silently as it overwrites one."""
    _ready_to_complete(lrepo, {"cfg.env/inner": "example\n"})
    write(lrepo / "cfg.env", "SECRET=hunter2\n")
    before = snapshot(lrepo)
    r = run(lrepo, "complete", "t1", "--json")
    assert r.returncode == 3 and "cfg.env" in r.json["summary"] + json.dumps(r.json["data"]), r
    assert (lrepo / "cfg.env").read_text() == "SECRET=hunter2\n"
    after = snapshot(lrepo)
    after["tasks"].pop("main", None)  # type: ignore[attr-defined]  # the main lock's (empty) directory
    assert after == before


def test_an_ignored_file_made_in_the_main_worktree_while_the_task_is_gated_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The final gate (or anything while the task waits in the queue) writes the ignored file after
    `complete` checked: the check is made again just before the base moves. The gate stands in for
    that anything: it runs unsandboxed (a sandboxed gate cannot write in the main worktree)."""
    monkeypatch.setenv("SPARK_BWRAP", "")
    secret = tmp_path / "repo" / "local.env"
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n", ".gitignore": "*.env\n"},
                     config=CONFIG + f'[gates]\nfinal = "echo SECRET=hunter2 > {secret}"\n')
    _ready_to_complete(repo, {"local.env": "EXAMPLE=1\n"})
    main = git(repo, "rev-parse", "main")
    r = run(repo, "complete", "t1", "--json")
    assert r.returncode == 3 and "local.env" in r.json["summary"], r
    assert secret.read_text() == "SECRET=hunter2\n" and git(repo, "rev-parse", "main") == main
    secret.unlink()  # moved aside: the same task lands (the gate's verdict on this tree is reused)
    ok(run(repo, "complete", "t1"))
    assert secret.read_text() == "EXAMPLE=1\n"


def test_complete_lands_a_tracked_file_the_task_turns_into_a_directory(lrepo: Path) -> None:
    """The control: a tracked file in the way is git's own to replace (nothing ignored is lost)."""
    _ready_to_complete(lrepo, {"README.md/inner": "now a directory\n"}, remove=("README.md",))
    ok(run(lrepo, "complete", "t1"))
    assert (lrepo / "README.md/inner").read_text() == "now a directory\n"


@pytest.mark.parametrize("how", ["merge-task-worktree", "merge-agent-worktree", "sync", "update"])
def test_an_ignored_file_in_a_task_or_agent_worktree_is_not_overwritten(lrepo: Path, how: str) -> None:
    """Like complete in the main worktree: every command that moves a worktree refuses when a commit it
    brings adds a file where an ignored one is (the coordinator's or an agent's local.env)."""
    ok(run(lrepo, "start", "t1", "--agents", "a1,a2"))
    root = lrepo.parent / "repo.tasks/t1"
    argv, where = {"merge-task-worktree": (("merge", "t1", "--agent", "a1"), root / "code"),
                   "merge-agent-worktree": (("merge", "t1", "--agent", "a2"), root / "agents/a2/code"),
                   "sync": (("sync", "t1", "--agent", "a2"), root / "agents/a2/code"),
                   "update": (("update", "t1"), root / "code")}[how]
    adder = lrepo if how == "update" else root / "agents/a1/code"
    git(adder, "add", "-f", str(write(adder / "local.env", "EXAMPLE=1\n")))
    git(adder, "commit", "-q", "-m", "[a1] add an example local.env")
    if how != "update":
        commit(root / "agents/a2/code", {"b.txt": "b\n"}, "[a2] own work")
    if how in ("merge-agent-worktree", "sync"):
        ok(run(lrepo, "merge", "t1", "--agent", "a1"))
    write(where / "local.env", "SECRET=hunter2\n")
    before = snapshot(lrepo)
    r = run(lrepo, *argv, "--json")
    assert r.returncode == 3 and "local.env" in r.json["summary"], r
    assert (where / "local.env").read_text() == "SECRET=hunter2\n"
    assert snapshot(lrepo) == before


@pytest.mark.parametrize("how", ["rebase", "behind"])
def test_update_refuses_to_overwrite_an_ignored_file_in_an_agent_worktree_it_moves(lrepo: Path, how: str) -> None:
    """update brings agents with no work of their own to the new task head: a file that head adds where an
    agent has an ignored one (its local.env) is refused, naming it, before the task or any agent moved.
    `rebase`: main added the file (the task is rebased, then a1 follows); `behind`: the task got it from
    a2's merge and a1, still at the old task head, would be fast-forwarded."""
    ok(run(lrepo, "start", "t1", "--agents", "a1,a2"))
    root = lrepo.parent / "repo.tasks/t1"
    adder = lrepo if how == "rebase" else root / "agents/a2/code"
    git(adder, "add", "-f", str(write(adder / "local.env", "EXAMPLE=1\n")))
    git(adder, "commit", "-q", "-m", "[a2] add an example local.env")
    if how == "behind":
        ok(run(lrepo, "merge", "t1", "--agent", "a2"))
    mine = root / "agents/a1/code/local.env"
    write(mine, "SECRET=hunter2\n")
    before = snapshot(lrepo)
    r = run(lrepo, "update", "t1", "--json")
    assert r.returncode == 3 and "local.env" in r.json["summary"] and str(mine.parent) in r.json["summary"], r
    assert r.json["data"]["files"] == ["local.env"]
    assert mine.read_text() == "SECRET=hunter2\n"
    assert snapshot(lrepo) == before
    mine.unlink()  # moved aside: the same update now brings a1 along
    d = ok(run(lrepo, "update", "t1", "--json")).json["data"]
    assert [(a["agent"], a["moved"]) for a in d["agents"]] == [("a1", True), ("a2", how == "rebase")]


# -- 13: submodules are initialised in new worktrees and their commits survive the end ------------


def _with_submodule(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    env = {**os.environ, "SPARK_SESSION_ID": "s1", "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow", "GIT_CONFIG_VALUE_0": "always"}
    lib = make_repo(tmp_path / "lib", {"lib.c": "int lib;\n"})
    repo = make_repo(tmp_path / "repo", config=CONFIG)
    git(repo, "submodule", "add", "-q", str(lib), "lib", env=env)
    git(repo, "commit", "-q", "-m", "add lib", env=env)
    return repo, env


def test_submodules_are_initialised_and_their_commits_survive_abandon(tmp_path: Path) -> None:
    repo, env = _with_submodule(tmp_path)
    ok(spark(repo, "start", "t1", "--agents", "a1", env=env))
    sub = repo.parent / "repo.tasks/t1/agents/a1/code/lib"
    assert (sub / "lib.c").is_file()  # initialised at creation
    work = commit(sub, {"lib.c": "int lib = 2;\n"}, "work inside the submodule")
    (sub / "draft.c").write_text("uncommitted in the submodule\n")
    r = ok(spark(repo, "abandon", "t1", "--why", "stop", "--json", env=env))
    assert not (repo.parent / "repo.tasks/t1/agents/a1/code").exists()
    (kept,) = [a for a in r.json["data"]["archived"] if "/submodule-a1-lib/" in a["ref"]]
    assert git(repo, "cat-file", "-t", work) == "commit"
    assert work in git(repo, "rev-list", kept["sha"]).split()
    assert git(repo, "show", f"{kept['sha']}:draft.c") == "uncommitted in the submodule"


def test_doctor_notes_submodule_commits_that_exist_only_in_the_worktree(tmp_path: Path) -> None:
    repo, env = _with_submodule(tmp_path)
    ok(spark(repo, "start", "t1", "--agents", "a1", env=env))
    sub = repo.parent / "repo.tasks/t1/agents/a1/code/lib"
    work = commit(sub, {"lib.c": "int lib = 2;\n"}, "work inside the submodule")
    d = spark(repo, "doctor", "--json", env=env).json["data"]
    (f,) = [f for f in d["findings"] if f["kind"] == "submodule-commits-only-here"]
    assert f["where"] == "t1/a1" and work[:12] in f["problem"] and f["broken"] is False


def test_untracked_files_in_main_block_complete_only_where_the_task_adds_files(lrepo: Path) -> None:
    """issue 14: `hooks install` leaves .claude/ untracked in the main worktree; that must not block
    `complete`. An untracked file at a path the task adds (or under one of its files) still does: the
    fast-forward would refuse or overwrite it."""
    ok(run(lrepo, "hooks", "install"))
    assert git(lrepo, "status", "--porcelain") == "?? .claude/"
    ok(run(lrepo, "start", "t1", "--agents", "a1"))
    code = lrepo.parent / "repo.tasks/t1/agents/a1/code"
    commit(code, {"notes.txt": "from the task\n", "pkg/mod.py": "x = 1\n"}, "[a1] notes and pkg")
    ok(run(lrepo, "merge", "t1", "--agent", "a1"))
    ok(run(lrepo, "approve", "t1", "--changes"))
    write(lrepo / "notes.txt", "mine, not committed\n")  # in the way of a file the task adds
    write(lrepo / "pkg", "a file where the task has a directory\n")
    before = snapshot(lrepo)
    r = run(lrepo, "complete", "t1", "--json")
    assert r.returncode == 3, r
    (unmet,) = [u for u in r.json["data"]["unmet"] if "would be overwritten" in u]
    assert "notes.txt" in unmet and "pkg" in unmet and ".claude" not in r.stdout, r.json
    after = snapshot(lrepo)
    after["tasks"].pop("main", None)  # type: ignore[attr-defined]  # the main lock's (empty) directory
    assert after == before and (lrepo / "notes.txt").read_text() == "mine, not committed\n"
    (lrepo / "notes.txt").unlink()
    (lrepo / "pkg").unlink()
    write(lrepo / "scratch.txt", "an unrelated untracked file\n")
    ok(run(lrepo, "complete", "t1"))
    assert git(lrepo, "rev-parse", "main^2") == git(lrepo, "rev-parse", "t1")
    assert (lrepo / ".claude/settings.json").exists() and (lrepo / "scratch.txt").exists()
    assert git(lrepo, "status", "--porcelain") == "?? .claude/\n?? scratch.txt"
