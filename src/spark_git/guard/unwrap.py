"""One simple command, its words already expanded, peeled down to what it runs: assignments, wrappers
(`sudo`, `env`, `setsid`, `nohup`, `timeout`, `xargs`, `command`, `exec`, ...), `cd`/`pushd`/`popd`,
`export`, and the scripts it hands to a shell (`bash -c`, `script -c`, `su -c`, `flock -c`, `watch`,
`env -S`, `eval`, `trap`), which are read with the same grammar. The shell reader (guard/walk.py,
guard/pwsh.py) calls `simple` for each command it finds. Standard library only."""

from __future__ import annotations

import os
import re
from pathlib import Path

from spark_git.guard import gitcmd, runtime

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    class Shell(Protocol):
        """The reader's side: where the shell stands, its variables, and reading a nested script."""

        cwd: Cwd
        variables: dict[str, str]
        exported: dict[str, str]
        powershell: bool

        def nested(self, script: str, same_shell: bool, env: dict[str, str], powershell: bool = False) -> list[Seg]: ...


ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
SUBST = re.compile(r"__spark_subst__(\d+)_")
SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "fish", "pwsh", "powershell", "rbash", "mksh", "busybox"}
# wrapper -> its options that take a value; the wrapped command follows the options
WRAPPERS: dict[str, tuple[str, ...]] = {
    "sudo": ("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"), "doas": ("-u", "-C"),
    "env": ("-u", "--unset", "-C", "--chdir"), "command": (), "exec": ("-a",), "builtin": (),
    "nohup": (), "time": ("-f", "-o"), "nice": ("-n", "--adjustment"), "ionice": ("-c", "-n", "-p"),
    "setsid": (), "stdbuf": ("-i", "-o", "-e"), "timeout": ("-s", "--signal", "-k", "--kill-after"), "chronic": (), "unbuffer": (),
    # GNU's -i, -e and -l take their value attached or not at all: the next word is the command
    "xargs": ("-I", "-n", "-P", "-d", "-a", "-L", "-s", "-E", "--max-args", "--max-procs", "--delimiter", "--arg-file"),
    "flock": ("-w", "-E"), "caffeinate": (), "strace": ("-o", "-e", "-p", "-s"), "ltrace": ("-o",),
    "noglob": (), "chrt": (), "taskset": (), "unshare": (), "pkexec": ("--user",), "runuser": ("-u", "-g", "-G"),
    "faketime": (), "firejail": (), "systemd-run": ("-u", "--unit", "-p", "--property", "-E", "--setenv"), "catchsegv": (),
    "valgrind": (), "dbus-launch": (), "proxychains": ("-f",), "proxychains4": ("-f",), "torsocks": (), "daemonize": ("-c", "-p", "-l", "-u"),
    "ssh-agent": ("-a", "-E", "-t", "-P"),
}
_NEEDS_POSITIONAL = {"timeout": 1, "flock": 1, "chrt": 1, "taskset": 1, "faketime": 1}  # before the wrapped command
# Programs that run their argument as a shell script: the option that names it (None: the words after the options).
SCRIPT_RUNNERS: dict[str, str | None] = {"script": "-c", "su": "-c", "flock": "-c", "watch": None}
UNKNOWN_DIR = gitcmd.UNKNOWN_DIR


class Seg:
    """One simple command: its words (assignments and wrappers removed), the directory it runs in,
    the files it redirects output into, and the environment its assignments set."""

    __slots__ = ("env", "here", "redirects", "refuse", "stdin", "words")

    def __init__(self, words: list[str], here: Path, redirects: list[str], env: dict[str, str], refuse: str = "") -> None:
        self.words = words
        self.here = here
        self.redirects = redirects
        self.env = env
        self.refuse = refuse  # why the hook refuses it, with what to run instead ("" when it can judge it)
        self.stdin = ""  # what a here-document or here-string feeds it


def unknown(why: str) -> str:
    return f"{why}; the hook cannot know what it runs — run the plain command instead"


class Cwd:
    """Where the shell stands while a command line runs: `cd`, `cd -`, `pushd`/`popd`."""

    __slots__ = ("here", "old", "stack", "values")

    def __init__(self, here: Path, values: list[str | None]) -> None:
        self.here = here
        self.old = UNKNOWN_DIR  # `cd -` before any cd: the shell's previous directory, unknown here
        self.stack: list[Path] = []
        self.values = values  # the text of each $(...) of this line (for `eval "$(spark-git env …)"`)

    def copy(self) -> Cwd:
        c = Cwd(self.here, self.values)
        c.old, c.stack = self.old, list(self.stack)
        return c


