"""How much each command costs before and besides its work: the git processes it starts (counted by
a `git` wrapper first on PATH, bounded per command at the count measured when the bound was set, so
a regression fails) and the modules it imports (only the invoked command's; no GitPython, and no rich
under --json)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.repo import commit, make_repo, spark

# LOW keeps one agent (the default adds architecture-reviewer): the bounds below were set with one.
CONFIG = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n[risk]\nreplace = ["agents"]\nagents = { LOW = ["docs-updater"] }\n'

# Upper bounds: what each command ran when these were set (scripts/bench_startup prints the same table).
# What reading the configuration from the base branch's committed tree costs every command (issue 23):
# the branch the main worktree has, that branch's tip, the config files at it.
COMMITTED_CONFIG = ["symbolic-ref", "rev-parse", "cat-file"]

BOUNDS = {
    "start": 19,  # the include files listed once for all new worktrees (was 20)
    "classify": 7,
    "merge": 26,  # -1 (issue 31, the budget again): the next step reads the task head the landing just set, not the ref; -4 (issue 31, the bench_merge budget): the archive ref created without a look first; the next step's agent branches in one `for-each-ref --no-merged` (was rev-parse + merge-base each); +5: the build gate runs in its clean checkout (checkout -f, clean -ffdx, the include files listed, the worktree found: issue 31 item 1); +1 for the conflict radar: `for-each-ref --no-merged` finds the other agents with unmerged work (issue 13); +2 `diff A...B`: files git does not hold that the rebase or the landing would overwrite (issue 12)
    "merge (nothing to do)": 5,  # no `log` of the empty range when the agent's head is the task's
    "status": 7,
    "doctor": 3,
    "complete": 45,  # +10: the landing's attestation (issue 34): the lander's principal (config), whether the tip is attested (notes show), its tree and parent (show), the patch id (diff, patch-id), the agents' commits (log), the note written by compare-and-swap (rev-parse, update-ref, notes add, rev-parse, one update-ref transaction); +3: the task lands as a merge commit (merge-tree, commit-tree, and the ancestry that tells whether the patch check is needed); the merge queue: +2 to enqueue (list, CAS create), +8 to drain (queue list twice, readiness and landing re-checks, base, ancestry, dequeue); +1 `diff --diff-filter=A`: ignored files a landing would overwrite (issue 12: 2); +2 to check them again just before the base moves (the main worktree found, one `diff`: a file made while the task waited in the queue)
    "cleanup": 22,  # +1: the task's queue entries listed to drop them (issue 24: a queued task ended left its entry); +1: a landed task head is main^2, not main itself (one more merge-base for its containment)
    "update": 25,  # issue 12: was 29 without checking the agent worktrees for files git does not hold; one for-each-ref for every agent head and the ancestry asked once (not again after the rebase) pay for the one `diff` per agent behind the task head
}


class Counted:
    """Runs spark-git with a PATH whose first `git` logs its subcommand, one line per process."""

    def __init__(self, tmp: Path) -> None:
        wrap = tmp / "gitwrap"
        wrap.mkdir()
        (wrap / "git").write_text(f'#!/bin/sh\nprintf \'%s\\n\' "$1" >> "$SPARK_TEST_GITLOG"\nexec {shutil.which("git")} "$@"\n')
        (wrap / "git").chmod(0o755)
        self.log = tmp / "git.log"
        self.env = {**os.environ, "PATH": f"{wrap}{os.pathsep}{os.environ['PATH']}", "SPARK_TEST_GITLOG": str(self.log), "SPARK_SESSION_ID": "s1"}
        self.repo = make_repo(tmp / "repo", {"README.md": "# demo\n"}, config=CONFIG)
        self.tasks = tmp / "repo.tasks"

    def count(self, *args: str, ok: tuple[int, ...] = (0,)) -> list[str]:
        self.log.write_text("")
        r = spark(self.repo, "--json", *args, env=self.env)
        assert r.returncode in ok, r
        return self.log.read_text().splitlines()


def _within(name: str, calls: list[str]) -> None:
    bound = BOUNDS[name] + len(COMMITTED_CONFIG)  # every command reads the committed configuration first
    assert len(calls) <= bound, f"{name} ran {len(calls)} git processes (bound {bound}): {calls}"


def test_git_processes_per_command_over_a_task_life(tmp_path: Path) -> None:
    c = Counted(tmp_path)
    _within("start", c.count("start", "t1", "--agents", "a1"))
    _within("classify", c.count("classify", "t1", "--files", "README.md"))
    _within("merge (nothing to do)", c.count("merge", "t1", "--agent", "a1"))
    commit(c.tasks / "t1/agents/a1/code", {"a.txt": "a\n"}, "[a1] work")
    _within("merge", c.count("merge", "t1", "--agent", "a1"))
    _within("status", c.count("status"))
    _within("doctor", c.count("doctor"))
    assert spark(c.repo, "approve", "t1", "--changes", env=c.env).returncode == 0
    _within("complete", c.count("complete", "t1"))
    _within("cleanup", c.count("cleanup", "t1"))


def test_start_lists_the_include_files_once(tmp_path: Path) -> None:
    """The main worktree's include files are the same for every new worktree: one `ls-files` scan for
    the task's and three agents' worktrees, not one each (a scan walks the whole main worktree)."""
    c = Counted(tmp_path)
    calls = c.count("start", "t1", "--agents", "a1,a2,a3")
    assert calls.count("ls-files") == 1, calls
    assert all((c.tasks / "t1/agents" / a / "code/README.md").is_file() for a in ("a1", "a2", "a3"))


def test_update_git_processes(tmp_path: Path) -> None:
    """update of a task with two agents (one at the task head, one behind it) after main moved: the rebase,
    and per agent the check for files git does not hold that bringing it along would overwrite."""
    c = Counted(tmp_path)
    assert spark(c.repo, "start", "t1", "--agents", "a1,a2", env=c.env).returncode == 0
    commit(c.tasks / "t1/agents/a1/code", {"a.txt": "a\n"}, "[a1] work")
    assert spark(c.repo, "merge", "t1", "--agent", "a1", env=c.env).returncode == 0
    commit(c.repo, {"main.txt": "m\n"}, "main moves on")
    calls = c.count("update", "t1")
    _within("update", calls)


def test_status_and_doctor_git_processes_grow_only_with_what_they_must_ask(tmp_path: Path) -> None:
    """status: one for-each-ref for every branch head, then per worktree one `git status`, and a
    rev-list only for a head that moved; doctor: a constant, plus one cat-file and one rev-list for all
    recorded merges together."""
    c = Counted(tmp_path)
    for t in ("t1", "t2", "t3"):
        assert spark(c.repo, "start", t, "--agents", "a1", env=c.env).returncode == 0
    calls = c.count("status")
    assert sorted(calls) == sorted([*COMMITTED_CONFIG, "rev-parse", "for-each-ref"] + ["status"] * 6), calls
    assert sorted(c.count("doctor")) == sorted([*COMMITTED_CONFIG, "rev-parse", "worktree", "for-each-ref"])
    for t in ("t1", "t2"):
        commit(c.tasks / t / "agents/a1/code", {"a.txt": "a\n"}, "[a1] work")
        assert spark(c.repo, "merge", t, "--agent", "a1", env=c.env).returncode == 0
    commit(c.tasks / "t2/agents/a1/code", {"b.txt": "b\n"}, "[a1] more")  # t2: a1 now ahead of its task
    # no merge-tree for t2's radar (a1 is not behind its task head: it merges cleanly); one for the
    # cross-task radar: t1 and t2 both have work, one batch for the pair (issue 24)
    calls = c.count("status")
    assert sorted(calls) == sorted([*COMMITTED_CONFIG, "rev-parse", "for-each-ref"] + ["status"] * 6 + ["rev-list"] * 3 + ["merge-tree"]), calls
    commit(c.tasks / "t2/code", {"d.txt": "d\n"}, "task work")  # now a1 is behind as well: one merge-tree for every task's radar
    calls = c.count("status")
    assert sorted(calls) == sorted([*COMMITTED_CONFIG, "rev-parse", "for-each-ref"] + ["status"] * 6 + ["rev-list"] * 3 + ["merge-tree"] * 2), calls
    commit(c.tasks / "t1/code", {"c.txt": "c\n"}, "task work")  # t1: the recorded merge is behind the head
    calls = c.count("doctor")
    assert sorted(calls) == sorted([*COMMITTED_CONFIG, "rev-parse", "worktree", "for-each-ref", "cat-file", "rev-list"]), calls


def _modules_loaded(repo: Path, args: list[str], env: dict[str, str]) -> set[str]:
    code = (
        "import atexit, json, sys; "
        "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)))); "
        f"from spark_git.__main__ import main; sys.exit(main({args!r}))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True)
    assert r.returncode in (0, 1), r
    return set(json.loads(r.stderr.rpartition("MODULES ")[2]))


@pytest.mark.parametrize("args", [["--json", "merge", "t1", "--agent", "a1"], ["--json", "status"], ["--json", "doctor"], ["status"], ["merge", "t1", "--agent", "a1"]])
def test_a_command_imports_only_its_own_cli_module_and_no_gitpython(tmp_path: Path, args: list[str]) -> None:
    c = Counted(tmp_path)
    assert spark(c.repo, "start", "t1", "--agents", "a1", env=c.env).returncode == 0
    mods = _modules_loaded(c.repo, args, c.env)
    assert "git" not in mods and not any(m.startswith("git.") for m in mods), "GitPython imported"
    from spark_git.cli.root import MODULES

    command = next(a for a in args if not a.startswith("-"))
    own = next(m for m, names in MODULES.items() if command in names)
    # Command modules only: a helper that registers no command (e.g. statusview) belongs to its command.
    cli = {m.removeprefix("spark_git.cli.") for m in mods if m.startswith("spark_git.cli.")} & set(MODULES)
    assert cli == {own}, cli
    if args[0] == "--json" or args[0] == "merge":  # a one-line human result is written without rich
        assert not any(m == "rich" or m.startswith("rich.") for m in mods), f"rich imported for {args}"
    assert "importlib.metadata" not in mods, "pydantic's plugin loader scanned the installed distributions"


def test_version_imports_only_the_standard_library(tmp_path: Path) -> None:
    mods = _modules_loaded(tmp_path, ["--version"], dict(os.environ))
    assert not {m.split(".")[0] for m in mods} & {"typer", "pydantic", "git", "rich", "filelock"}


def test_the_command_table_matches_the_app_and_its_help() -> None:
    """cli/root.py's MODULES says which module registers each command; `spark-git --help` (every
    module loaded) lists exactly those commands, in that order."""
    from spark_git.cli import app
    from spark_git.cli.root import MODULES

    found: dict[str, set[str]] = {}
    for cmd in app.registered_commands:
        name = cmd.name or cmd.callback.__name__.replace("_", "-")
        found.setdefault(cmd.callback.__module__.removeprefix("spark_git.cli."), set()).add(name)
    for grp in app.registered_groups:
        mod = grp.typer_instance.registered_commands[0].callback.__module__.removeprefix("spark_git.cli.")
        found.setdefault(mod, set()).add(grp.name)
    assert found == {m: set(names) for m, names in MODULES.items()}
    out = subprocess.run([sys.executable, "-m", "spark_git", "--help"], capture_output=True, text=True, check=True).stdout
    # grouped by role (issue 33): every command under exactly one heading, the clients' entry points hidden
    from spark_git.cli.root import HELP_GROUPS, HIDDEN

    sections: dict[str, list[str]] = {}
    heading = None
    for ln in out.split("Options:", 1)[1].splitlines():
        if ln and not ln.startswith(" ") and ln.endswith(":"):
            heading = ln[:-1]
        elif heading and ln.startswith("  ") and not ln.startswith("   "):
            sections.setdefault(heading, []).append(ln.split()[0])
    assert sections == {t: list(n) for t, n in HELP_GROUPS.items()}, sections
    every = [n for names in MODULES.values() for n in names]
    assert sorted(every) == sorted([*(n for names in HELP_GROUPS.values() for n in names), *HIDDEN])
    assert not [n for n in HIDDEN if f"\n  {n} " in out]
