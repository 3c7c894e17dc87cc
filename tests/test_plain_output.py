"""Human output written without rich (one-line results and errors to a non-terminal) is byte for
byte what rich writes; anything rich would change goes through rich."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from typing import Any

import pytest

from spark_git.cli import common
from spark_git.core.errors import BadInput, Blocked

TEXTS = [
    "a1 has nothing new for t1; nothing changed",
    "[a1] work in [bold]brackets[/bold] and \\[escaped\\] and a trailing backslash \\",
    "unicode → ✓ 日本語 wide",
    "x" * 450,
    "colon: here, and another: there",
    "a time 12:30:00 and a:b:c",
    "an emoji code :smile: and :thumbs_up:",
    "tab\there",
    "trailing space ",
    "two\nlines",
    "control \x07 bell",
]
PLAIN = [TEXTS[0], *TEXTS[2:5]]  # the others go through rich


def _both(monkeypatch: pytest.MonkeyPatch, draw: Callable[[], None], stream_name: str) -> tuple[str, str, bool]:
    """(written with the plain path allowed, written by rich only, plain path taken)."""
    took: list[int] = []
    real = common._write_plain

    def counted(*a: Any) -> None:
        took.append(1)
        real(*a)

    outs = []
    for force_rich in (False, True):
        buf = io.StringIO()
        monkeypatch.setattr(sys, stream_name, buf)
        monkeypatch.setattr(common, "_write_plain", counted)
        if force_rich:
            monkeypatch.setattr(common, "_plain", lambda stream, texts: False)
        draw()
        monkeypatch.undo()
        outs.append(buf.getvalue())
        if not force_rich:
            plain_taken = bool(took)
    return outs[0], outs[1], plain_taken


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("status", ["OK", "BLOCKED", "FAIL"])
def test_result_lines_are_what_rich_writes(monkeypatch: pytest.MonkeyPatch, text: str, status: str) -> None:
    r = common.Result(text, status=status, next=[f"spark-git merge t1 --agent a1  # {text}", "spark-git status"])
    plain, rich, took = _both(monkeypatch, lambda: common._render(common.AppState(), r), "stdout")
    assert plain == rich
    assert took == (text in PLAIN)


@pytest.mark.parametrize("text", TEXTS)
def test_error_lines_are_what_rich_writes(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    for e in (
        Blocked(text, hint=f"hint {text}", next=["spark-git doctor t1"], details={"unmet": [text, "b"], "stderr": "x", "n": 3}),
        BadInput(text),
    ):
        plain, rich, took = _both(monkeypatch, lambda e=e: common._render_error(common.AppState(), e), "stderr")
        assert plain == rich
        assert took == (text in PLAIN)


def test_a_terminal_or_forced_colour_gets_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert not common._plain(Tty(), ["x"])
    assert common._plain(io.StringIO(), ["x"])
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not common._plain(io.StringIO(), ["x"])
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert not common._plain(io.StringIO(), ["x"])
