"""The files a shell command writes, judged like the client's write tools (guard/writes.py):
redirections, `tee`, `cp`, `mv`, `ln`, `install`, `rsync`, `sed -i`, `perl -i`, `touch`, `truncate`,
`mkdir`, `rm`, `chmod`, `dd of=`, `python -c` / `node -e` with literal paths, and PowerShell's
`Set-Content`, `Out-File`, `Remove-Item`, ... Also the structural `rm` rule: nobody deletes the tasks
root, a task directory, a worktree or the audit trail by hand. Standard library only."""

from __future__ import annotations

import os
import re
from pathlib import Path

from spark_git.core import paths
from spark_git.guard import shtools
from spark_git.guard.calls import Decision
from spark_git.guard.writes import Who, absolute, decide_write

_ALL_ARGS = {"tee", "touch", "mkdir", "rm", "rmdir", "unlink", "shred", "truncate"}
_FIRST_IS_MODE = {"chmod", "chown", "chgrp", "setfacl"}
_TO_LAST = {"cp", "install", "rsync", "scp"}
_VALUE_OPTS = {"--size", "-m", "--mode", "-o", "--owner", "-g", "--group", "-S", "--suffix", "--reference"}
# Options that take the next word, for the commands where they do (`rm -f x`, `cp -r d`: flags).
_VALUED_BY_PROG = {"touch": ("-r", "-d", "-t"), "truncate": ("-s", "-r"), "sed": ("-e", "-f"), "perl": ("-e",),
                   "rsync": ("-e", "-f"), "scp": ("-P", "-i", "-F", "-c", "-l", "-J")}
SCRIPTS = {"python", "python3", "python2", "node", "ruby", "perl", "php", "deno", "bun"}
AWKS = {"awk", "gawk", "mawk", "nawk", "busybox-awk"}
_AWK_VALUED = ("-F", "-v", "--assign", "--field-separator", "-i", "--include", "-l", "--load")
_PS_WRITERS = {
    "set-content", "add-content", "out-file", "new-item", "remove-item", "copy-item", "move-item", "clear-content",
    "rename-item", "ni", "ri", "del", "erase", "rd", "copy", "move", "cpi", "mi", "sc", "ac",
}
_PS_VALUE_OPTS = {"-value", "-itemtype", "-encoding", "-type", "-newname", "-inputobject"}
_LITERAL = re.compile(r"""(['"])[+<>|\s]*((?:~|\.{1,2}|/)[^'"\n]*|[^'"\n]*/[^'"\n]*)\1""")
# Code that writes files: an open() mode that writes, and the calls that write, move or delete (a
# one-argument `.replace(x)` is Path.replace; str.replace takes two).
_WRITES_IN_CODE = (  # compiled where used (re caches it): only script code needs it
    r"""open(?:Sync)?\([^,)]*,\s*(?:mode\s*=\s*)?['"][^'"]*[wax+]|\.open\(\s*['"][^'"]*[wax+]|mode\s*=\s*['"][^'"]*[wax+]"""
    r"""|\.write_(?:text|bytes)\(|\.replace\(\s*[^,()]*\)|\bshutil\.(?!which|disk_usage|get_terminal_size)|\bos\.(?:remove|replace)\b"""
    r"""|\b(?:unlink|rename|renames|rmtree|rmdir|removedirs|makedirs|mkdir|mkdirSync|symlink|symlink_to|hardlink_to|chmod|chown|truncate|"""
    r"""utime|writeFile|writeFileSync|appendFile|appendFileSync|createWriteStream|rmSync|cpSync|copyFile|copyFileSync|renameSync|"""
    r"""unlinkSync|rmdirSync|symlinkSync|chmodSync|truncateSync|FileUtils)\b|\.touch\(|\bfs\.(?:rm|cp)\(|File\.(?:write|delete)"""
    r"""|\bopen\s*\(?\s*[^,;]*,\s*['"]\+?(?:>|\|)|\b(?:sysopen|copy|move|link)\s*\("""  # perl: open(F, '>', …), open F, ">…"
)
# awk writing a file: `print … > "path"`, `>> "path"`
_AWK_WRITES = re.compile(r'>>?\s*"([^"]+)"')
# The option that takes a script's code, by interpreter (perl also in a cluster: -pe, -lne, -i.bak -e).
_CODE_OPTS = {"python": ("-c",), "node": ("-e", "--eval", "-p", "--print"), "deno": ("eval",), "bun": ("-e", "--eval", "-p", "--print"),
              "ruby": ("-e",), "perl": ("-e", "-E"), "php": ("-r",)}
