"""Claude Code hook decisions. Runs before every tool call, so this module imports only the standard
library (no pydantic, GitPython, typer or rich): the repo is found by walking up for `.git`, the
tasks root from the layout rules, the task state by reading task.json as plain JSON.

`pre_tool_use(event)` returns a Decision; exit 0 allows, exit 2 blocks with the reason on stderr.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

WRITE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
SESSION_ENV = "SPARK_SESSION_ID"
# Documentation the coordinator may edit in the task worktree during IMPLEMENTATION; everything
# else there counts as source (code, tests, config, build files).
DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc")
DOC_DIRS = ("docs", "doc")


class Decision:
    # Plain classes, not dataclasses: importing dataclasses and building them costs ~20 ms per call.
    __slots__ = ("allow", "reason")

    def __init__(self, allow: bool, reason: str) -> None:
        self.allow = allow
        self.reason = reason  # one line

    @property
    def exit_code(self) -> int:
        return 0 if self.allow else 2


ALLOW_UNTOUCHED = Decision(True, "")  # not a spark-git repo: say nothing


# -- finding the repo without git ---------------------------------------------------------------


class Repo:
    __slots__ = ("main", "common", "tasks_root")

    def __init__(self, main: Path, common: Path, tasks_root: Path) -> None:
        self.main = main  # main worktree (resolved)
        self.common = common  # git common dir (resolved)
        self.tasks_root = tasks_root  # resolved


def _real(p: str | Path) -> Path:
    return Path(os.path.realpath(p))


def find_repo(start: Path) -> Repo | None:
    """Walks up from `start` to the first `.git`; follows `gitdir:` and `commondir` in linked
    worktrees. None when not in a repo (or a bare one)."""
    d = _real(start)
    for cand in (d, *d.parents):
        dotgit = cand / ".git"
        if dotgit.is_dir():
            common = dotgit
            break
        if dotgit.is_file():
            try:
                text = dotgit.read_text().strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            gitdir = Path(text[len("gitdir:"):].strip())
            if not gitdir.is_absolute():
                gitdir = cand / gitdir
            cd = gitdir / "commondir"
            try:
                rel = cd.read_text().strip()
            except OSError:
                common = gitdir  # a submodule-style gitdir with no commondir: it is its own repo
            else:
                common = Path(rel) if Path(rel).is_absolute() else gitdir / rel
            break
    else:
        return None
    common = _real(common)
    if common.name != ".git":
        return None  # separate git dir or bare: only the full CLI knows its main worktree
    main = common.parent
    return Repo(main, common, _tasks_root(main))


def _tasks_root(main: Path) -> Path:
    root: str | None = None
    try:
        ded = main / ".spark-git.toml"
        pp = main / "pyproject.toml"
        if ded.is_file():
            import tomllib  # only when there is a config to read

            root = tomllib.loads(ded.read_text()).get("tasks_root")
        elif pp.is_file():
            import tomllib

            root = tomllib.loads(pp.read_text()).get("tool", {}).get("spark-git", {}).get("tasks_root")
    except (OSError, ValueError):
        root = None  # the full CLI reports a bad config; the hook falls back to the default
    if not isinstance(root, str) or not root:
        return _real(f"{main}.tasks")
    p = Path(os.path.expanduser(root))
    return _real(p if p.is_absolute() else main / p)


# -- where a path is ----------------------------------------------------------------------------


class Place:
    __slots__ = ("kind", "task", "agent", "rel")

    def __init__(self, kind: str, task: str | None = None, agent: str | None = None, rel: tuple[str, ...] = ()) -> None:
        self.kind = kind  # "agent" (an agent worktree), "task" (a task worktree), "taskdir" (task files), "root", "main", "outside"
        self.task = task
        self.agent = agent
        self.rel = rel  # path parts inside the worktree / task dir


def locate(repo: Repo, p: Path) -> Place:
    try:
        parts = p.relative_to(repo.tasks_root).parts
    except ValueError:
        parts = None
    if parts is not None:
        if not parts:
            return Place("root")
        task = parts[0]
        if len(parts) >= 2 and parts[1] == "code":
            return Place("task", task, None, parts[2:])
        if len(parts) >= 4 and parts[1] == "agents" and parts[3] == "code":
            return Place("agent", task, parts[2], parts[4:])
        return Place("taskdir", task, None, parts[1:])
    try:
        return Place("main", rel=p.relative_to(repo.main).parts)
    except ValueError:
        return Place("outside")


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def task_state(repo: Repo, task: str) -> str | None:
    tf = _read_json(repo.tasks_root / task / "task.json")
    return tf.get("state") if tf else None


def is_source(rel: tuple[str, ...]) -> bool:
    if not rel:
        return True
    if rel[0] in DOC_DIRS:
        return False
    return not rel[-1].lower().endswith(DOC_SUFFIXES)


def sessions(event: dict) -> set[str]:
    return {s for s in (event.get("session_id"), os.environ.get(SESSION_ENV)) if isinstance(s, str) and s}


def holds_main_lock(repo: Repo, event: dict) -> bool:
    lock = _read_json(repo.tasks_root / "main" / "task.json")
    return bool(lock) and lock.get("session_id") in sessions(event)


# -- the decision -------------------------------------------------------------------------------


def repo_around(p: Path) -> Repo | None:
    """The repo `p` is in, or whose default tasks root (`<main>.tasks`) `p` is in: a coordinator
    standing in `<repo>.tasks/<task>/` is not inside any git worktree."""
    repo = find_repo(p)
    if repo is not None:
        return repo
    for d in (_real(p), *_real(p).parents):
        if d.name.endswith(".tasks") and len(d.name) > len(".tasks"):
            main = d.with_name(d.name[: -len(".tasks")])
            if (main / ".git").is_dir():
                found = find_repo(main)
                return found if found is not None and found.tasks_root == d else None
    return None


def active(repo: Repo) -> bool:
    """Some task lock (or the main lock) exists. A repo whose tasks all ended is left alone like one
    that never used spark-git (its main worktree needs no main lock then)."""
    try:
        return any(os.path.isfile(os.path.join(e.path, "task.json")) for e in os.scandir(repo.tasks_root) if e.is_dir())
    except OSError:
        return False


def pre_tool_use(event: dict) -> Decision:
    cwd = event.get("cwd") or os.getcwd()
    tool = event.get("tool_name") or ""
    tin = event.get("tool_input") or {}
    if not isinstance(tin, dict):
        tin = {}
    repo = repo_around(Path(cwd))
    if tool in WRITE_TOOLS:
        target = tin.get("file_path") or tin.get("notebook_path")
        if not isinstance(target, str) or not target:
            return Decision(True, f"spark-git: allowed: {tool} names no path") if repo else ALLOW_UNTOUCHED
        if repo is None:  # standing outside, writing in? judge by where the write lands
            t = Path(os.path.expanduser(target))
            repo = repo_around((t if t.is_absolute() else Path(cwd) / t).parent)
        if repo is None or not active(repo):
            return ALLOW_UNTOUCHED
        return decide_write(repo, _real(cwd), Path(cwd), target, event)
    if repo is None or not active(repo):
        return ALLOW_UNTOUCHED
    if tool == "Bash":
        cmd = tin.get("command")
        if not isinstance(cmd, str):
            return Decision(True, "spark-git: allowed: no command")
        return decide_bash(repo, Path(cwd), cmd)
    return Decision(True, f"spark-git: allowed: {tool} is not checked")


def decide_write(repo: Repo, cwd_real: Path, cwd: Path, target: str, event: dict) -> Decision:
    path = Path(os.path.expanduser(target))
    resolved = _real(path if path.is_absolute() else cwd / path)  # symlinks and `..` resolved
    me = locate(repo, cwd_real)
    there = locate(repo, resolved)
    shown = f"{target} (→ {resolved})" if str(resolved) != target else target

    if me.kind == "agent":
        own = f"{repo.tasks_root / me.task / 'agents' / me.agent}"
        if there.kind == "agent" and (there.task, there.agent) == (me.task, me.agent):
            return Decision(True, f"spark-git: allowed: agent {me.agent} writes in its own worktree")
        if there.kind == "taskdir" and there.task == me.task and (
            there.rel[:2] == ("agents", me.agent) or there.rel == (f"{me.task}-{me.agent}-requirements.md",)
        ):
            return Decision(True, f"spark-git: allowed: agent {me.agent} writes its own report")
        if there.kind != "outside" or resolved.is_relative_to(repo.common):
            return Decision(
                False,
                f"spark-git: blocked: agent {me.agent} of task {me.task} may write only in its own worktree "
                f"and its reports under {own}; {shown} is {_describe(there)}",
            )
        return Decision(True, "spark-git: allowed: outside the repository")

    # Coordinator (or anyone not in an agent worktree).
    if there.kind == "agent":
        return Decision(
            False,
            f"spark-git: blocked: {shown} is in agent {there.agent}'s worktree of task {there.task}; "
            f"only that agent writes there — delegate the change to it (its work lands with `spark-git merge {there.task} --agent {there.agent}`)",
        )
    if there.kind == "task" and task_state(repo, there.task) == "IMPLEMENTATION" and is_source(there.rel):
        return Decision(
            False,
            f"spark-git: blocked: task {there.task} is in IMPLEMENTATION: source changes in the task worktree come from agents "
            f"and land with `spark-git merge {there.task} --agent A` (the coordinator may edit docs and *.md; {shown} is source)",
        )
    if there.kind == "main" and not holds_main_lock(repo, event):
        return Decision(
            False,
            f"spark-git: blocked: {shown} is in the main worktree and this session does not hold the main lock; "
            "work in a task (`spark-git start`) or take it with `spark-git lock main`",
        )
    return Decision(True, f"spark-git: allowed: {_describe(there)}")


def _describe(pl: Place) -> str:
    return {
        "agent": f"in agent {pl.agent}'s worktree of task {pl.task}",
        "task": f"in the task worktree of {pl.task}",
        "taskdir": f"in the task directory of {pl.task}",
        "root": "the tasks root",
        "main": "in the main worktree",
        "outside": "outside the repository",
    }[pl.kind]


# -- Bash ---------------------------------------------------------------------------------------

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
            if tok in _SEPARATORS or set(tok) <= set(";&|()\n"):
                out.append([])
            elif "\n" in tok:
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
        tf = _read_json(d / "task.json") if d.name != "main" else None
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


def decide_bash(repo: Repo, cwd: Path, cmd: str) -> Decision:
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
        r = _real(p if p.is_absolute() else here / p)
        pl = locate(repo, r)
        structural = (
            repo.tasks_root.is_relative_to(r)  # the tasks root or one of its ancestors
            or (pl.kind == "taskdir" and (len(pl.rel) == 0 or pl.rel == ("agents",) or (len(pl.rel) == 2 and pl.rel[0] == "agents")))
            or (pl.kind == "taskdir" and pl.rel in (("task.json",), ("audit-trail.json",), ("audit-snapshot.json",)))
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
    pl = locate(repo, _real(where))
    positional = [a for a in rest if not a.startswith("-")]
    if sub in ("merge", "rebase", "reset", "pull", "push"):
        named = [b for a in positional for b in _branch_names(a) if b in branches]
        in_protected = pl.kind in ("task", "main")
        if sub in ("merge", "reset", "pull") and not in_protected:
            return None  # moves the current (agent or unrelated) branch only
        if sub == "merge" and any(a in ("--abort", "--quit") for a in rest):
            return None
        if sub == "rebase" and any(a in ("--abort", "--quit") for a in rest):
            return None
        if sub == "rebase" and not in_protected:
            # `git rebase <upstream> <branch>` checks out and rewrites <branch>.
            if len(positional) >= 2 and positional[1] in branches:
                return _block_git(sub, positional[1], branches[positional[1]], repo)
            return None
        if sub == "push" and not in_protected:
            dests = [b for a in positional[1:] for b in _push_dests(a) if b in branches]
            if not dests:
                return None
            return _block_git(sub, dests[0], branches[dests[0]], repo)
        what = f"the task branch of {pl.task}" if pl.kind == "task" else "the base branch (main worktree)"
        return _block_git(sub, None, what, repo, pl, named)
    if sub == "worktree" and rest and rest[0] in ("remove", "move"):
        for a in rest[1:]:
            if a.startswith("-"):
                continue
            p = Path(os.path.expanduser(a))
            t = locate(repo, _real(p if p.is_absolute() else where / p))
            if t.kind in ("task", "agent", "taskdir", "root"):
                return Decision(
                    False,
                    f"spark-git: blocked: `git worktree {rest[0]} {a}` touches a worktree of task {t.task}; "
                    f"use `spark-git cleanup {t.task}` (after complete) or `spark-git abandon {t.task} --why ...`",
                )
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


def _branch_names(arg: str) -> list[str]:
    return [arg.removeprefix("refs/heads/")]


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


def _block_git(sub: str, branch: str | None, what: str, repo: Repo, pl: Place | None = None, named: list[str] | None = None) -> Decision:
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


# -- entry point (the fast path from __main__) --------------------------------------------------


def main(argv: list[str]) -> int:
    """`spark-git hook pre-tool-use` (fast path). Other hook events go through the full CLI."""
    if argv[:1] != ["pre-tool-use"] or any(a in ("-h", "--help") for a in argv):
        return -1  # not ours: let the typer app handle it
    raw = sys.stdin.read()
    try:
        event = json.loads(raw) if raw.strip() else {}
    except ValueError as e:
        sys.stderr.write(f"spark-git hook: stdin is not JSON ({e}); allowing\n")
        return 1  # a non-blocking hook error in Claude Code: the tool call proceeds, the user sees this
    if not isinstance(event, dict):
        sys.stderr.write("spark-git hook: stdin is not a JSON object; allowing\n")
        return 1
    d = pre_tool_use(event)
    if not d.allow:
        sys.stderr.write(d.reason + "\n")
    elif d.reason:
        sys.stdout.write(d.reason + "\n")
    return d.exit_code
