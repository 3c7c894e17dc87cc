"""Shell commands in the hook policy: the commands that would move a protected branch (a task branch,
the base branch) or delete spark-git's tasks, worktrees or audit trail past the gates are blocked,
with the spark-git command that does it properly. Standard library only (runs before every tool call).

A guardrail against mistakes, not a sandbox: `bash -c`, eval, scripts and aliases are not looked into."""

from __future__ import annotations

import os
import re
from pathlib import Path

from spark_git.clients.calls import Decision
from spark_git.core import paths
from spark_git.core.paths import Place, Repo, real

_SEPARATORS = {";", "&&", "||", "|", "&", "\n", "(", ")", "{", "}", "|&"}
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _simple_commands(cmd: str) -> list[list[str]]:
    import shlex  # only Bash decisions need it

    lex = shlex.shlex(cmd, posix=True, punctuation_chars=";&|()")
    lex.whitespace = " \t\r"
    lex.whitespace_split = True
    out: list[list[str]] = [[]]
    try:
        for tok in lex:
            if tok in _SEPARATORS or set(tok) <= set(";&|()\n") or "\n" in tok:
                out.append([])
            else:
                out[-1].append(tok)
    except ValueError:  # unbalanced quotes: fall back to plain splitting
        return [cmd.split()]
    return [c for c in out if c]


def protected_branches(repo: Repo) -> dict[str, str]:
    """branch → what it is ("task X" / "the base branch")."""
    res: dict[str, str] = {}
    try:
        entries = list(repo.tasks_root.iterdir())
    except OSError:
        entries = []
    for d in entries:
        tf = paths.read_json(d / paths.TASK_JSON) if d.name != paths.MAIN_LOCK_DIR else None
        if not tf:
            continue
        if isinstance(tf.get("task_branch"), str):
            res[tf["task_branch"]] = f"the task branch of {d.name}"
        if isinstance(tf.get("base_branch"), str):
            res.setdefault(tf["base_branch"], "the base branch")
    head = _read_head(repo.common)
    if head:
        res.setdefault(head, "the base branch")
    return res


def _read_head(common: Path) -> str | None:
    try:
        text = (common / "HEAD").read_text().strip()
    except OSError:
        return None
    return text[len("ref: refs/heads/"):] if text.startswith("ref: refs/heads/") else None


def decide_shell(repo: Repo, cwd: Path, cmd: str) -> Decision:
    here = cwd
    branches: dict[str, str] | None = None
    for words in _simple_commands(cmd):
        while words and _ASSIGN.match(words[0]):
            words = words[1:]
        while words and words[0] in ("sudo", "env", "command", "exec", "nohup", "time"):
            words = words[1:]
        if not words:
            continue
        prog = os.path.basename(words[0])
        if prog == "cd" and len(words) > 1:
            here = Path(os.path.expanduser(words[1])) if os.path.isabs(os.path.expanduser(words[1])) else here / words[1]
            continue
        if prog == "rm":
            d = _check_rm(repo, here, words[1:])
        elif prog == "git":
            if branches is None:
                branches = protected_branches(repo)
            d = _check_git(repo, here, words[1:], branches)
        else:
            d = None
        if d is not None:
            return d
    return Decision(True, "spark-git: allowed: command does not move protected branches or remove task worktrees")


def _check_rm(repo: Repo, here: Path, args: list[str]) -> Decision | None:
    for a in args:
        if a.startswith("-") and a != "-":
            continue
        p = Path(os.path.expanduser(a))
        r = real(p if p.is_absolute() else here / p)
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


def _git_sub(args: list[str], here: Path) -> tuple[str | None, list[str], Path]:
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-C" and i + 1 < len(args):
            p = Path(os.path.expanduser(args[i + 1]))
            here = p if p.is_absolute() else here / p
            i += 2
        elif a in ("-c", "--git-dir", "--work-tree", "--namespace") and i + 1 < len(args):
            i += 2
        elif a.startswith("-"):
            i += 1
        else:
            return a, args[i + 1:], here
    return None, [], here