_UNJUDGED = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-")


def check(who: Who, here: Path, prog: str, args: list[str], stdin: str = "") -> Decision | None:
    if prog == "rm":
        d = _structural_rm(who, here, args)
        if d is not None:
            return d
    for target in targets(prog, args, stdin):
        d = check_target(who, here, target, f"{prog} {target}")
        if d is not None:
            return d
    return None


def check_target(who: Who, here: Path, target: str, what: str) -> Decision | None:
    if who.agent and "__spark_subst__" in target:
        return Decision(False, f"spark-git: blocked: `{what}`: agent {who.me.agent} would write to a path a command computes at run time; "
                               "name the path literally (or put it in a variable first: `D=src; cp a \"$D/b\"`)")
    if not target or target in _UNJUDGED or "__spark_subst__" in target or "$" in target:
        return None  # nothing we can place (an unknown variable, a command's output)
    d = decide_write(who, here, target, shell=True)
    if d.allow:
        return None
    return Decision(False, d.reason.replace("spark-git: blocked: ", f"spark-git: blocked: `{what}`: ", 1))


def targets(prog: str, args: list[str], stdin: str = "") -> list[str]:
    """The paths `prog args` writes (or deletes); `stdin`: what a here-document feeds it."""
    low = prog.lower()
    tool = shtools.targets(prog, args)
    if tool is not None:
        return [t for t in tool if t]
    pos = _positional(args, _VALUED_BY_PROG.get(prog, ()))
    if low in _PS_WRITERS:
        return _ps_targets(args)
    if prog in _ALL_ARGS:
        return pos
    if prog in _FIRST_IS_MODE:
        return pos[1:]
    if prog == "mv":
        return pos  # the sources go away too
    if prog == "ln":  # a write through the link lands on what it points to: both ends are judged
        tdir = _option_value(args, ("-t", "--target-directory"))
        return [*pos, tdir] if tdir else pos if len(pos) >= 2 else [*pos, "."]
    if prog in _TO_LAST:
        tdir = _option_value(args, ("-t", "--target-directory"))
        return [tdir] if tdir else pos[-1:] if len(pos) >= 2 else []
    if prog in ("sed", "perl") and any(a == "-i" or a.startswith(("-i", "--in-place")) or (a.startswith("-") and "i" in a[1:] and not a.startswith("--")) for a in args):
        scripted = any(a in ("-e", "-f", "--expression", "--file") or (a.startswith("-") and a.endswith("e") and not a.startswith("--")) for a in args)
        return pos if scripted else pos[1:]
    if prog == "dd":
        return [a[3:] for a in args if a.startswith("of=")]
    if prog in SCRIPTS or prog.startswith("python3.") or prog in AWKS:
        return _code_paths(prog, args, stdin)
    return []


def _positional(args: list[str], valued: tuple[str, ...] = ()) -> list[str]:
    out: list[str] = []
    skip = False
    for i, a in enumerate(args):
        if skip:
            skip = False
        elif a == "--":
            out += args[i + 1 :]
            break
        elif a in _VALUE_OPTS or a in valued or a in ("-t", "--target-directory", "--expression", "--file"):
            skip = a not in ("-t", "--target-directory")
        elif not a.startswith("-") or a == "-":
            out.append(a)
    return out


def _option_value(args: list[str], names: tuple[str, ...]) -> str | None:
    for i, a in enumerate(args):
        if a in names and i + 1 < len(args):
            return args[i + 1]
        for n in names:
            if n.startswith("--") and a.startswith(n + "="):
                return a[len(n) + 1 :]
    return None