def simple(sh: Shell, words: list[str], local: dict[str, str], redirects: list[str]) -> list[Seg]:
    """What one simple command runs: `local` are its leading assignments (`X=1 cmd`)."""
    state, variables, exported = sh.cwd, sh.variables, sh.exported
    if not words:
        variables.update(local)  # `X=/path; cp a $X`: a bare assignment sets a shell variable
        exported.update({k: v for k, v in local.items() if k in gitcmd.REDIRECT_ENV})  # exported already, perhaps
        return [Seg([], state.here, redirects, local)] if redirects else []
    words, script = strip_wrappers(words, local, state)
    if script is not None:  # `env -S 'cmd args'`, `script -qec 'cmd'`, `watch 'cmd'`: a shell line
        return _redirected(sh.nested(script, False, {**variables, **local}), state.here, redirects)
    if not words:
        return [Seg([], state.here, redirects, local)] if redirects else []
    local = {**exported, **local}
    prog = os.path.basename(words[0])
    why = computed_word(words, prog, state, sh.powershell)
    if why:
        return [Seg(words, state.here, redirects, local, unknown(why))]
    if prog in ("export", "declare", "typeset", "readonly", "local"):  # `export GIT_DIR=...` reaches every later command
        for m in filter(None, map(ASSIGN.match, words[1:])):
            variables[m.group(1)] = exported[m.group(1)] = m.group(2)
        return [Seg([], state.here, redirects, local)] if redirects else []
    if prog == "alias" and any("=" in w for w in words[1:]):
        return [Seg(words, state.here, redirects, local, "an alias makes a name run other commands the hook does not see; "
                                                             "run the plain command instead of defining an alias")]
    if prog.lower() in CD:
        before = state.here  # `cd x > log` opens log where it stood
        cd(prog.lower(), words[1:], state, local.get("CDPATH") or variables.get("CDPATH"), variables.get("HOME"))
        return [Seg([], before, redirects, local)] if redirects else []
    return _handed_on(sh, words, prog, local, redirects) or [Seg(words, state.here, redirects, local)]


def _handed_on(sh: Shell, words: list[str], prog: str, local: dict[str, str], redirects: list[str]) -> list[Seg] | None:
    """The script a command hands to a shell: `bash -c`, `pwsh -Command`, `eval`, `trap`; None otherwise."""
    here, env = sh.cwd.here, {**sh.variables, **local}
    flag = script_flag(words) if prog in SHELLS else None
    if flag is not None:  # `bash -c '...'`, `sh -lc '...'`, `pwsh -Command ...`: the script is judged too
        after = words[flag + 1 :]
        ps = prog in ("pwsh", "powershell")
        text = (" ".join(after) if ps else after[0]) if after else ""
        return _redirected(sh.nested(text, False, env, powershell=ps), here, redirects)
    low = prog.lower()
    if low in ("eval", "iex", "invoke-expression") or (low == "trap" and len(words) > 2 and not words[1].startswith("-")):
        text = words[1] if low == "trap" else " ".join(words[1:])
        if SUBST.sub("", text).strip() == "":
            return _redirected([], here, redirects)  # `eval "$(spark-git env …)"`: settings only (computed_word let only those through)
        return _redirected(sh.nested(text, low != "trap", env), here, redirects)
    return None


def _redirected(segs: list[Seg], here: Path, redirects: list[str]) -> list[Seg]:
    return [Seg([], here, redirects, {}), *segs] if redirects else segs


CD = ("cd", "pushd", "popd", "set-location", "push-location", "pop-location", "sl")
_STDIN_SHELLS = ("bash", "sh", "zsh", "dash", "ksh", "fish", "source", ".")


def computed_word(words: list[str], prog: str, state: Cwd, powershell: bool) -> str:
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
        subs = [int(m.group(1)) for m in SUBST.finditer(rest)]
        emitters = bool(subs) and SUBST.sub("", rest).strip() == "" and all(
            k < len(state.values) and runtime.emits_env(state.values[k] or "") for k in subs)
        if emitters:
            return ""
        if subs or "$" in rest or "`" in rest:
            return "`eval` of a string computed at run time"
    if prog in _STDIN_SHELLS:
        args = [w for w in words[1:] if not w.startswith("-") or w == "-"]
        if prog in ("source", ".") and args and ("__spark_subst__" in args[0] or args[0] in ("/dev/stdin", "-") or args[0].startswith("/dev/fd/")):
            return f"`{prog}` of commands computed at run time"
        if prog not in ("source", ".") and (not args or args[0] in ("-", "/dev/stdin") or any(w == "-s" for w in words[1:])):
            return f"`{prog}` reads its commands from stdin"
    return ""


