"""One Store per command (issue 27): a command opens its Store once, at its entry, and hands it down
to what it calls. Read from the source (where `open_store(` may be called: OPENERS and cli/), and
counted in this process (every `open_store` call and every backend built, per command, over a
task's whole life)."""

from __future__ import annotations

import ast
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fixtures.repo import Run, commit, make_repo, spark_in_process

from tests.mergekit import PY, config
from tests.test_architecture import modules

# The ops entry functions that open their command's Store (the function cli/ calls). Everything below
# them, ops/shared/, protocol/, gates/ and clients/ take the Store as a parameter. A cli/ action opens
# it itself where it composes several ops calls (update and its next step, agent add and its guard) or
# calls a shared service directly (hooks, lock main, who/log, remote status, session-start).
OPENERS = frozenset({
    "spark_git.ops.ending.archive:list_refs",
    "spark_git.ops.ending.archive:restore",
    "spark_git.ops.ending.cleanup:abandon",
    "spark_git.ops.ending.cleanup:cleanup",
    "spark_git.ops.ending.doctor.lockbreak:break_lock",
    "spark_git.ops.ending.doctor:run",
    "spark_git.ops.landing.approvals:approve",
    "spark_git.ops.landing.approvals:reject_plan",
    "spark_git.ops.landing.approvals:request_changes",
    "spark_git.ops.landing.complete:complete",
    "spark_git.ops.landing.complete_via:complete_via",
    "spark_git.ops.landing.merge:merge",
    "spark_git.ops.landing.merge:merge_all",
    "spark_git.ops.landing.queue:run",
    "spark_git.ops.landing.queue:show",
    "spark_git.ops.landing.queuestats:stats",
    "spark_git.ops.landing.sync:sync",
    "spark_git.ops.life.advance:advance",
    "spark_git.ops.life.agentrun:headless",
    "spark_git.ops.life.agentrun:in_tmux",
    "spark_git.ops.life.agentrunall:run_all",
    "spark_git.ops.life.classify:classify",
    "spark_git.ops.life.start:start",
    "spark_git.ops.life.wthooks:create",
    "spark_git.ops.life.wthooks:remove",
    "spark_git.ops.setup.env:env_data",
    "spark_git.ops.setup.remote:heartbeat",
    "spark_git.ops.setup.remote:sync",
    "spark_git.ops.views.audit:audit_view",
    "spark_git.ops.views.status:collect",
})
CLI = "spark_git.cli"


def store_opens(mod: str, source: str) -> list[tuple[str, int]]:
    """("module:function", line) of each `open_store(` call; the function is the top-level one around
    it (a cli action's nested `action` counts as its command's function)."""
    out: list[tuple[str, int]] = []
    for top in ast.parse(source).body:
        name = top.name if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) else "<module>"
        for node in ast.walk(top):
            if isinstance(node, ast.Call) and (getattr(node.func, "id", None) == "open_store" or getattr(node.func, "attr", None) == "open_store"):
                out.append((f"{mod}:{name}", node.lineno))
    return out


def misplaced(opens: list[tuple[str, int]]) -> list[str]:
    """Calls outside cli/ and OPENERS, and an opener that opens more than once."""
    bad = [f"{where} (line {line}): not a command's entry; take the Store as a parameter"
           for where, line in opens if not where.startswith(CLI + ".") and where not in OPENERS]
    counts: dict[str, int] = {}
    for where, _ in opens:
        counts[where] = counts.get(where, 0) + 1
    return bad + [f"{where} opens its Store {n} times" for where, n in counts.items() if n > 1 and where in OPENERS]


def test_open_store_is_called_only_at_command_entries() -> None:
    opens = [o for mod, path in modules().items() for o in store_opens(mod, path.read_text())]
    bad = misplaced(opens)
    assert not bad, f"{len(bad)} open_store call(s) below a command's entry:\n" + "\n".join(bad)
    assert {where for where, _ in opens if where in OPENERS} == OPENERS  # the list names no function that no longer opens
    assert all(o.split(":")[0].split(".")[2] in ("life", "landing", "ending", "views", "setup") for o in OPENERS)  # commands, never ops.shared