def _ps_targets(args: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a.lower() in _PS_VALUE_OPTS:
            skip = True
        elif not a.startswith("-"):
            out.append(a.rstrip(","))
    return out


def code_of(prog: str, args: list[str], stdin: str = "") -> str | None:
    """The code of `python -c CODE` / `node -e CODE` / `perl -e CODE` / `awk 'PROGRAM'`, or what a
    here-document feeds an interpreter given no script file (`python3 - <<EOF`)."""
    if prog in AWKS:
        return _awk_program(args)
    opts = _CODE_OPTS.get("python" if prog.startswith("python") else prog, ("-c", "-e"))
    cluster = prog == "perl"
    found = next((args[i + 1] for i, a in enumerate(args[:-1])
                  if a in opts or (cluster and a.startswith("-") and not a.startswith("--") and a[-1] in "eE" and a[1:-1].isalpha())), None)
    if found is None and stdin and not [a for a in args if not a.startswith("-")]:
        return stdin
    return found


def _awk_program(args: list[str]) -> str | None:
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-f", "--file") or a.startswith("-f"):
            return None  # a program file: not looked into
        if a in _AWK_VALUED:
            i += 2
            continue
        if a == "--":
            return args[i + 1] if i + 1 < len(args) else None
        if not a.startswith("-"):
            return a
        i += 1
    return None


def _code_paths(prog: str, args: list[str], stdin: str) -> list[str]:
    """Literal paths in script code that writes something (`python -c`, `node -e`, `perl -e`, awk)."""
    code = code_of(prog, args, stdin)
    if code is None:
        return []
    if prog in AWKS:
        return _AWK_WRITES.findall(code)
    if not re.search(_WRITES_IN_CODE, code):
        return []
    return [m.group(2) for m in _LITERAL.finditer(code)]


def _structural_rm(who: Who, here: Path, args: list[str]) -> Decision | None:
    repo = who.repo
    for a in _positional(args):
        r = absolute(a, here)
        pl = repo.locate(r)
        structural = (
            repo.tasks_root.is_relative_to(r)  # the tasks root or one of its ancestors
            or (pl.kind == "taskdir" and (len(pl.rel) == 0 or pl.rel == (paths.AGENTS,) or (len(pl.rel) == 2 and pl.rel[0] == paths.AGENTS)))
            or (pl.kind == "taskdir" and pl.rel in ((paths.TASK_JSON,), ("audit-trail.json",), ("audit-snapshot.json",)))
            or (pl.kind in ("task", "agent") and pl.rel == ())
        )
        if structural:
            return Decision(
                False,
                f"spark-git: blocked: `rm {a}` would delete spark-git's tasks, worktrees or audit trail under {repo.tasks_root}; "
                "use `spark-git cleanup <task>` (after complete) or `spark-git abandon <task> --why ...`",
            )
    return None


def spark_env(who: Who) -> dict[str, str]:
    """The SPARK_* variables `spark-git env` exports for the caller's worktree, so `$SPARK_TASK_WORKTREE/x`
    is judged by where it lands; the hook's own environment wins where it sets them."""
    me, root = who.me, who.repo.tasks_root
    out: dict[str, str] = {}
    if me.task:
        out["SPARK_TASK"] = me.task
        out["SPARK_TASK_WORKTREE"] = str(paths.task_worktree(root, me.task))
        out["SPARK_WORKTREE"] = str(paths.agent_worktree(root, me.task, me.agent) if me.agent else paths.task_worktree(root, me.task))
        out["SPARK_AGENT"] = me.agent or ""
    out["SPARK_TASKS_ROOT"] = str(root)
    out["SPARK_MAIN_WORKTREE"] = str(who.repo.main)
    out.update({k: v for k, v in os.environ.items() if k.startswith("SPARK_") or k in ("HOME", "PWD", "OLDPWD", "TMPDIR", "CLAUDE_PROJECT_DIR")})
    return out
