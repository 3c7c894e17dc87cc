"""hook worktree-create waits for Claude Code to take a subagent's sandbox grant up (clients/claude/settle.py):
what it watches (clients/reload.py, Linux inotify) and when it stops waiting. The real thing, with
Claude Code 2.1.328: tests/test_real_claude.py::test_a_worktree_subagent_writes_and_commits_in_its_own_worktree."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.repo import make_repo, sealed_env, spark

from spark_git.clients import extras, registry, reload
from spark_git.clients.claude import settle as wtsettle
from spark_git.core.layout import Layout
from spark_git.state.backends import open_store
from spark_git.state.store import Store

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's; elsewhere settle says it cannot tell")


def files(tmp_path: Path) -> tuple[Path, Path]:
    dotgit, settings = tmp_path / "sub" / ".git", tmp_path / "a" / "settings.local.json"
    for p in (dotgit, settings):
        p.parent.mkdir()
        p.write_text("x\n")
    return dotgit, settings


def read_by_another_process(path: Path) -> None:
    subprocess.run(["cat", str(path)], check=True, capture_output=True)


def test_a_read_by_another_process_is_seen_and_nothing_else_is(tmp_path: Path) -> None:
    dotgit, settings = files(tmp_path)
    w = reload.watch([dotgit, settings])
    assert w is not None
    with w:
        assert w.next_read(0.1) is None
        dotgit.with_name("other").write_text("y\n")  # neither a read nor a watched file
        (dotgit.parent / ".git").stat()
        assert w.next_read(0.1) is None
        read_by_another_process(settings)
        read_by_another_process(dotgit)
        seen = list(iter(lambda: w.next_read(0.5), None))  # an open and a read each, in order
        assert set(seen) == {settings, dotgit} and seen.index(dotgit) > seen.index(settings), seen


def test_the_rebuild_reading_the_worktree_ends_the_wait(tmp_path: Path) -> None:
    dotgit, settings = files(tmp_path)
    with reload.watch([dotgit, settings]) as w:  # type: ignore[union-attr]
        read_by_another_process(settings)  # Claude Code re-reads its settings, then rebuilds
        read_by_another_process(dotgit)
        start = time.monotonic()
        assert wtsettle._rebuilt(w, dotgit, settings, timeout=5, grace=5)
        assert time.monotonic() - start < 2


def test_settings_read_without_the_worktree_ends_the_wait_after_the_grace(tmp_path: Path) -> None:
    """A Claude Code that builds its sandbox without reading the .git file: the re-read settings are
    the last sign, and the wait ends `grace` after it, not at the timeout."""
    dotgit, settings = files(tmp_path)
    with reload.watch([dotgit, settings]) as w:  # type: ignore[union-attr]
        read_by_another_process(settings)
        start = time.monotonic()
        assert wtsettle._rebuilt(w, dotgit, settings, timeout=30, grace=0.3)
        assert time.monotonic() - start < 5


def test_no_reload_at_all_is_a_timeout(tmp_path: Path) -> None:
    dotgit, settings = files(tmp_path)
    with reload.watch([dotgit, settings]) as w:  # type: ignore[union-attr]
        assert not wtsettle._rebuilt(w, dotgit, settings, timeout=0.3, grace=0.1)


def test_another_clients_worktree_is_not_waited_for(repo: Path) -> None:
    start = time.monotonic()
    assert extras.of(registry.get("codex")).settle(*_opened(repo), repo) is None  # only Claude Code's extras wait
    assert time.monotonic() - start < 5


def test_an_agents_subagent_worktree_is_answered_once_its_grant_is_read(tmp_path: Path) -> None:
    """Agent a's session asks for a worktree: the hook answers as soon as "Claude Code" (here: this
    test, reading each new worktree's .git file) has read it after the hook bumped a's settings, and
    well before its 20 s limit; with nobody reading, settle() gives up with a note."""
    env = sealed_env(tmp_path / "home", SPARK_SESSION_ID="s1")
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n"}, config='protocol = "light"\n')
    for args in (("hooks", "install", "--client", "claude", "--scope", "local"), ("start", "t1", "--agents", "a")):
        assert spark(repo, *args, env=env).returncode == 0
    agents = tmp_path / "repo.tasks" / "t1" / "agents"
    hook_env = {k: v for k, v in env.items() if k != "SPARK_SESSION_ID"}
    start = {"session_id": "sess-a", "cwd": str(agents / "a" / "code"), "hook_event_name": "SessionStart", "source": "startup"}
    assert spark(agents / "a" / "code", "hook", "session-start", input=json.dumps(start), env=hook_env, process=True).returncode == 0
    ev = {**start, "hook_event_name": "WorktreeCreate", "name": "helper"}
    (tmp_path / "event.json").write_text(json.dumps(ev))
    began = time.monotonic()
    with (tmp_path / "event.json").open() as stdin:
        p = subprocess.Popen([sys.executable, "-m", "spark_git", "hook", "worktree-create", "--client", "claude"], cwd=agents / "a" / "code",
                             env=hook_env, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sub = agents / "helper" / "code"
    while p.poll() is None and time.monotonic() - began < 30:
        if (sub / ".git").is_file():
            (sub / ".git").read_text()
        time.sleep(0.05)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and out == f"{sub}\n" and "did not take up" not in err, (out, err)
    assert time.monotonic() - began < wtsettle.TIMEOUT
    assert str(sub) in json.loads((agents / "a" / "code" / ".claude/settings.local.json").read_text())["permissions"]["additionalDirectories"]
    note = wtsettle.settle(*_opened(repo), sub, timeout=0.5)
    assert note is not None and "did not take up the sandbox grant" in note, note


def _opened(repo: Path) -> tuple[Layout, Store]:
    layout = Layout.discover(repo)
    return layout, open_store(layout)
