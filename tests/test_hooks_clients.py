"""The clients seam: every registered client implements clients.base.Client, the hook path stays
standard-library only, and the hook and the full CLI (Layout) read the same on-disk layout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.repo import make_repo

from spark_git.clients import registry
from spark_git.clients.base import Client
from spark_git.core import paths
from spark_git.core.layout import Layout
from spark_git.guard import policy
from spark_git.guard.calls import EDIT, OTHER, SHELL, WRITE, BadEvent, Decision

HEAVY = ("typer", "pydantic", "git", "rich", "filelock")


def test_the_hook_path_imports_nothing_heavy() -> None:
    # A fresh interpreter: the test process itself has loaded everything.
    code = (
        "import sys; import spark_git.__main__, spark_git.clients.hooks, spark_git.guard.policy, spark_git.guard.shell, "
        "spark_git.guard.calls, spark_git.core.paths; from spark_git.clients import registry; "
        "[registry.get(n) for n in registry.CLIENTS]; "
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (r.returncode, r.stdout.strip()) == (0, "[]"), r


@pytest.mark.parametrize("name", sorted(registry.CLIENTS))
def test_every_registered_client_implements_the_interface(name: str) -> None:
    c = registry.get(name)
    assert isinstance(c, Client) and c.name == name


def test_claude_events_become_neutral_calls() -> None:
    c = registry.get("claude")
    ev = {"session_id": "s9", "cwd": "/x", "tool_name": "NotebookEdit", "tool_input": {"notebook_path": "n.ipynb"}}
    call = c.parse_event(json.dumps(ev))
    assert (call.kind, call.tool, call.cwd, call.paths, call.command, call.session_id) == (EDIT, "NotebookEdit", "/x", ("n.ipynb",), None, "s9")
    assert c.parse_event(json.dumps({**ev, "tool_name": "Write", "tool_input": {"file_path": ""}})).kind == WRITE
    bash = c.parse_event(json.dumps({**ev, "tool_name": "Bash", "tool_input": {"command": "ls"}}))
    assert (bash.kind, bash.command, bash.paths) == (SHELL, "ls", ())
    assert c.parse_event(json.dumps({**ev, "tool_name": "Read"})).kind == OTHER
    for raw in ("{nope", "[1]"):
        with pytest.raises(BadEvent):
            c.parse_event(raw)
    assert [(r.exit_code, r.stdout, r.stderr) for r in (c.render(Decision(False, "no")), c.render(Decision(True, "ok")), c.render(Decision(True, "")))] == [
        (2, "", "no\n"), (0, "ok\n", ""), (0, "", ""),
    ]


@pytest.mark.parametrize("config", [None, 'tasks_root = "../elsewhere"\n'])
def test_the_hook_and_layout_agree_on_the_layout(tmp_path: Path, config: str | None) -> None:
    repo = make_repo(tmp_path / "repo", config=config)
    layout = Layout.discover(repo)
    found = paths.find_repo(repo / "sub")
    assert found is not None and found.tasks_root == layout.tasks_root
    assert layout.tasks_root == (tmp_path / ("elsewhere" if config else "repo.tasks")).resolve()
    wt = layout.agent_worktree("t1", "a1") / "src" / "x.py"
    assert layout.locate(wt) == ("t1", "a1") and layout.locate(layout.task_worktree("t1")) == ("t1", None)
    assert layout.locate(layout.task_md("t1")) == ("t1", None) and layout.locate(repo) == (None, None)
    place = found.locate(paths.real(wt))
    assert (place.kind, place.task, place.agent, place.rel) == ("agent", "t1", "a1", ("src", "x.py"))
    assert policy.caller(found, repo).kind == "main"


@pytest.mark.parametrize("name", sorted(registry.CLIENTS))
def test_every_list_of_client_files_comes_from_the_clients_facts(name: str, tmp_path: Path) -> None:
    from spark_git.clients import sandbox
    from spark_git.guard import writes

    c = registry.get(name)
    f = c.facts
    assert f.name == name and set(c.settings_files()) == set(f.settings)
    assert set(f.loads) | set(f.main_loads) <= set(f.settings) and f.config_dir in f.protect
    assert set(f.protect) <= set(registry.protected()) and set(f.protect) <= set(sandbox.denied())
    assert set(f.repo_files()) <= set(registry.repo_settings())
    for rel in f.repo_files():
        assert writes.guarded(tmp_path / rel, registry.protected()) in f.protect  # the hook never lets an agent write it
    loaded = [(where, scope) for where, scope, _p in f.loaded(tmp_path / "wt", tmp_path / "main")]
    assert [s for w, s in loaded if w == "main"] == list(f.main_loads) and len(loaded) == len(f.loads) + len(f.main_loads)