def _check_git(repo: Repo, here: Path, args: list[str], branches: dict[str, str]) -> Decision | None:
    sub, rest, where = _git_sub(args, here)
    if sub is None:
        return None
    positional = [a for a in rest if not a.startswith("-")]
    if sub in ("merge", "rebase", "reset", "pull", "push"):
        return _check_move(sub, rest, positional, repo.locate(real(where)), branches)
    if sub == "worktree" and rest and rest[0] in ("remove", "move"):
        return _check_worktree(repo, where, rest)
    if sub == "update-ref":
        hit = [a.removeprefix("refs/heads/") for a in positional if a.startswith("refs/heads/") and a.removeprefix("refs/heads/") in branches]
        if hit:
            return Decision(
                False,
                f"spark-git: blocked: `git update-ref` would move {branches[hit[0]]} ({hit[0]}) past the gates; "
                "use `spark-git merge <task> --agent <A>` or `spark-git complete <task>`",
            )
    if sub == "branch" and any(a in ("-D", "-d", "--delete", "-f", "--force", "-m", "-M") for a in rest):
        hit = [a for a in positional if a in branches]
        if hit:
            return Decision(
                False,
                f"spark-git: blocked: `git branch {' '.join(rest)}` changes {branches[hit[0]]} ({hit[0]}); "
                "use `spark-git cleanup <task>` or `spark-git abandon <task> --why ...`",
            )
    return None


def _check_move(sub: str, rest: list[str], positional: list[str], pl: Place, branches: dict[str, str]) -> Decision | None:
    """merge, rebase, reset, pull, push: run in a task or the main worktree, or naming a protected
    branch as what they rewrite."""
    in_protected = pl.kind in ("task", "main")
    if sub in ("merge", "reset", "pull") and not in_protected:
        return None  # moves the current (agent or unrelated) branch only
    if sub in ("merge", "rebase") and any(a in ("--abort", "--quit") for a in rest):
        return None
    if sub == "rebase" and not in_protected:
        # `git rebase <upstream> <branch>` checks out and rewrites <branch>.
        if len(positional) >= 2 and positional[1] in branches:
            return _block_git(sub, positional[1], branches[positional[1]])
        return None
    if sub == "push" and not in_protected:
        dests = [b for a in positional[1:] for b in _push_dests(a) if b in branches]
        if not dests:
            return None
        return _block_git(sub, dests[0], branches[dests[0]])
    what = f"the task branch of {pl.task}" if pl.kind == "task" else "the base branch (main worktree)"
    return _block_git(sub, None, what, pl)


def _check_worktree(repo: Repo, where: Path, rest: list[str]) -> Decision | None:
    for a in rest[1:]:
        if a.startswith("-"):
            continue
        p = Path(os.path.expanduser(a))
        t = repo.locate(real(p if p.is_absolute() else where / p))
        if t.kind in ("task", "agent", "taskdir", "root"):
            return Decision(
                False,
                f"spark-git: blocked: `git worktree {rest[0]} {a}` touches a worktree of task {t.task}; "
                f"use `spark-git cleanup {t.task}` (after complete) or `spark-git abandon {t.task} --why ...`",
            )
    return None


def _push_dests(refspec: str) -> list[str]:
    spec = refspec.lstrip("+")
    dst = spec.split(":", 1)[1] if ":" in spec else spec
    return [dst.removeprefix("refs/heads/")]


_FIX = {
    "merge": "spark-git merge <task> --agent <A> (agent → task) or spark-git complete <task> (task → main)",
    "rebase": "spark-git sync <task> --agent <A> / spark-git merge <task> --agent <A> (they rebase agent branches for you)",
    "reset": "spark-git abandon <task> --why ... (or ask a human; spark-git never drops commits without an archive ref)",
    "pull": "spark-git merge <task> --agent <A> / spark-git complete <task>",
    "push": "spark-git complete <task> (lands the approved, gated task head on main), then push main yourself as a human",
}


def _block_git(sub: str, branch: str | None, what: str, pl: Place | None = None) -> Decision:
    if pl is not None and pl.kind == "task":
        fix = f"spark-git merge {pl.task} --agent <A>" if sub in ("merge", "pull", "rebase") else (
            f"spark-git complete {pl.task}" if sub == "push" else f"spark-git abandon {pl.task} --why ..."
        )
        where = f"in the task worktree of {pl.task}"
    elif pl is not None:
        fix = "spark-git complete <task>"
        where = "in the main worktree"
    else:
        fix = _FIX[sub]
        where = f"naming {branch}"
    return Decision(False, f"spark-git: blocked: `git {sub}` {where} would move {what} past the gates; use `{fix}`")
