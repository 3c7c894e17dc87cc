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

    return tree_sitter.Parser(tree_sitter.Language(_bash_language()))


def _bash_language() -> object:
    """tree-sitter-bash's compiled grammar, loaded from its extension module without running the
    package's `__init__`: that imports importlib.resources (tempfile, shutil, …) for a highlighting
    query the hook never reads, ~15-30 ms of the +50 ms the hook may take (scripts/bench_hook)."""
    import importlib.machinery
    import importlib.util
    import os

    spec = importlib.util.find_spec("tree_sitter_bash")
    where = (spec.submodule_search_locations or [""])[0] if spec else ""
    files = [os.path.join(where, "_binding" + x) for x in importlib.machinery.EXTENSION_SUFFIXES]
    found = next((importlib.util.spec_from_file_location("tree_sitter_bash._binding", f) for f in files if os.path.exists(f)), None)
    if found is None or found.loader is None:
        import tree_sitter_bash  # an install laid out otherwise: the package's own way

        return tree_sitter_bash.language()
    binding = importlib.util.module_from_spec(found)
    found.loader.exec_module(binding)
    return binding.language()


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
