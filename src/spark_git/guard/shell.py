"""Shell commands in the hook policy. A command line is read with bash's grammar (guard/walk.py; a
PowerShell line by guard/pwsh.py) into every simple command it runs, with the directory it runs in,
its variable assignments and the files it redirects into; each is then judged: coordinator commands
(refused to an agent whatever wraps them), git commands in guard/gitcmd.py, file writes in
guard/shwrites.py, the user's spark-git state directory (however a word names it: a glob, a link).
A line the grammar does not read is refused.

A guardrail against what agents type, not a sandbox: scripts a command runs from a file are not
looked into (they run inside the agent's box like any program)."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core import paths
from spark_git.core.caller import COORDINATOR
from spark_git.guard import gitcmd, runtime, shwrites, walk
from spark_git.guard.calls import Decision
from spark_git.guard.unwrap import Seg, unknown
from spark_git.guard.writes import Who, keys_refused

POWERSHELL = walk.POWERSHELL
_SPARK = ("spark-git", "spark_git")
_FIND_RUNS = ("-exec", "-execdir", "-ok", "-okdir")


def decide_shell(who: Who, cwd: Path, cmd: str, powershell: bool = False) -> Decision:
    if who.agent and any(s in os.path.expandvars(cmd) for s in _keys_spelled()):  # `cat < key` too (input redirections are no words)
        return keys_refused(who.me.agent or "", cmd)
    for seg in walk.commands(cmd, cwd, {**who.env, POWERSHELL: "1"} if powershell else who.env):
        d = judge(who, seg)
        if d is not None:
            return d
    return Decision(True, "spark-git: allowed: command does not move protected branches or write outside the caller's territory")


def judge(who: Who, seg: Seg) -> Decision | None:
    if seg.refuse:
        return Decision(False, f"spark-git: blocked: {seg.refuse}")
    for target in seg.redirects:
        d = shwrites.check_target(who, seg.here, target, f"> {target}")
        if d is not None:
            return d
    if not seg.words:
        return None
    if who.agent:
        d = _names_keys(who, seg) or _coordinator(who, seg)
        if d is not None:
            return d
    prog = os.path.basename(seg.words[0])
    if prog == "git":
        return gitcmd.check(who, seg.here, seg.words[1:], seg.env)
    if prog == "find":
        d = _find_runs(who, seg)
        if d is not None:
            return d
    if prog in shwrites.SCRIPTS or prog.startswith("python3.") or prog in shwrites.AWKS:
        d = _started(who, seg, shwrites.code_of(prog, seg.words[1:], seg.stdin))
        if d is not None:
            return d
    return shwrites.check(who, seg.here, prog, seg.words[1:])


def _coordinator(who: Who, seg: Seg) -> Decision | None:
    """`spark-git merge …` (or `python -m spark_git …`) from an agent: the caller guard refuses it too,
    but a wrapper that drops the agent's environment (`env -i`, `setsid -f`) would hide the agent from it."""
    w = seg.words
    prog = os.path.basename(w[0])
    if prog.startswith("python") and len(w) > 2 and w[1] == "-m" and w[2] in _SPARK:
        args = w[3:]
    elif prog in _SPARK:
        args = w[1:]
    else:
        return None
    pos = [a for a in args if not a.startswith("-")]
    command = next((" ".join(pos[:n]) for n in (2, 1) if " ".join(pos[:n]) in COORDINATOR), None)
    if command is None:
        return None
    return Decision(False, f"spark-git: blocked: `spark-git {command}` is the coordinator's command; agent {who.me.agent} may not run it "
                           f"(however it is wrapped) — finish with `spark-git report {who.me.task} --agent {who.me.agent} …` and let the coordinator go on")


def _names_keys(who: Who, seg: Seg) -> Decision | None:
    """A word naming the user's spark-git state directory, as a path (through a link too), inside a
    word (`python3 -c "open('…')"`), or a glob that could match in it: the hook judges no other
    reads, but these keys no agent reads."""
    spelled = _keys_spelled()
    bases = [seg.here]  # and the directory a `-C DIR` names (`tar -C ~/.local/state spark-git`)
    for i, w in enumerate(seg.words[1:], 1):
        w = os.path.expandvars(os.path.expanduser(w))  # `$XDG_STATE_HOME/…`, `~/.local/state/…` as the agent's shell sees them
        if "\0" in w:
            continue
        if seg.words[i - 1] in ("-C", "--directory") or w.startswith("--directory="):
            bases.append(gitcmd.directory(seg.here, w.split("=", 1)[1] if w.startswith("--directory=") else w))
        hit = any(s in w for s in spelled) or any(_glob_may_reach(b, w, spelled) or _links_into(b, w, spelled) for b in bases)
        if hit:
            return keys_refused(who.me.agent or "", w)
    return None


def _links_into(here: Path, word: str, spelled: set[str]) -> bool:
    """`word` is the state directory or in it once links and `..` are resolved (only a path that
    exists can be a link)."""
    if not os.path.lexists(here / word):
        return False
    there = os.path.realpath(here / word)
    return any(there == s or there.startswith(s + os.sep) for s in spelled)


def _glob_may_reach(here: Path, word: str, spelled: set[str]) -> bool:
    """A word still holding a glob or an unknown value (bash found no match, or the hook cannot
    expand it) whose known start could lead into the state directory: `$HOME/.local/st*/spark-git/*`."""
    cut = min((i for i, c in enumerate(word) if c in "*?[$" or word.startswith("__spark_subst__", i)), default=-1)
    if cut < 0:
        return False
    if cut == 0 and word[0] not in "*?[" and any(c in word for c in "*?["):
        return True  # `$UNSEEN/*`: a glob from a place the hook cannot know (`'*.py'` is relative to here)
    head = os.path.dirname(word[:cut]) if "/" in word[:cut] else ""
    start = os.path.realpath(here / head) if head or not word.startswith("/") else "/"
    return any(s == start or s.startswith(start.rstrip("/") + "/") for s in spelled)


def _keys_spelled() -> set[str]:
    d = paths.state_dir()
    return {str(d), str(paths.real(d))}


def _find_runs(who: Who, seg: Seg) -> Decision | None:
    """`find … -exec CMD {} ;`: CMD is judged like a command of its own ({} is what find found)."""
    w = seg.words
    for i, a in enumerate(w):
        if a in _FIND_RUNS:
            end = next((j for j in range(i + 1, len(w)) if w[j] in (";", "+")), len(w))
            sub = [x.replace("{}", "$FIND_PATH") for x in w[i + 1 : end]]
            if sub:
                d = judge(who, Seg(sub, seg.here, [], seg.env))
                if d is not None:
                    return d
    return None


def _started(who: Who, seg: Seg, code: str | None) -> Decision | None:
    """The commands a `python -c` / `node -e` / `perl -e` / awk script starts, judged like the command line."""
    for line in runtime.spawned(code or "", os.path.basename(seg.words[0]) if seg.words else "") or []:
        if "__spark_subst__" in line:
            return judge(who, Seg([], seg.here, [], {}, unknown("the script starts a command computed at run time")))
        for sub in walk.commands(line, seg.here, who.env):
            d = judge(who, sub)
            if d is not None:
                return d
    return None
