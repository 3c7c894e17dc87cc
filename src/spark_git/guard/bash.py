"""The shell grammar: tree-sitter with tree-sitter-bash, loaded only when a shell command is judged
(every other tool call of the hook stays on the standard library). A line that does not parse — an
ERROR or MISSING node anywhere — is not guessed at: `parse` says where it stopped reading."""

from __future__ import annotations

import functools

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node, Parser


@functools.cache
def _parser() -> Parser:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse(line: str) -> Node | str:
    """The syntax tree of `line`, or why it cannot be read."""
    data = line.encode("utf-8", "surrogateescape")
    root = _parser().parse(data).root_node
    if not root.has_error:
        return root
    bad = _first_error(root)
    if bad is None:
        return "it does not parse as shell"
    start = bad.start_point
    near = data[bad.start_byte : bad.start_byte + 40].decode("utf-8", "replace").split("\n")[0] or "the end of the line"
    what = f"`{bad.type}` is missing" if bad.is_missing else f"it stops reading at `{near}`"
    return f"{what} (line {start[0] + 1}, column {start[1] + 1})"


def _first_error(node: Node) -> Node | None:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.is_missing or n.type == "ERROR":
            return n
        stack.extend(reversed([c for c in n.children if c.has_error or c.is_missing]))
    return None


def refusal(why: str) -> str:
    return (f"the hook reads shell with bash's grammar and cannot read this command line: {why}; "
            "write it as plain commands (every quote closed, every `if`/`(`/`{` ended), one per line")
