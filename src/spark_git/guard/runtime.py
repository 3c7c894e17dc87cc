"""What a command line computes at run time, as far as the hook can know it: the value of a few
substitutions agents use for places (`$(pwd)`, `$(git rev-parse --show-toplevel)`, `--git-dir`,
`--git-common-dir`, `$(mktemp)`), the tools whose output `eval` may run (`spark-git env`,
`ssh-agent`, …), and the commands a `python -c` / `node -e` script starts. Anything else computed
stays unknown, and guard/shell.py refuses a command word it cannot know. Standard library only."""

from __future__ import annotations

import os
import re
from pathlib import Path

from spark_git.guard import gitrefs

# `eval "$(TOOL …)"` of these prints shell variable settings, nothing else (spark-git's own first).
ENV_EMITTERS = (
    ("spark-git", "env"), ("ssh-agent",), ("direnv", "export"), ("pyenv", "init"), ("rbenv", "init"), ("nodenv", "init"),
    ("brew", "shellenv"), ("opam", "env"), ("dircolors",), ("keychain", "--eval"), ("luarocks", "path"), ("fnm", "env"),
    ("conda", "shell.bash", "hook"), ("mise", "activate"), ("zoxide", "init"),
)
_SAFE = re.compile(r"^[\w./@+,:=~-]+$")
# Compiled where used (re caches it): a hook process that judges no script code never pays for it.
_SPAWN = (
    r"(?:\bos\.(?:system|popen|exec\w*|spawn\w*|posix_spawn\w*)|\bsubprocess\.\w+|\bpty\.spawn|\bchild_process\.\w+|\bIO\.popen"
    r"|\bOpen3\.\w+|(?<!\w)(?:execSync|execFileSync|spawnSync|spawn|execFile)|(?<![.\w])(?:Popen|check_output|check_call|exec|system))\s*\("
)
_STRING = re.compile(r"""(['"])((?:\\.|(?!\1).)*)\1""")


def _words(text: str) -> list[str]:
    import shlex

    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def evaluate(inner: str, here: Path) -> str | None:
    """The value `$(inner)` has when run in `here`, for the place-naming commands agents use; None
    for anything else."""
    words = _words(inner.strip())
    if words[:1] == ["pwd"] and len(words) == 1:
        return str(here)
    if words[:1] == ["mktemp"]:
        return os.path.join(os.environ.get("TMPDIR", "/tmp"), "spark-mktemp-XXXXXX")
    if words[:1] == ["dirname"] and len(words) == 2 and _SAFE.match(words[1]):
        return os.path.dirname(words[1]) or "."
    if words[:1] != ["git"]:
        return None
    i = 1
    while i + 1 < len(words) and words[i] == "-C":
        here = Path(os.path.expanduser(words[i + 1])) if os.path.isabs(os.path.expanduser(words[i + 1])) else here / words[i + 1]
        i += 2
    if words[i : i + 1] != ["rev-parse"] or len(words) not in (i + 2, i + 3):
        return None
    gitdir = gitrefs.gitdir_of(here)
    if gitdir is None:
        return None
    ask = words[i + 1]
    if ask == "--git-path" and len(words) == i + 3:
        return str(gitdir / words[i + 2])  # inside the git dir (or the common dir): where it lands is .git either way
    if len(words) != i + 2:
        return None
    if ask == "--show-toplevel":
        return next((str(c) for c in (here, *here.parents) if (c / ".git").exists()), None)
    if ask in ("--git-dir", "--absolute-git-dir"):
        return str(gitdir)
    if ask == "--git-common-dir":
        try:
            rel = (gitdir / "commondir").read_text().strip()
        except OSError:
            return str(gitdir)
        return os.path.realpath(rel if os.path.isabs(rel) else gitdir / rel)
    return None


def safe(value: str) -> bool:
    """A value that can stand in the command line as one word."""
    return bool(_SAFE.match(value))


def emits_env(inner: str) -> bool:
    words = [os.path.basename(w) if i == 0 else w for i, w in enumerate(_words(inner.strip()))]
    return any(tuple(words[: len(e)]) == e for e in ENV_EMITTERS)


# Perl, Ruby and PHP start commands without parentheses too: `system "…"`, `exec '…'`, backticks, qx{…};
# awk pipes into a command (`print | "cmd"`) or reads one (`"cmd" | getline`).
_BARE_SPAWN = r"""\b(?:system|exec)\s+(['"])((?:\\.|(?!\1).)*)\1|`([^`]*)`|\bqx\s*([{(\[<'"/|])"""
_QX_CLOSE = {"{": "}", "(": ")", "[": "]", "<": ">"}
_AWK_PIPES = r"""\|\s*"([^"]*)"|"([^"]*)"\s*\|\s*getline"""


def spawned(code: str, lang: str = "") -> list[str] | None:
    """The command lines a script's code starts (`os.system('…')`, `subprocess.run(['git', …])`,
    `execSync('…')`; `lang` perl/ruby/php: `system "…"`, backticks, qx{…}; awk: pipes), each as one
    shell line; None when it starts none. A start whose command is not written literally gives
    "__spark_subst__" (unknown)."""
    out = _bare(code, lang)
    for m in re.finditer(_SPAWN, code):
        args = _call_args(code, m.end()).strip()
        if args.startswith("["):  # an argv list: every element a literal, or unknown
            body = args[1 : args.find("]")] if "]" in args else args[1:]
            items = [x.strip() for x in body.split(",") if x.strip()]
            literal = [_STRING.fullmatch(x) for x in items]
            out.append(" ".join(_quote(x.group(2)) for x in literal if x) if items and all(literal) else "__spark_subst__")
            continue
        first = _STRING.match(args)
        if first is None or args[first.end() :].lstrip()[:1] not in ("", ","):
            out.append("__spark_subst__")  # `os.system(sys.stdin.read())`, `'git ' + x`: computed
        elif m.group(0).lstrip(".").startswith(("spawn", "execFile")):  # node: spawnSync('git', ['…'])
            out.append(" ".join(_quote(x.group(2)) for x in _STRING.finditer(args)))
        else:
            out.append(first.group(2))
    return out or None


def _bare(code: str, lang: str) -> list[str]:
    out: list[str] = []
    if lang in ("awk", "gawk", "mawk", "nawk", "busybox-awk"):
        return [a or b for a, b in re.findall(_AWK_PIPES, code)]
    if lang not in ("perl", "ruby", "php"):
        return out
    for m in re.finditer(_BARE_SPAWN, code):
        if m.group(4):  # qx: up to its closing delimiter
            close = _QX_CLOSE.get(m.group(4), m.group(4))
            end = code.find(close, m.end())
            out.append(code[m.end() : end if end >= 0 else len(code)])
        else:
            out.append(m.group(2) if m.group(1) else m.group(3))
    return [_literal_or_unknown(x) for x in out]


def _literal_or_unknown(cmd: str) -> str:
    return "__spark_subst__" if re.search(r"[$@]\w|\$\{|#\{", cmd) else cmd  # interpolated: computed at run time

def _call_args(code: str, start: int) -> str:
    depth, i = 1, start
    while i < len(code) and depth:
        depth += {"(": 1, ")": -1}.get(code[i], 0)
        i += 1
    return code[start : i - 1]


def _quote(s: str) -> str:
    import shlex

    return shlex.quote(s)
