"""Each extension kind of docs/architecture.md "Where to add", added by a stand-in through its seam and
seen working: a gate kind, an agent client, a store backend (registered in this process, nothing else
changed), a state and a command (written into a copy of the package: exactly the files the doc counts).
The client stand-in is the security case: the hook protects its settings from agents with no module
touched besides its adapter and its registry line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from fixtures.repo import make_repo, sealed_env, spark, write

from spark_git.clients import registry
from spark_git.clients.base import Client
from spark_git.clients.claude import sandbox
from spark_git.core.errors import Blocked
from spark_git.core.git import Git
from spark_git.gates.base import Gate, MergeSubject
from spark_git.gates.registry import GATES
from spark_git.state import backends
from spark_git.state.local import LocalStore
from spark_git.state.models import AuditTrail, TaskFile
from tests.hookutil import event
from tests.mergekit import Task, config
from tests.standin_client import LINE, STANDIN

ROOT = Path(__file__).resolve().parents[1]
CONFIG = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'

# -- an agent client: its adapter (tests/standin_client.py) and one registry line ------------------


@pytest.fixture
def task(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A light-protocol repo with task t1 and agent a1: (repo, a1's worktree, env)."""
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n", ".gitignore": ".standin/\n"}, config=CONFIG)
    assert spark(repo, "start", "t1", "--agents", "a1", env=env).returncode == 0
    return repo, tmp_path / "repo.tasks/t1/agents/a1/code", env


def agent_writes(a1: Path, env: dict[str, str]) -> list[int]:
    """The hook's exit codes for a1 writing its worktree's stand-in settings: a write tool, a shell
    redirection."""
    hook_env = {k: v for k, v in env.items() if k != "SPARK_SESSION_ID"}  # the agent: known by where it started
    target = str(a1 / ".standin" / "settings.json")
    events = [event(a1, "Write", file_path=target, content="{}"), event(a1, "Bash", command="mkdir -p .standin && echo '{}' > .standin/settings.json")]
    # in this process, where the registry line is
    return [spark(a1, "hook", "pre-tool-use", env=hook_env, input=json.dumps(ev), process=False).returncode for ev in events]


def test_a_client_is_protected_by_the_hook_through_its_adapter_and_one_registry_line(task, monkeypatch: pytest.MonkeyPatch) -> None:
    _repo, a1, env = task
    assert agent_writes(a1, env) == [0, 0]  # unknown to spark-git: an ordinary file of the agent's
    monkeypatch.setitem(registry.CLIENTS, *LINE)
    assert isinstance(STANDIN, Client) and registry.get("standin") is STANDIN
    assert agent_writes(a1, env) == [2, 2]
    r = spark(a1, "hook", "pre-tool-use", "--client", "standin", env=env, process=False,  # its own events
              input=json.dumps(event(a1, "Write", file_path=".standin/settings.json", content="{}")))
    assert r.returncode == 2 and "may not write .standin" in r.stderr, r
    real = os.path.realpath(a1)
    assert f"/{real}/.standin" not in sandbox.wanted(a1)["filesystem"]["denyWrite"]  # absent: nothing to mount over (docs/decisions.md)
    (a1 / ".standin").mkdir()
    assert f"/{real}/.standin" in sandbox.wanted(a1)["filesystem"]["denyWrite"]  # the OS sandbox denies it too
    (a1 / ".standin").rmdir()
    assert not (a1 / ".standin").exists()


def test_the_hook_fast_path_protects_a_registered_client_in_a_real_process(task) -> None:
    _repo, a1, env = task
    code = ("import sys; sys.path.insert(0, sys.argv.pop(1)); from spark_git.clients import registry; "
            f"registry.CLIENTS[{LINE[0]!r}] = {LINE[1]!r}; "
            "from spark_git.__main__ import main; rc = main(); "
            "print([m for m in ('typer', 'pydantic', 'git', 'rich', 'filelock') if m in sys.modules]); sys.exit(rc)")
    ev = event(a1, "Write", file_path=str(a1 / ".standin" / "settings.json"), content="{}")
    hook_env = {k: v for k, v in env.items() if k != "SPARK_SESSION_ID"}
    r = subprocess.run([sys.executable, "-c", code, str(ROOT), "hook", "pre-tool-use"], cwd=a1, env=hook_env,
                       input=json.dumps(ev), capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout.strip()) == (2, "[]"), r  # blocked, and the fast path stayed light
    assert "may not write .standin" in r.stderr


