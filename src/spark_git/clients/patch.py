"""The files a Codex `apply_patch` envelope touches. The format (`*** Begin Patch`, then per file
`*** Add File: P`, `*** Update File: P` optionally followed by `*** Move to: Q`, `*** Delete File: P`,
`*** End Patch`) names every path on a header line of its own; hunk lines start with `+`, `-` or
`@@` (or a space: a context line that looks like a header is judged too, which can only block more). Standard library only (runs before every tool call)."""

from __future__ import annotations

from spark_git.guard.calls import BadEvent

BEGIN = "*** Begin Patch"
TOOLS = ("apply_patch", "applypatch")  # the program a shell command feeds a patch to
HEADERS = ("*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:")


def is_patch(text: str) -> bool:
    return BEGIN in text


def touched(text: str) -> tuple[str, ...]:
    """Every path the patch adds, updates, deletes, or moves from and to, in order, each once."""
    if not is_patch(text):
        raise BadEvent("apply_patch input has no '*** Begin Patch'")
    out: list[str] = []
    for raw in text[text.index(BEGIN):].splitlines():
        line = raw.lstrip()  # indented headers count too: a lenient parser may accept them (fail closed)
        header = next((h for h in HEADERS if line.startswith(h)), None)
        if header is None:
            continue
        path = line[len(header):].strip()
        if not path:
            raise BadEvent(f"apply_patch: {header!r} names no path")
        if path not in out:
            out.append(path)
    return tuple(out)


def from_shell(command: str) -> str | None:
    """The patch of a shell command that only feeds one to `apply_patch` (Codex runs it that way too:
    `apply_patch <<'EOF' … EOF`); None for any other command."""
    head = command.lstrip().split(None, 1)
    if not head or head[0] not in TOOLS or not is_patch(command):
        return None
    return command