def cd(prog: str, args: list[str], state: Cwd, cdpath: str | None, home: str | None) -> None:
    target = next((w for w in args if not w.startswith("-") or w == "-"), None)
    if prog in ("popd", "pop-location"):
        state.old, state.here = state.here, state.stack.pop() if state.stack else UNKNOWN_DIR
        return
    if target is None:
        if prog == "cd":
            state.old, state.here = state.here, Path(home) if home else UNKNOWN_DIR
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


def script_flag(words: list[str]) -> int | None:
    for i, w in enumerate(words[1:], 1):
        if w.lower() == "-command" or (w.startswith("-") and not w.startswith("--") and "c" in w[1:]):
            return i
        if not w.startswith("-"):
            return None  # `bash script.sh`: scripts are not looked into
    return None


def strip_wrappers(words: list[str], local: dict[str, str], state: Cwd) -> tuple[list[str], str | None]:
    """The wrapped command's words, or the shell line a wrapper runs (`env -S`, `script -c`, `watch`)."""
    for _ in range(8):  # wrappers nest: `sudo env X=1 nice -n 5 git ...`
        prog = os.path.basename(words[0]) if words else ""
        if prog in SCRIPT_RUNNERS:
            script = _runner_script(prog, words[1:])
            if script is not None:
                return [], script
        if prog not in WRAPPERS or (prog == "command" and any(w in ("-v", "-V") for w in words[1:2])):
            return words, None
        i, script = _wrapper_options(prog, words, local, state)
        if script is not None:
            return [], script
        words = _xargs_replaced(words[i:], words[1:i]) if prog == "xargs" else words[i:]
        if not words:
            return [], None
    return words, None


def _wrapper_options(prog: str, words: list[str], local: dict[str, str], state: Cwd) -> tuple[int, str | None]:
    """(index of the wrapped command's first word, the line `env -S` splits)."""
    takes = WRAPPERS[prog]
    i, positional = 1, _NEEDS_POSITIONAL.get(prog, 0)
    while i < len(words):
        w = words[i]
        m = ASSIGN.match(w)
        if prog == "env" and m:
            local[m.group(1)] = m.group(2)
        elif prog == "env" and (w in ("-S", "--split-string") or w.startswith(("-S", "--split-string="))):
            line = words[i + 1] if w in ("-S", "--split-string") and i + 1 < len(words) else w.split("=", 1)[1] if "=" in w else w[2:]
            rest = words[i + 2 :] if w in ("-S", "--split-string") else words[i + 1 :]
            return i, " ".join([line, *(_quoted(r) for r in rest)])
        elif w in ("-C", "--chdir") and prog == "env" and i + 1 < len(words):
            state.here = gitcmd.directory(state.here, words[i + 1])
            i += 1
        elif prog == "env" and w.startswith(("--chdir=", "-C")):
            state.here = gitcmd.directory(state.here, w.split("=", 1)[1] if w.startswith("--") else w[2:])
        elif w in takes:
            i += 1
        elif w == "--":
            return i + 1, None
        elif w.startswith("-") and w != "-":
            pass
        elif positional:
            positional -= 1
        else:
            break
        i += 1
    return i, None


def _runner_script(prog: str, args: list[str]) -> str | None:
    """The shell line `script -qec LINE`, `su -c LINE`, `flock F -c LINE`, `watch LINE…` runs."""
    opt = SCRIPT_RUNNERS[prog]
    if opt is None:  # watch: the words after its options, joined, run by `sh -c`
        i = 0
        while i < len(args) and args[i].startswith("-"):
            i += 2 if args[i] in ("-n", "--interval") else 1
        return " ".join(args[i:]) if args[i:] else None
    for i, a in enumerate(args):
        if a in (opt, "--command") and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--command="):
            return a.split("=", 1)[1]
        if a.startswith("-") and not a.startswith("--") and a.endswith(opt[1]) and i + 1 < len(args):
            return args[i + 1]  # `script -qec LINE`
    return None


def _quoted(word: str) -> str:
    import shlex

    return shlex.quote(word)


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
