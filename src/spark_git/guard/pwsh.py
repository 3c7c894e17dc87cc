"""PowerShell lines (Claude Code's PowerShell tool), which bash's grammar does not read: split into
commands at `;` `&&` `||` `|` `&`, with `$(...)` bodies read first, words as shlex reads them and
`$env:X`/`$X` expanded from what the line set. A line shlex cannot split (an unclosed quote) is
refused, never guessed at. Each command is peeled by guard/unwrap.py like a bash one; a `bash -c`
inside is read with bash's grammar. Standard library only."""

from __future__ import annotations

import re
from pathlib import Path

from spark_git.guard import runtime, unwrap
from spark_git.guard.unwrap import Cwd, Seg

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    Bash = Callable[[str, Path, dict[str, str], int, dict[str, str] | None], list[Seg]]  # walk.commands

_DEFAULT = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?[-=]([^}]*)\}")
_VAR = re.compile(r"\$(?:env:)?(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
MAX_DEPTH = 8
POWERSHELL = "__spark_powershell__"


class PwshShell:
    """unwrap.Shell for a PowerShell line."""

    __slots__ = ("bash", "cwd", "depth", "exported", "powershell", "variables")

    def __init__(self, cwd: Cwd, variables: dict[str, str], exported: dict[str, str], depth: int, bash: Bash) -> None:
        self.cwd = cwd
        self.variables = variables
        self.exported = exported
        self.depth = depth
        self.powershell = True
        self.bash = bash  # how a `bash -c` script inside is read

    def nested(self, script: str, same_shell: bool, env: dict[str, str], powershell: bool = False) -> list[Seg]:
        inherit = {k: v for k, v in env.items() if k != POWERSHELL}
        if powershell or same_shell:
            return segments(script, self.cwd.here, {**inherit, POWERSHELL: "1"}, self.bash, self.depth + 1, dict(self.exported))
        return self.bash(script, self.cwd.here, inherit, self.depth + 1, dict(self.exported))


def segments(cmd: str, cwd: Path, env: dict[str, str], bash: Bash, depth: int = 0, exported: dict[str, str] | None = None) -> list[Seg]:
    if depth > MAX_DEPTH:
        return [Seg([], cwd, [], {}, unwrap.unknown(f"commands nested more than {MAX_DEPTH} levels deep (bash -c, eval)"))]
    cmd, inner = _substitutions(_without_comments(cmd.replace("`\n", " ")))
    out: list[Seg] = []
    values: list[str | None] = []
    variables, exported = dict(env), {} if exported is None else exported
    for k, sub in enumerate(inner):  # $(...) runs first, in the same directory
        out += segments(sub, cwd, variables, bash, depth + 1, dict(exported))
        value = runtime.evaluate(sub, cwd)
        if value is not None and runtime.safe(value):
            cmd = cmd.replace(f"__spark_subst__{k}_", value)
        values.append(sub)
    split = _split(cmd)
    if split is None:
        return [*out, Seg([], cwd, [], {}, "the hook cannot split this PowerShell line (a quote is not closed); "
                                          "write it as plain commands with every quote closed")]
    sh = PwshShell(Cwd(cwd, values), variables, exported, depth, bash)
    for words, redirects in split:
        local: dict[str, str] = {}
        words = [expand(w, variables) for w in words]
        while words and unwrap.ASSIGN.match(words[0]):
            m = unwrap.ASSIGN.match(words[0])
            assert m is not None
            local[m.group(1)] = m.group(2)
            words = words[1:]
        out += unwrap.simple(sh, words, local, [expand(r, variables) for r in redirects])
    return out


def expand(word: str, variables: dict[str, str]) -> str:
    if "$" not in word:
        return word
    word = _DEFAULT.sub(lambda m: variables.get(m.group(1)) or m.group(2), word)  # ${X:-default}
    return _VAR.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), word)


def _substitutions(cmd: str) -> tuple[str, list[str]]:
    """`$(...)` bodies, replaced by a numbered placeholder word; nested ones found on recursion."""
    inner: list[str] = []
    res: list[str] = []
    i, n = 0, len(cmd)
    quote = ""
    while i < n:
        c = cmd[i]
        if quote != "'" and c == "$" and cmd.startswith("(", i + 1):
            depth, j = 1, i + 2
            while j < n and depth:
                depth += {"(": 1, ")": -1}.get(cmd[j], 0)
                j += 1
            inner.append(cmd[i + 2 : j - 1])
            res.append(f"__spark_subst__{len(inner) - 1}_")
            i = j
            continue
        if c in "'\"" and (not quote or quote == c):
            quote = "" if quote else c
        res.append(c)
        i += 1
    return "".join(res), inner


def _split(cmd: str) -> list[tuple[list[str], list[str]]] | None:
    import shlex  # only PowerShell lines need it

    lex = shlex.shlex(cmd.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lex.whitespace_split = True
    lex.commenters = ""  # `#` is a comment only at the start of a word; `a#b` is a word
    out: list[tuple[list[str], list[str]]] = [([], [])]
    try:
        toks = list(lex)
    except ValueError:
        return None
    i = 0
    while i < len(toks):
        tok = toks[i]
        words, redirects = out[-1]
        if tok and set(tok) <= set(";&|()<>"):
            if ">" in tok:
                if words and words[-1].isdigit():
                    words.pop()  # the fd number of `2>`
                nxt = toks[i + 1] if i + 1 < len(toks) else ""
                if nxt and not (tok.endswith("&") and (nxt.isdigit() or nxt == "-")):
                    redirects.append(nxt)
                i += 2
                continue
            if "<" in tok:
                i += 2
                continue
            out.append(([], []))
        else:
            words.append(tok)
        i += 1
    return [(w, r) for w, r in out if w or r]


def _without_comments(cmd: str) -> str:
    """The line with its comments cut: `#` at the start of a word, outside quotes, to the end of its line."""
    out: list[str] = []
    quote = ""
    skipping = False
    for i, c in enumerate(cmd):
        if skipping:
            skipping = c != "\n"
            if skipping:
                continue
        elif c in "'\"" and (not quote or quote == c):
            quote = "" if quote else c
        elif c == "#" and not quote and (i == 0 or cmd[i - 1] in " \t\n;|&("):
            skipping = True
            continue
        out.append(c)
    return "".join(out)
