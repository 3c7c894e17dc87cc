"""Text that fits the terminal: tables whose widest cells are cut in the middle (the ends of a branch
name or a session id tell them apart), and lines wrapped only between words. Plain strings in and out:
widths are counted before any styling."""

from __future__ import annotations

import os
import sys
import textwrap

MIN_CELL = 6  # a column is never cut narrower than this
GAP = "  "


def width() -> int | None:
    """The columns to fit: COLUMNS when set, else the terminal's; None when stdout is not a terminal
    (agents and pipes get every character)."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        if sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns or None  # 0: a pseudo-terminal nobody sized
    except (OSError, ValueError):
        pass
    return None


def middle(text: str, w: int) -> str:
    """`text` cut to `w` characters by dropping its middle (an ellipsis marks the cut)."""
    if len(text) <= w:
        return text
    if w <= 1:
        return text[:w]
    head = (w - 1 + 1) // 2
    tail = w - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def table(rows: list[list[str]], w: int | None, *shrink: dict[int, int]) -> list[str]:
    """`rows` (the first is the header) as lines of at most `w` characters (see `widths`)."""
    return render(rows, widths(rows, w, *shrink))


def widths(rows: list[list[str]], w: int | None, *shrink: dict[int, int]) -> list[int]:
    """Column widths that fit `w`. Each `shrink` stage (column index -> the width it keeps) gives up
    characters in turn, within a stage the column with most to spare first; then every column of the
    stages down to MIN_CELL. No stage: every column may go down to MIN_CELL."""
    if not rows:
        return []
    n = len(rows[0])
    out = [max(len(r[i]) for r in rows) for i in range(n)]
    if w is None:
        return out
    stages = list(shrink) or [dict.fromkeys(range(n), MIN_CELL)]
    every = {c: MIN_CELL for stage in stages for c in stage}
    over = sum(out) + len(GAP) * (n - 1) - w
    for floor in [*stages, every]:
        while over > 0:
            i = max(floor, key=lambda c: out[c] - floor[c])
            if out[i] <= floor[i]:
                break
            out[i] -= 1
            over -= 1
    return out


def render(rows: list[list[str]], ws: list[int]) -> list[str]:
    """Each row with its cells cut in the middle to `ws` and padded (the last cell is not padded)."""
    last = len(ws) - 1
    return [GAP.join(middle(c, ws[i]) if i == last else middle(c, ws[i]).ljust(ws[i]) for i, c in enumerate(r)).rstrip() for r in rows]


def items(parts: list[str], w: int) -> str:
    """As many whole `parts` as fit in `w` characters, joined by "; ", then "+N more" for the rest; a
    first part longer than `w` is cut in its middle."""
    if not parts:
        return ""
    out = ""
    for k, p in enumerate(parts):
        more = f" +{len(parts) - k - 1} more" if k < len(parts) - 1 else ""
        cand = (out + "; " if out else "") + p
        if len(cand) + len(more) > w:
            rest = f"+{len(parts) - k} more"
            return f"{out}; {rest}" if out and len(out) + 2 + len(rest) <= w else (out or middle(p, w - len(more)) + more)
        out = cand
    return out


def wrap(text: str, w: int | None, indent: str = "", hang: str = "    ") -> list[str]:
    """`text` as lines of at most `w` characters, broken only between words (a word longer than a
    line keeps its own line, whole)."""
    if w is None or len(indent) + len(text) <= w:
        return [indent + text]
    return textwrap.wrap(text, width=w, initial_indent=indent, subsequent_indent=indent + hang, break_long_words=False, break_on_hyphens=False)


def fields(parts: list[str], w: int | None, indent: str = "", hang: str = "  ") -> list[str]:
    """`parts` joined by two spaces, a new line (indented by `hang`) only between parts."""
    lines = [indent + parts[0]] if parts else []
    for p in parts[1:]:
        if w is not None and len(lines[-1]) + len(GAP) + len(p) > w:
            lines.append(indent + hang + p)
        else:
            lines[-1] += GAP + p
    return lines
