"""Human output written without rich (one-line results and errors to a non-terminal) is byte for
byte what rich writes; anything rich would change goes through rich."""

from __future__ import annotations

import io
import sys

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


def _both(monkeypatch: pytest.MonkeyPatch, draw, stream_name: str) -> tuple[str, str, bool]:
    """(written by the plain path or rich as chosen, written by rich only, plain path taken)."""
    outs = []
    for force_rich in (False, True):
        buf = io.StringIO()
        monkeypatch.setattr(sys, stream_name, buf)
        if force_rich:
            monkeypatch.setattr(common, "_plain", lambda stream, texts: False)
        took = []
        real = common._write_plain
        monkeypatch.setattr(common, "_write_plain", lambda *a: (took.append(1), real(*a)))
        draw()
        monkeypatch.undo()
        outs.append((buf.getvalue(), bool(took)))
    return outs[0][0], outs[1][0], outs[0][1]


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
