"""Shell words as bash expands them, from tree-sitter-bash word nodes: quoting (`'…'`, `"…"`, `$'…'`,
backslashes), variables the line set (`$X`, `${X}`, `${X:-default}`), brace expansion, `~`, word
splitting of unquoted values and globs (matched on disk, as bash would). A value the hook cannot know
stays as its text: `$NAME`, or `__spark_subst__<k>_` for the k-th command substitution; such a word is
neither split nor globbed. Node kinds the hook does not read raise Unreadable."""

from __future__ import annotations

import glob
import itertools
import os
import re
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from tree_sitter import Node

# The kind of each character of a word being expanded.
QUOTED, BARE, VALUE, UNKNOWN = 0, 1, 2, 3  # quoted text, unquoted text, an unquoted known value, an unknown value
Chars = list[tuple[str, int]]
_LITERAL = {"word", "number", "extglob_pattern", "regex", "test_operator", "brace_expression", "special_variable_name", "variable_name"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "v": "\v",
            "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)", re.S)


class Unreadable(ValueError):
    """A part of the line the hook does not read."""


class Context:
    """What expansion asks of the reader: variables, and the value of a command substitution (which
    the reader judges as it goes)."""

    __slots__ = ("here", "substitute", "variables")

    def __init__(self, variables: dict[str, str], here: Path, substitute: Callable[[Node], str | None]) -> None:
        self.variables = variables
        self.here = here
        self.substitute = substitute  # the node's value, or None when unknown; it returns the marker itself


def text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogateescape")


def expand(node: Node, ctx: Context) -> list[str]:
    """The words one argument node becomes."""
    if node.type == "string" and len(node.named_children) == 1 and text(node) == '"$@"' and "@" in ctx.variables:
        return ctx.variables["@"].split("\0") if ctx.variables["@"] else []  # "$@": one word per argument
    chars = chars_of(node, ctx)
    if any(k == UNKNOWN for _, k in chars):
        return ["".join(c for c, _ in chars)]
    out: list[str] = []
    for word in _braces(chars):
        for field in _split(_tilde(word, ctx.variables)):
            out += _glob(field, ctx.here)
    return out


def one(node: Node, ctx: Context) -> str:
    """The value of a word that is not split or globbed (an assignment's value, a redirection's target)."""
    chars = chars_of(node, ctx)
    return "".join(c for c, _ in (_tilde(chars, ctx.variables) if not any(k == UNKNOWN for _, k in chars) else chars))


def chars_of(node: Node, ctx: Context) -> Chars:
    t = node.type
    if t in _LITERAL:
        return _unescaped(text(node))
    if t == "raw_string":
        return [(c, QUOTED) for c in text(node)[1:-1]]
    if t == "ansi_c_string":
        return [(c, QUOTED) for c in ansi_c(text(node)[2:-1])]
    if t in ("string", "translated_string"):
        return [(c, QUOTED if k in (BARE, VALUE) else k) for c, k in _pieces(node, ctx, _in_quotes)]
    if t == "concatenation":
        return _pieces(node, ctx, _unescaped)
    if t in ("simple_expansion", "expansion"):
        return _variable(node, ctx)
    if t in ("command_substitution", "process_substitution"):
        value = ctx.substitute(node)
        return [(c, VALUE) for c in value] if value is not None and "__spark_subst__" not in value else [(c, UNKNOWN) for c in value or "$(…)"]
    if t == "arithmetic_expansion":
        for sub in _substitutions(node):
            ctx.substitute(sub)
        return [(c, UNKNOWN) for c in text(node)]
    raise Unreadable(f"`{text(node)}` ({t})")


def _pieces(node: Node, ctx: Context, literal: Callable[[str], Chars]) -> Chars:
    """A node whose children are word parts, and the text between them (a string's content)."""
    out: Chars = []
    raw = node.text or b""
    pos = node.start_byte + (1 if node.type == "string" else 2 if node.type == "translated_string" else 0)
    end = node.end_byte - (1 if node.type in ("string", "translated_string") else 0)
    for child in node.children:
        if child.start_byte < pos or child.end_byte > end or child.type == "string_content":
            continue
        out += literal(raw[pos - node.start_byte : child.start_byte - node.start_byte].decode("utf-8", "surrogateescape"))
        out += chars_of(child, ctx)
        pos = child.end_byte
    out += literal(raw[pos - node.start_byte : end - node.start_byte].decode("utf-8", "surrogateescape"))
    return out


def _unescaped(s: str) -> Chars:
    """Unquoted text: a backslash quotes the next character (and a backslash-newline vanishes)."""
    out: Chars = []
    i = 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            if s[i + 1] != "\n":
                out.append((s[i + 1], QUOTED))
            i += 2
            continue
        out.append((s[i], BARE))
        i += 1
    return out


def _in_quotes(s: str) -> Chars:
    """Text between double quotes: a backslash quotes only $ ` " \\ and newline."""
    out: Chars = []
    i = 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in '$`"\\\n':
            if s[i + 1] != "\n":
                out.append((s[i + 1], QUOTED))
            i += 2
            continue
        out.append((s[i], QUOTED))
        i += 1
    return out


def ansi_c(body: str) -> str:
    """The value of `$'…'`."""

    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] in "xuU" and len(e) > 1:
            return chr(int(e[1:], 16))
        if e[0] in "01234567":
            return chr(int(e, 8) & 0xFF)
        if e[0] == "c" and len(e) == 2:
            return chr(ord(e[1].upper()) ^ 0x40)
        return _ESCAPES.get(e, "\\" + e)

    return _ANSI.sub(one, body)


