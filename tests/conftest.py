"""Every test runs sealed from the machine: its own HOME, no system git config, fixed identity and
dates, no inherited session or git location variables."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures.repo import Run, make_repo, sealed_env, spark


def _seal(mp: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for k in list(os.environ):
        if k not in env:
            mp.delenv(k, raising=False)
    for k, v in env.items():
        mp.setenv(k, v)


@pytest.fixture(scope="session", autouse=True)
def sealed_session(tmp_path_factory: pytest.TempPathFactory):
    """Module- and session-scoped fixtures run before the per-test seal: seal them too."""
    with pytest.MonkeyPatch.context() as mp:
        env = sealed_env(tmp_path_factory.mktemp("session-home"))
        _seal(mp, env)
        yield env


@pytest.fixture(autouse=True)
def sealed(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = sealed_env(tmp_path_factory.mktemp("home"))
    _seal(monkeypatch, env)
    return env


@pytest.fixture
def unboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gates without bubblewrap, for tests of something else (the process runner, Ctrl-C, a mutex)
    whose gate talks to the test through a FIFO or file the box keeps it from (tests/test_gate_box.py
    tests the box)."""
    monkeypatch.setenv("SPARK_BWRAP", "")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README.md": "# demo\n", "src/app.py": "print('hi')\n"})


@pytest.fixture
def cli(repo: Path) -> Callable[..., Run]:
    """`cli("start", "t1", session="s1")` runs spark-git in the repo with SPARK_SESSION_ID=session."""

    def run(*args: str, session: str | None = "s1", cwd: Path | None = None, input: str | None = None, env: dict | None = None) -> Run:
        e = dict(os.environ)
        if session is not None:
            e["SPARK_SESSION_ID"] = session
        e.update(env or {})
        return spark(cwd or repo, *args, env=e, input=input)

    return run


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Tests that measure something report it with `record_property("summary", text)`; printed here
    because a test's own output is not shown (and never reaches the terminal from xdist workers).
    The random order's seed is printed even under -q, so a failing order can be replayed."""
    seed = terminalreporter.config.getoption("randomly_seed", default=None)
    if seed is not None:
        terminalreporter.write_line(f"random test order: replay with --randomly-seed={seed}")
    for kind in ("passed", "failed"):
        for rep in terminalreporter.stats.get(kind, []):
            for name, value in getattr(rep, "user_properties", []):
                if name == "summary" and getattr(rep, "when", "call") == "call":
                    terminalreporter.write_line(str(value))