def test_a_registered_client_is_installed_checked_and_provisioned(task, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, _a1, env = task
    monkeypatch.setitem(registry.CLIENTS, *LINE)
    r = spark(repo, "hooks", "install", "--client", "standin", "--scope", "user", "--json", env=env)
    assert r.returncode == 0 and r.json["data"]["files"][0]["client"] == "standin", r
    home = Path(env["HOME"])
    assert "--client standin" in (home / ".standin" / "settings.json").read_text()
    check = spark(repo, "hooks", "check", "--json", env=env)
    rows = [c for c in check.json["data"]["checks"] if c["client"] == "standin"]
    assert rows and rows[0]["loads"] and "user scope" in rows[0]["source"], check
    write(repo / ".standin" / "settings.json", '{"mine": true}\n')  # ignored local settings: copied where agents work
    assert spark(repo, "agent", "add", "t1", "a2", "--why", "more hands", env=env).returncode == 0
    assert (repo.parent / "repo.tasks/t1/agents/a2/code/.standin/settings.json").read_text() == '{"mine": true}\n'


# -- a gate kind: one class and one registry line ------------------------------------------------


@dataclass(frozen=True)
class NoTodo:
    name: ClassVar[str] = "no-todo"

    @classmethod
    def for_merge(cls, subject: MergeSubject) -> list[tuple[Gate, Git]]:
        return [(cls(), subject.agent_wt)]

    def check(self, git: Git, task: str | None) -> None:
        if (git.cwd / "TODO").exists():
            raise Blocked("a TODO file must not land", task=task)


def test_a_gate_kind_runs_on_every_merge_once_registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = Task(tmp_path, ["a1"], config())
    t.commit("a1", {"TODO": "x\n"}, "[a1] a note to self")
    monkeypatch.setitem(GATES, NoTodo.name, NoTodo)
    before = (t.head(), t.head("a1"))
    r = t.merge("a1", process=False)  # the registered class lives in this process
    assert r.returncode == 3 and r.json["summary"] == "a TODO file must not land", r
    assert (t.head(), t.head("a1")) == before
    monkeypatch.delitem(GATES, NoTodo.name)
    assert t.merge("a1", process=False).returncode == 0


# -- a store backend: a class implementing Store and its line in state/backends.py ---------------


class Counting(LocalStore):
    """The local backend, noting the reads that go through it."""

    reads: ClassVar[list[str]] = []

    def read_task(self, task: str) -> TaskFile | None:
        Counting.reads.append(f"task {task}")
        return super().read_task(task)

    def read_audit(self, task: str) -> AuditTrail | None:
        Counting.reads.append(f"audit {task}")
        return super().read_audit(task)


def test_a_store_backend_serves_commands_unchanged(task, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, _a1, env = task
    monkeypatch.setattr(Counting, "reads", [])
    monkeypatch.setitem(backends.BACKENDS, "local", Counting)
    r = spark(repo, "audit", "t1", "--json", env=env)
    assert r.returncode == 0 and r.json["data"]["state"] == "INIT", r
    assert {"task t1", "audit t1"} <= set(Counting.reads)  # the command read through the stand-in


# -- a state and a command: written into a copy of the package, the files the doc counts ---------


def package_copy(tmp: Path, edits: dict[str, tuple[str, str]], new: dict[str, str]) -> dict[str, str]:
    """src/spark_git copied to `tmp`, each edit (file -> (line after which, lines inserted)) applied
    and each new file written; the environment that runs the copy."""
    dst = tmp / "pkg" / "spark_git"
    shutil.copytree(ROOT / "src" / "spark_git", dst, ignore=shutil.ignore_patterns("__pycache__"))
    for rel, (anchor, lines) in edits.items():
        text = (dst / rel).read_text()
        assert text.count(anchor) == 1, f"{rel}: the seam moved ({anchor!r})"
        (dst / rel).write_text(text.replace(anchor, anchor + lines))
    for rel, text in new.items():
        (dst / rel).write_text(text)
    return {"PYTHONPATH": str(dst.parent)}


def run(pkg: dict[str, str], cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([sys.executable, "-m", "spark_git", *args], cwd=cwd, env={**env, **pkg}, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r
    return r


def test_a_state_is_one_enum_member_and_its_rows(tmp_path: Path) -> None:
    edits = {
        "state/models.py": ('    INIT = "INIT"\n', '    TRIAGE = "TRIAGE"\n'),
        "protocol/machine.py": ("TRANSITIONS: tuple[Rule, ...] = (\n",
                                "    Rule(S.INIT, S.TRIAGE, BOTH, lambda ctx: []),\n    Rule(S.TRIAGE, S.CLASSIFIED, BOTH, g_classified),\n"),
    }
    pkg = package_copy(tmp_path, edits, {})
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")
    repo = make_repo(tmp_path / "repo", config="")
    run(pkg, repo, env, "start", "t1", "--agents", "a1")
    moved = json.loads(run(pkg, repo, env, "advance", "t1", "--to", "TRIAGE", "--json").stdout)
    assert moved["data"]["to"] == "TRIAGE"
    assert json.loads((tmp_path / "repo.tasks/t1/task.json").read_text())["state"] == "TRIAGE"
    schema = json.loads(run(pkg, repo, env, "schema", "task.json", "--json").stdout)
    assert "TRIAGE" in schema["data"]["schemas"]["task.json"]["properties"]["state"]["enum"]
    status = json.loads(run(pkg, repo, env, "status", "--json").stdout)["data"]["tasks"][0]
    assert status["state"] == "TRIAGE" and [n["state"] for n in status["next_states"]] == ["CLASSIFIED"], status
    assert len(edits) == 2  # docs/architecture.md: a state is 2 files


OPS = '''"""The stand-in command: says hello."""

from __future__ import annotations

from spark_git.core.model import Model


class HelloData(Model):
    greeting: str


def hello(name: str) -> HelloData:
    return HelloData(greeting=f"hello, {name}")
'''
CLI = '''"""`hello`: the stand-in command."""

from __future__ import annotations

import typer

from spark_git.cli.common import Result, execute
from spark_git.cli.root import app
from spark_git.core.layout import Layout
from spark_git.ops.views.hello import hello as run


@app.command("hello")
def hello(ctx: typer.Context, name: str) -> None:
    """Say hello."""

    def action(_: Layout | None) -> Result:
        d = run(name)
        return Result(d.greeting, d)

    execute(ctx, action, needs_repo=False)
'''


def test_a_command_is_an_ops_module_a_cli_module_and_two_table_lines(tmp_path: Path) -> None:
    edits = {
        "cli/root.py": ("MODULES: dict[str, tuple[str, ...]] = {\n", '    "views.hello": ("hello",),\n'),
        "ops/views/schema.py": ("COMMANDS: dict[str, str] = {\n", '    "hello": "spark_git.ops.views.hello:HelloData",\n'),
    }
    new = {"ops/views/hello.py": OPS, "cli/views/hello.py": CLI}
    pkg = package_copy(tmp_path, edits, new)
    env = sealed_env(tmp_path / "home")
    out = json.loads(run(pkg, tmp_path, env, "hello", "you", "--json").stdout)
    assert (out["status"], out["data"]) == ("OK", {"greeting": "hello, you"}), out
    schema = json.loads(run(pkg, tmp_path, env, "schema", "hello", "--json").stdout)
    assert schema["data"]["schemas"]["hello"]["properties"]["greeting"]["type"] == "string"
    assert "hello" in run(pkg, tmp_path, env, "--help").stdout
    assert len(edits) + len(new) == 4  # docs/architecture.md: a command is 4 files