def _variable(node: Node, ctx: Context) -> Chars:
    """`$X`, `${X}`, `${X:-word}`, `${X-word}`, `${X:=word}`: known when X (or the default) is; any other
    form (`${#X}`, `${X/a/b}`, `$?`) is unknown."""
    kind = UNKNOWN
    names = [c for c in node.named_children if c.type in ("variable_name", "special_variable_name")]
    ops = [text(c) for c in node.children if not c.is_named and text(c) not in ("$", "${", "}")]
    value: str | None = None
    if len(names) == 1 and not ops and len(node.named_children) == 1:
        value = ctx.variables.get(text(names[0]))
        value = value.replace("\0", " ") if value is not None and text(names[0]) in ("@", "*") else value
        kind = VALUE
    elif len(names) == 1 and ops in (["-"], [":-"], ["="], [":="]):
        value = ctx.variables.get(text(names[0]))
        rest = [c for c in node.named_children if c is not names[0]]
        if (not value if ":" in ops[0] else value is None) and len(rest) <= 1:
            default = "".join(c for c, _ in chars_of(rest[0], ctx)) if rest else ""
            value = None if "$" in default or "__spark_subst__" in default else default
        kind = VALUE
    if value is None or "\0" in value:
        return [(c, UNKNOWN) for c in text(node)]
    return [(c, kind) for c in value]


def _substitutions(node: Node) -> list[Node]:
    found: list[Node] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("command_substitution", "process_substitution"):
            found.append(n)
            continue
        stack.extend(reversed(n.children))
    return found


def substitutions(node: Node) -> list[Node]:
    """The command and process substitutions anywhere inside `node` (not nested ones: those run
    when their outer one is read)."""
    return _substitutions(node)


# -- brace expansion, ~, splitting, globs --------------------------------------------------------


def _braces(chars: Chars, depth: int = 0) -> list[Chars]:
    """`a{b,c}d` -> abd acd; `{1..3}` -> 1 2 3; only unquoted braces count."""
    if depth > 8:
        return [chars]
    for i, (c, k) in enumerate(chars):
        if c != "{" or k != BARE:
            continue
        close, commas = _matching(chars, i)
        if close < 0:
            continue
        inner = chars[i + 1 : close]
        if commas:
            cuts = [i, *commas, close]
            alts = [chars[a + 1 : b] for a, b in itertools.pairwise(cuts)]
        else:
            seq = _sequence("".join(c for c, _ in inner)) if all(k == BARE for _, k in inner) else None
            if seq is None:
                continue
            alts = [[(x, QUOTED) for x in s] for s in seq]
        return [w for alt in alts for w in _braces(chars[:i] + alt + chars[close + 1 :], depth + 1)]
    return [chars]


def _matching(chars: Chars, start: int) -> tuple[int, list[int]]:
    level, commas = 0, list[int]()
    for j in range(start, len(chars)):
        c, k = chars[j]
        if k != BARE:
            continue
        if c == "{":
            level += 1
        elif c == "}":
            level -= 1
            if level == 0:
                return j, commas
        elif c == "," and level == 1:
            commas.append(j)
    return -1, []


def _sequence(s: str) -> list[str] | None:
    m = re.fullmatch(r"(-?\d+)\.\.(-?\d+)(?:\.\.(-?\d+))?|([A-Za-z])\.\.([A-Za-z])", s)
    if m is None:
        return None
    if m.group(4):
        a, b = ord(m.group(4)), ord(m.group(5))
        return [chr(x) for x in (range(a, b + 1) if a <= b else range(a, b - 1, -1))]
    a, b, step = int(m.group(1)), int(m.group(2)), abs(int(m.group(3) or 1)) or 1
    if abs(b - a) // step > 256:
        return None
    return [str(x) for x in (range(a, b + 1, step) if a <= b else range(a, b - 1, -step))]


def _tilde(chars: Chars, variables: dict[str, str]) -> Chars:
    if not chars or chars[0] != ("~", BARE):
        return chars
    end = next((i for i, (c, _) in enumerate(chars) if c == "/"), len(chars))
    if any(k != BARE for _, k in chars[:end]):
        return chars
    head = "".join(c for c, _ in chars[:end])
    home = variables.get("HOME") if head == "~" else None
    value = home if home is not None else os.path.expanduser(head)
    return [(c, QUOTED) for c in value] + chars[end:]


def _split(chars: Chars) -> list[Chars]:
    """Fields: unquoted values split at blanks; a word of nothing but an empty unquoted value vanishes."""
    fields: list[Chars] = [[]]
    for c, k in chars:
        if k == VALUE and c in " \t\n":
            if fields[-1]:
                fields.append([])
            continue
        fields[-1].append((c, k))
    keep = [f for f in fields if f]
    if not keep and chars and all(k != VALUE for _, k in chars):
        return [[]]  # "" is a word
    return keep if keep or not chars else []


def _glob(chars: Chars, here: Path) -> list[str]:
    word = "".join(c for c, _ in chars)
    if not any(c in "*?[" and k in (BARE, VALUE) for c, k in chars):
        return [word]
    pattern = "".join(c if k in (BARE, VALUE) else glob.escape(c) for c, k in chars)
    if not os.path.isabs(pattern) and not here.is_dir():
        return [word]
    found = sorted(glob.glob(pattern, root_dir=None if os.path.isabs(pattern) else here))
    return found or [word]
