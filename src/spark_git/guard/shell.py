"""Shell commands in the hook policy. A command line is taken apart into every simple command it runs
— each line, `;` `&&` `||` `|` `&`, subshells, `$(...)` and backticks, `bash -c '...'`, `eval`, and
behind wrappers (`sudo`, `env`, `nice`, `timeout`, `xargs`, `command`, `exec`, ...) — with the
directory it runs in (`cd`, `pushd`, `git -C`), its variable assignments and the files it redirects
into. Each is then judged: git commands in guard/gitcmd.py, file writes in guard/shwrites.py.
Standard library only (runs before every tool call).

A guardrail against what agents type, not a sandbox: scripts, aliases and computed names are not
looked into."""

from __future__ import annotations

import os
import re
from pathlib import Path

from spark_git.core import paths
from spark_git.guard import gitcmd, runtime, shwrites
from spark_git.guard.calls import Decision
from spark_git.guard.writes import Who, keys_refused

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_DEFAULT = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?[-=]([^}]*)\}")
_VAR = re.compile(r"\$(?:env:)?(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "fish", "pwsh", "powershell"}
# wrapper -> its options that take a value; the wrapped command follows the options
_WRAPPERS: dict[str, tuple[str, ...]] = {
    "sudo": ("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"), "doas": ("-u", "-C"),
    "env": ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"), "command": (), "exec": ("-a",), "builtin": (),
    "nohup": (), "time": ("-f", "-o"), "nice": ("-n", "--adjustment"), "ionice": ("-c", "-n", "-p"), "setsid": (),
    "stdbuf": ("-i", "-o", "-e"), "timeout": ("-s", "--signal", "-k", "--kill-after"), "chronic": (), "unbuffer": (),
    # GNU's -i, -e and -l take their value attached or not at all: the next word is the command
    "xargs": ("-I", "-n", "-P", "-d", "-a", "-L", "-s", "-E", "--max-args", "--max-procs", "--delimiter", "--arg-file"),
    "flock": ("-w", "-E", "-c"), "watch": ("-n", "-d"), "caffeinate": (), "strace": ("-o", "-e", "-p"), "ltrace": ("-o",),
    "noglob": (), "then": (), "do": (), "else": (), "if": (), "while": (), "until": (), "!": (),
}
_NEEDS_POSITIONAL = {"timeout": 1, "flock": 1}  # positional arguments before the wrapped command


class Seg:
    """One simple command: its words (assignments and wrappers removed), the directory it runs in,
    the files it redirects output into, and the environment its assignments set."""

    __slots__ = ("env", "here", "redirects", "refuse", "words")

    def __init__(self, words: list[str], here: Path, redirects: list[str], env: dict[str, str], refuse: str = "") -> None:
        self.words = words
        self.here = here
        self.redirects = redirects
        self.env = env
        self.refuse = refuse  # why the hook cannot know what this runs ("" when it can)


class Cwd:
    """Where the shell stands while a command line runs: `cd`, `cd -`, `pushd`/`popd`."""

    __slots__ = ("here", "old", "stack", "values")

    def __init__(self, here: Path, values: list[str | None]) -> None:
        self.here = here
        self.old = gitcmd.UNKNOWN_DIR  # `cd -` before any cd: the shell's previous directory, unknown here
        self.stack: list[Path] = []
        self.values = values  # the text of each $(...) of this line (for `eval "$(spark-git env …)"`)


# Set among a command line's variables while it is PowerShell (a bare `$x` is a value there, not a
# command); carried into nested scripts with the other variables.
POWERSHELL = "__spark_powershell__"
MAX_DEPTH = 8  # nested `bash -c` / `eval` levels judged; deeper is refused
_SUBST = re.compile(r"__spark_subst__(\d+)_")


def decide_shell(who: Who, cwd: Path, cmd: str, powershell: bool = False) -> Decision:
    if who.agent and any(s in os.path.expandvars(cmd) for s in _keys_spelled()):  # `cat < key` too (input redirections are no words)
        return keys_refused(who.me.agent or "", cmd)
    for seg in segments(cmd, cwd, {**who.env, POWERSHELL: "1"} if powershell else who.env):
        d = judge(who, seg)
        if d is not None:
            return d
    return Decision(True, "spark-git: allowed: command does not move protected branches or write outside the caller's territory")


def judge(who: Who, seg: Seg) -> Decision | None:
    if seg.refuse:
        return Decision(False, f"spark-git: blocked: {seg.refuse}; the hook cannot know what it runs — run the plain command instead")
    for target in seg.redirects:
        d = shwrites.check_target(who, seg.here, target, f"> {target}")
        if d is not None:
            return d
    if not seg.words:
        return None
    if who.agent:
        d = _names_keys(who, seg)
        if d is not None:
            return d
    prog = os.path.basename(seg.words[0])
    if prog == "git":
        return gitcmd.check(who, seg.here, seg.words[1:], seg.env)
    if prog in shwrites.SCRIPTS or prog.startswith("python3."):
        d = _started(who, seg, shwrites.code_of(seg.words[1:]))
        if d is not None:
            return d
    return shwrites.check(who, seg.here, prog, seg.words[1:])


def _names_keys(who: Who, seg: Seg) -> Decision | None:
    """A word naming the user's spark-git state directory, as a path (through a link too) or inside a
    word (`python3 -c "open('…')"`): the hook judges no other reads, but these keys no agent reads."""
    spelled = _keys_spelled()
    for w in seg.words[1:]:
        w = os.path.expandvars(os.path.expanduser(w))  # `$XDG_STATE_HOME/…`, `~/.local/state/…` as the agent's shell sees them
        if "\0" in w:
            continue
        hit = any(s in w for s in spelled)
        if not hit and os.path.lexists(seg.here / w):  # through a link: only a path that exists can be one
            there = os.path.realpath(seg.here / w)
            hit = any(there == s or there.startswith(s + os.sep) for s in spelled)
        if hit:
            return keys_refused(who.me.agent or "", w)
    return None


def _keys_spelled() -> set[str]:
    d = paths.state_dir()
    return {str(d), str(paths.real(d))}


def _started(who: Who, seg: Seg, code: str | None) -> Decision | None:
    """The commands a `python -c` / `node -e` script starts, judged like the command line."""
    for line in runtime.spawned(code or "") or []:
        if "__spark_subst__" in line:
            return judge(who, Seg([], seg.here, [], {}, "the script starts a command computed at run time"))
        for sub in segments(line, seg.here, who.env):
            d = judge(who, sub)
            if d is not None:
                return d
    return None


# -- taking the command line apart ---------------------------------------------------------------


def segments(cmd: str, cwd: Path, env: dict[str, str], depth: int = 0, exported: dict[str, str] | None = None) -> list[Seg]:
    """`exported`: what `export X=...` (or an assignment to a variable git reads) set for later commands."""
    if depth > MAX_DEPTH:
        return [Seg([], cwd, [], {}, f"commands nested more than {MAX_DEPTH} levels deep (bash -c, eval)")]
    cmd, inner = _substitutions(_strip_heredocs(cmd.replace("\\\n", " ")))
    out: list[Seg] = []
    values: list[str | None] = []
    variables, exported = dict(env), {} if exported is None else exported
    for k, sub in enumerate(inner):  # $(...) and `...` run first, in the same directory
        out += segments(sub, cwd, variables, depth + 1, dict(exported))
        value = runtime.evaluate(sub, cwd)
        if value is not None and runtime.safe(value):
            cmd = cmd.replace(f"__spark_subst__{k}_", value)
        values.append(sub)
    state = Cwd(cwd, values)
    for words, redirects in _split(cmd):
        out += _unwrap(words, redirects, state, (variables, exported), depth)
    return out


def _strip_heredocs(cmd: str) -> str:
    """Drops heredoc bodies (text, not commands); the `cat > file <<EOF` line itself stays."""
    lines = cmd.split("\n")
    keep: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        keep.append(line)
        ends = [m.group(2) for m in _HEREDOC.finditer(line)]
        i += 1
        for end in ends:
            while i < len(lines) and lines[i].strip() != end:
                i += 1
            i += 1
    return "\n".join(keep)


def _substitutions(cmd: str) -> tuple[str, list[str]]:
    """`$(...)`, `<(...)`, `>(...)` and backtick bodies, replaced by a numbered placeholder word;
    nested ones found on recursion."""
    inner: list[str] = []
    res: list[str] = []
    i, n = 0, len(cmd)
    quote = ""
    while i < n:
        c = cmd[i]
        if quote != "'" and cmd.startswith("$((", i):  # arithmetic: a number; what it runs inside is judged
            depth, j = 2, i + 3
            while j < n and depth:
                depth += {"(": 1, ")": -1}.get(cmd[j], 0)
                j += 1
            inner += _substitutions(cmd[i + 3 : j - 2])[1]
            res.append("0")
            i = j
            continue
        if quote != "'" and c in "$<>" and cmd.startswith("(", i + 1):
            depth, j = 1, i + 2
            while j < n and depth:
                depth += {"(": 1, ")": -1}.get(cmd[j], 0)
                j += 1
            inner.append(cmd[i + 2 : j - 1])
            res.append(f"__spark_subst__{len(inner) - 1}_")
            i = j
            continue
        if quote != "'" and c == "`":
            j = cmd.find("`", i + 1)
            j = n if j < 0 else j
            inner.append(cmd[i + 1 : j])
            res.append(f"__spark_subst__{len(inner) - 1}_")
            i = j + 1
            continue
        if c in "'\"" and (not quote or quote == c):
            quote = "" if quote else c
        res.append(c)
        i += 1
    return "".join(res), inner


def _split(cmd: str) -> list[tuple[list[str], list[str]]]:
    import shlex  # only shell decisions need it

    lex = shlex.shlex(cmd.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lex.whitespace_split = True
    out: list[tuple[list[str], list[str]]] = [([], [])]
    try:
        toks = list(lex)
    except ValueError:  # unbalanced quotes: plain splitting still finds the words
        toks = cmd.replace("\n", " ; ").split()
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
                i += 2  # input redirection or heredoc delimiter: nothing is written
                continue
            out.append(([], []))
        elif tok in ("{", "}"):
            out.append(([], []))
        else:
            words.append(tok)
        i += 1
    return [(w, r) for w, r in out if w or r]


def expand(word: str, variables: dict[str, str]) -> str:
    if "$" not in word:
        return word
    word = _DEFAULT.sub(lambda m: variables.get(m.group(1)) or m.group(2), word)  # ${X:-default}
    return _VAR.sub(lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), word)


def _unwrap(words: list[str], redirects: list[str], state: Cwd, scope: tuple[dict[str, str], dict[str, str]], depth: int) -> list[Seg]:
    """Assignments, wrappers, `cd`/`pushd`, `export`, `bash -c` and `eval` peeled off one simple command."""
    variables, exported = scope
    local: dict[str, str] = {}
    words = [expand(w, {**variables, **local}) for w in words]
    redirects = [expand(r, variables) for r in redirects]
    while words:
        m = _ASSIGN.match(words[0])
        if m is None:
            break
        local[m.group(1)] = m.group(2)
        words = words[1:]
    if not words:
        variables.update(local)  # `X=/path; cp a $X`: a bare assignment sets a shell variable
        exported.update({k: v for k, v in local.items() if k in gitcmd.REDIRECT_ENV})  # exported already, perhaps
        return [Seg([], state.here, redirects, local)] if redirects else []
    words = _strip_wrappers(words, local, state)
    if not words:
        return [Seg([], state.here, redirects, local)] if redirects else []
    local = {**exported, **local}
    prog = os.path.basename(words[0])
    unknown = _computed_word(words, prog, state, POWERSHELL in variables)
    if unknown:
        return [Seg(words, state.here, redirects, local, unknown)]
    if prog in ("export", "declare", "typeset", "readonly"):  # `export GIT_DIR=...` reaches every later command
        for m in filter(None, map(_ASSIGN.match, words[1:])):
            variables[m.group(1)] = exported[m.group(1)] = m.group(2)
        return [Seg([], state.here, redirects, local)] if redirects else []
    if prog.lower() in _CD:
        _cd(prog.lower(), words[1:], state, local.get("CDPATH") or variables.get("CDPATH"), variables.get("HOME"))
        return []
    flag = _script_flag(words) if prog in _SHELLS else None
    if flag is not None:  # `bash -c '...'`, `sh -lc '...'`, `pwsh -Command ...`: the script is judged too
        return _script(prog, words[flag + 1 :], state.here, {**variables, **local}, (depth, local))
    if prog.lower() in ("eval", "iex", "invoke-expression"):
        if _SUBST.sub("", " ".join(words[1:])).strip() == "":
            return []  # `eval "$(spark-git env …)"`: settings only (_computed_word let only those through)
        return segments(" ".join(words[1:]), state.here, {**variables, **local}, depth + 1, dict(local))
    return [Seg(words, state.here, redirects, local)]


def _script(prog: str, after: list[str], here: Path, variables: dict[str, str], nest: tuple[int, dict[str, str]]) -> list[Seg]:
    """The script of `bash -c SCRIPT` / `pwsh -Command WORDS…`, in its own dialect."""
    ps = prog in ("pwsh", "powershell")
    script = (" ".join(after) if ps else after[0]) if after else ""
    inherit = {k: v for k, v in variables.items() if k != POWERSHELL}
    return segments(script, here, {**inherit, POWERSHELL: "1"} if ps else inherit, nest[0] + 1, dict(nest[1]))


_CD = ("cd", "pushd", "popd", "set-location", "push-location", "pop-location", "sl")
_STDIN_SHELLS = ("bash", "sh", "zsh", "dash", "ksh", "fish", "source", ".")


def _computed_word(words: list[str], prog: str, state: Cwd, powershell: bool) -> str:
    """Why the command this runs is not known before it runs ("" when it is): a command word from
    `$(...)` or an unknown variable, `eval` of a computed string (but `eval "$(spark-git env …)"`),
    a shell reading its commands from stdin (`… | base64 -d | sh`), `source <(...)`."""
    if powershell and words[0].startswith("$") and (len(words) == 1 or words[1] == "="):
        return ""  # PowerShell: `$x = …` assigns, a bare `$x` is its value
    if "__spark_subst__" in words[0] or "$" in words[0] or "`" in words[0]:
        return f"the command word `{words[0]}` is computed at run time"
    prog = prog.lower() if powershell else prog
    if prog in ("iex", "invoke-expression") and len(words) == 1:
        return f"`{words[0]}` of a string computed at run time"
    if prog in ("eval", "iex", "invoke-expression"):
        rest = " ".join(words[1:])
        subs = [int(m.group(1)) for m in _SUBST.finditer(rest)]
        emitters = bool(subs) and _SUBST.sub("", rest).strip() == "" and all(
            k < len(state.values) and runtime.emits_env(state.values[k] or "") for k in subs)
        if emitters:
            return ""
        if subs or "$" in rest or "`" in rest:
            return "`eval` of a string computed at run time"
    if prog in _STDIN_SHELLS:
        args = [w for w in words[1:] if not w.startswith("-") or w == "-"]
        if prog in ("source", ".") and args and ("__spark_subst__" in args[0] or args[0] in ("/dev/stdin", "-")):
            return f"`{prog}` of commands computed at run time"
        if prog not in ("source", ".") and (not args or args[0] in ("-", "/dev/stdin") or any(w == "-s" for w in words[1:])):
            return f"`{prog}` reads its commands from stdin"
    return ""


def _cd(prog: str, args: list[str], state: Cwd, cdpath: str | None, home: str | None) -> None:
    target = next((w for w in args if not w.startswith("-") or w == "-"), None)
    if prog in ("popd", "pop-location"):
        state.old, state.here = state.here, state.stack.pop() if state.stack else gitcmd.UNKNOWN_DIR
        return
    if target is None:
        if prog == "cd":
            state.old, state.here = state.here, Path(home) if home else gitcmd.UNKNOWN_DIR
        return
    if prog in ("pushd", "push-location"):
        state.stack.append(state.here)
    if target == "-":
        new = state.old
    elif cdpath and not target.startswith(("/", "./", "../", "~", "$")) and target not in (".", ".."):
        new = next((c for c in (gitcmd.directory(state.here, d or ".") / target for d in cdpath.split(":")) if c.is_dir()),
                   gitcmd.directory(state.here, target))
    else:
        new = gitcmd.directory(state.here, target)
    state.old, state.here = state.here, new


def _script_flag(words: list[str]) -> int | None:
    for i, w in enumerate(words[1:], 1):
        if w.lower() == "-command" or (w.startswith("-") and not w.startswith("--") and "c" in w[1:]):
            return i
        if not w.startswith("-"):
            return None  # `bash script.sh`: scripts are not looked into
    return None


def _strip_wrappers(words: list[str], local: dict[str, str], state: Cwd) -> list[str]:
    for _ in range(8):  # wrappers nest: `sudo env X=1 nice -n 5 git ...`
        prog = os.path.basename(words[0]) if words else ""
        if prog not in _WRAPPERS or (prog == "command" and any(w in ("-v", "-V") for w in words[1:2])):
            return words
        takes = _WRAPPERS[prog]
        i, positional = 1, _NEEDS_POSITIONAL.get(prog, 0)
        while i < len(words):
            w = words[i]
            m = _ASSIGN.match(w)
            if prog == "env" and m:
                local[m.group(1)] = m.group(2)
            elif w in ("-C", "--chdir") and prog == "env" and i + 1 < len(words):
                state.here = gitcmd.directory(state.here, words[i + 1])
                i += 1
            elif prog == "env" and w.startswith(("--chdir=", "-C")):
                state.here = gitcmd.directory(state.here, w.split("=", 1)[1] if w.startswith("--") else w[2:])
            elif w in takes:
                i += 1
            elif w.startswith("-") and w != "-":
                pass
            elif positional:
                positional -= 1
            else:
                break
            i += 1
        words = _xargs_replaced(words[i:], words[1:i]) if prog == "xargs" else words[i:]
        if not words:
            return []
    return words


def _xargs_replaced(command: list[str], options: list[str]) -> list[str]:
    """`xargs -I % git -C % ...`: what replaces % comes from stdin, a value unknown here (`$`)."""
    repl = None
    for k, o in enumerate(options):
        if o == "-I":
            repl = options[k + 1] if k + 1 < len(options) else None
        elif o in ("-i", "--replace"):
            repl = "{}"
        elif o.startswith(("-I", "-i")) and not o.startswith("--"):
            repl = o[2:]
        elif o.startswith("--replace="):
            repl = o.split("=", 1)[1]
    # without -I the input is appended: `… | xargs git update-ref` names its ref at run time
    return [w.replace(repl, "$XARGS_INPUT") for w in command] if repl else [*command, "$XARGS_INPUT"]