def test_the_open_store_check_catches_what_it_should() -> None:
    src = "def helper(layout):\n    return open_store(layout)\n\ndef start(layout):\n    open_store(layout)\n    backends.open_store(layout)\n"
    assert misplaced(store_opens("spark_git.ops.shared.x", src)) == [
        "spark_git.ops.shared.x:helper (line 2): not a command's entry; take the Store as a parameter",
        "spark_git.ops.shared.x:start (line 5): not a command's entry; take the Store as a parameter",
        "spark_git.ops.shared.x:start (line 6): not a command's entry; take the Store as a parameter",
    ]
    assert misplaced(store_opens("spark_git.ops.life.start", src)) == [
        "spark_git.ops.life.start:helper (line 2): not a command's entry; take the Store as a parameter",
        "spark_git.ops.life.start:start opens its Store 2 times",
    ]
    assert misplaced(store_opens("spark_git.cli.life.start", src)) == []


@dataclass
class Opens:
    calls: int = 0  # open_store(...) called
    built: int = 0  # a backend constructed
    seen: dict[str, tuple[int, int]] = field(default_factory=dict)  # command -> (calls, built)


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> Iterator[Opens]:
    """Counts in every module that holds `open_store` (imported by name) and in those imported while
    the test runs (they take the module attribute); all put back afterwards."""
    from spark_git.state import backends

    real, n = backends.open_store, Opens()

    def counting(layout: Any) -> Any:
        n.calls += 1
        return real(layout)

    def builder(build: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def counted(layout: Any) -> Any:
            n.built += 1
            return build(layout)
        return counted

    for name, build in list(backends.BACKENDS.items()):
        monkeypatch.setitem(backends.BACKENDS, name, builder(build))
    holders = [m for k, m in list(sys.modules.items()) if k.startswith("spark_git") and getattr(m, "open_store", None) is real]
    for m in holders:
        monkeypatch.setattr(m, "open_store", counting)
    yield n
    for k, m in list(sys.modules.items()):  # modules first imported during the test bound the counter
        if k.startswith("spark_git") and getattr(m, "open_store", None) is counting:
            m.open_store = real  # type: ignore[attr-defined]


def _once(opens: Opens, repo: Path, *args: str, rc: int = 0, cwd: Path | None = None, input: str | None = None) -> Run:
    opens.calls = opens.built = 0
    # In this process, to be counted; without the fixture's contract check, which opens Stores of its own.
    r = spark_in_process(cwd or repo, *args, env={**os.environ, "SPARK_SESSION_ID": "s1"}, input=input)
    assert r.returncode == rc, r
    opens.seen[" ".join(args)] = (opens.calls, opens.built)
    return r


def test_every_command_opens_one_store(tmp_path: Path, opens: Opens) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config=config(build=[PY, "-c", "pass"], final=[PY, "-c", "pass"], non_interactive=True))
    wt = tmp_path / "repo.tasks" / "t1" / "agents" / "a1" / "code"
    _once(opens, repo, "start", "t1", "--agents", "a1")
    _once(opens, repo, "agent", "add", "t1", "a2", "--why", "a second pair of hands")
    _once(opens, repo, "status")
    _once(opens, repo, "status", "t1")
    _once(opens, repo, "brief", "t1", "--agent", "a1", "--json")
    commit(wt, {"feature.txt": "v1\n"}, "[a1] feature")
    _once(opens, repo, "merge", "t1", "--agent", "a1")
    _once(opens, repo, "merge", "t1", "--all")  # every agent through the whole merge: still one Store
    _once(opens, repo, "report", "t1", "--agent", "a1", "--status", "COMPLETE")
    _once(opens, repo, "who", "t1")
    _once(opens, repo, "log", "t1")
    _once(opens, repo, "audit", "t1")
    _once(opens, repo, "hooks", "check", rc=1)  # no hooks installed: the check fails, after reading every task
    _once(opens, repo, "agent", "run", "t1", "a1", "--client", "claude", rc=3)  # refused at its checks, after opening
    ev = json.dumps({"session_id": "s1", "cwd": str(repo), "hook_event_name": "SessionStart"})
    _once(opens, repo, "--json", "hook", "session-start", input=ev)
    _once(opens, repo, "update", "t1")
    _once(opens, repo, "approve", "t1", "--changes")
    _once(opens, repo, "complete", "t1")
    _once(opens, repo, "queue")
    _once(opens, repo, "queue", "--stats")
    _once(opens, repo, "lock", "main")
    _once(opens, repo, "unlock", "main")
    _once(opens, repo, "doctor")
    _once(opens, repo, "cleanup", "t1")
    _once(opens, repo, "archive", "list")
    _once(opens, repo, "start", "t2", "--agents", "a1")
    _once(opens, repo, "abandon", "t2", "--why", "not needed")
    twice = {cmd: n for cmd, n in opens.seen.items() if n != (1, 1)}
    assert not twice, f"commands that opened (calls, built) other than one Store: {twice}"
    assert len(opens.seen) == 26  # every command above was counted
