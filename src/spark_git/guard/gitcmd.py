"""Git commands in the hook policy. Any git command that can move a protected ref (a task branch, the
base branch, spark-git's refs) or write a worktree other than the caller's is blocked, with the
spark-git command that does it properly. Read-only commands are allowed anywhere. Standard library
only (runs before every tool call)."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core import paths
from spark_git.core.paths import Repo, real
from spark_git.guard import gitrefs, shwrites
from spark_git.guard.calls import Decision
from spark_git.guard.writes import Who, describe, guarded, holds_main_lock

READ = {
    "status", "log", "diff", "show", "blame", "annotate", "grep", "ls-files", "ls-tree", "ls-remote", "rev-parse", "rev-list",
    "describe", "shortlog", "cat-file", "show-ref", "for-each-ref", "name-rev", "merge-base", "cherry", "count-objects", "fsck",
    "help", "version", "var", "whatchanged", "range-diff", "check-ignore", "check-attr", "check-ref-format", "check-mailmap",
    "diff-tree", "diff-files", "diff-index", "show-branch", "verify-commit", "verify-tag", "patch-id", "format-patch", "archive",
    "reflog", "bundle", "difftool", "instaweb", "request-pull", "get-tar-commit-id", "column", "hash-object", "merge-tree",
}
# Write refs only (no worktree): judged by the refs they name, wherever they run.
REF_ONLY = {"branch", "tag", "fetch", "update-ref", "symbolic-ref", "remote", "notes", "config", "replace", "gc", "prune", "pack-refs", "repack"}
# Move the checked-out branch of where they run: never in a task or the main worktree.
MOVERS = {"merge", "pull", "reset", "rebase", "cherry-pick", "revert", "am"}
# Read-only forms of commands that otherwise write: (subcommand, first argument).
READ_FORMS = {("stash", "list"), ("stash", "show"), ("worktree", "list"), ("submodule", "status"), ("submodule", "summary"),
              ("apply", "--check"), ("apply", "--stat"), ("clean", "-n"), ("clean", "--dry-run"), ("lfs", "ls-files"), ("lfs", "status")}
_GLOBAL_WITH_VALUE = ("-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix")
REDIRECT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")
# Of those, the ones that put the worktree or the refs elsewhere (a temporary GIT_INDEX_FILE does not:
# it is judged as the file it writes).
_ELSEWHERE_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")
# `-c` keys an agent may not set: they run commands, pull in configuration or point git elsewhere.
_AGENT_CONFIG_DENIED = ("alias.", "include.", "includeif.", "url.", "core.hookspath", "core.worktree", "core.bare", "core.fsmonitor",
                        "core.sshcommand", "core.gitproxy", "remote.", "notes.", "core.notesref")
_FIX = {
    "merge": "spark-git merge <task> --agent <A> (agent → task) or spark-git complete <task> (task → main)",
    "rebase": "spark-git update <task> (the task onto its base) / spark-git sync <task> --agent <A> / spark-git merge <task> --agent <A> (they rebase for you)",
    "reset": "spark-git abandon <task> --why ... (or ask a human; spark-git never drops commits without an archive ref)",
    "pull": "spark-git merge <task> --agent <A> / spark-git complete <task>",
    "push": "spark-git complete <task> (lands the approved, gated task head on main), then push main yourself as a human",
    "branch": "spark-git cleanup <task> (after complete) or spark-git abandon <task> --why ...",
    "tag": "git tag on main after spark-git complete, as the coordinator",
    "notes": "spark-git merge <task> --agent <A> / spark-git complete <task> (they record the gate's verdicts)",
    "update-ref": "git commit / git reset on the agent's own branch; spark-git merge <task> --agent <A> / spark-git complete <task>",
    "reflog": "spark-git cleanup <task> (archives, then drops what the task no longer needs)",
    "gc": "git gc (without --prune=now)",
}


def protected_branches(repo: Repo) -> dict[str, str]:
    """branch → what it is ("the task branch of X" / "the base branch")."""
    res: dict[str, str] = {}
    try:
        entries = list(os.scandir(repo.tasks_root))
    except OSError:
        entries = []
    for d in entries:
        tf = paths.read_json(Path(d.path) / paths.TASK_JSON) if d.name != paths.MAIN_LOCK_DIR else None
        if not tf:
            continue
        if isinstance(tf.get("task_branch"), str):
            res[tf["task_branch"]] = f"the task branch of {d.name}"
        if isinstance(tf.get("base_branch"), str):
            res.setdefault(tf["base_branch"], "the base branch")
    try:
        head = (repo.common / "HEAD").read_text().strip()
    except OSError:
        head = ""
    if head.startswith("ref: refs/heads/"):
        res.setdefault(head[len("ref: refs/heads/"):], "the base branch")
    return res


def protected_ref(ref: str, branches: dict[str, str]) -> str | None:
    """What `ref` (a branch name, a full ref or a refspec destination) protects, if anything."""
    ref = ref.lstrip("+")
    if ref.startswith(("refs/spark/", "refs/notes/spark")) or ref in ("refs/spark", "refs/notes/spark"):
        return "spark-git's own refs"
    name = ref.removeprefix("refs/heads/")
    if "*" in name and ref.startswith("refs/heads/"):
        return "every branch (a wildcard)"
    return f"{branches[name]} ({name})" if name in branches else None


# Where a computed directory (`cd "$(...)"`, an unknown `$VAR`) leads: git commands that write there
# cannot be placed, so an agent's are blocked.
UNKNOWN_DIR = Path("/__spark_git_unknown_dir__")


def directory(here: Path, target: str) -> Path:
    if "$" in target or "__spark_subst__" in target or "`" in target:
        return UNKNOWN_DIR
    p = Path(os.path.expanduser(target))
    return p if p.is_absolute() else here / p


def _parse(args: list[str], here: Path) -> tuple[str | None, list[str], Path, bool, dict[str, str]]:
    """(subcommand, its arguments, where it runs, whether --git-dir/--work-tree redirect it, the
    `-c`/`--config-env` settings: lowercased key → value, `$VAR` for --config-env)."""
    i, redirected, cfg = 0, False, dict[str, str]()
    while i < len(args):
        a = args[i]
        if a == "-C" and i + 1 < len(args):
            here = directory(here, args[i + 1])
            i += 2
        elif a in _GLOBAL_WITH_VALUE and i + 1 < len(args):
            redirected = redirected or a in ("--git-dir", "--work-tree") or args[i + 1].lower().startswith(("core.worktree", "core.bare"))
            _setting(cfg, a, args[i + 1])
            i += 2
        elif a.startswith("-"):
            redirected = redirected or a.startswith(("--git-dir=", "--work-tree="))
            if a.startswith("--config-env="):
                _setting(cfg, "--config-env", a.split("=", 1)[1])
            i += 1
        else:
            return a, args[i + 1 :], here, redirected, cfg
    return None, [], here, redirected, cfg


def _setting(cfg: dict[str, str], opt: str, text: str) -> None:
    if opt in ("-c", "--config-env"):
        key, _, value = text.partition("=")
        cfg[key.lower()] = value if opt == "-c" else "$" + value


def check(who: Who, here: Path, args: list[str], env: dict[str, str]) -> Decision | None:
    sub, rest, where, redirected, cfg = _parse(args, here)
    if sub is None:
        return None
    if "__spark_subst__" in sub or "$" in sub or "`" in sub:
        return Decision(False, f"spark-git: blocked: the git subcommand `{sub}` is computed at run time; the hook cannot know what it "
                               "runs — run the plain git command instead")
    cfg.update(_env_settings(env))
    denied = _agent_settings(who, cfg, env)
    if denied is not None:
        return denied
    redirected = redirected or any(k in env for k in _ELSEWHERE_ENV)
    d = _agent_paths(who, sub, rest) or _files_written(who, sub, rest, where)
    if d is not None:
        return d
    if "GIT_INDEX_FILE" in env:  # the index it writes is a file like any other
        d = shwrites.check_target(who, where, env["GIT_INDEX_FILE"], f"GIT_INDEX_FILE={env['GIT_INDEX_FILE']}")
        if d is not None:
            return d
    if (sub in MOVERS or sub == "push") and not _aborts(sub, rest):
        pl = who.repo.locate(real(where))
        if pl.kind in ("task", "main"):
            return _block_mover(sub, pl.kind, pl.task)  # named after where it runs: the clearer fix
    branches = protected_branches(who.repo)
    d = _refs(who, sub, rest, branches, where, (cfg, env))
    read = sub in READ or (sub, rest[0] if rest else "") in READ_FORMS
    if d is not None or read or (sub in REF_ONLY and not redirected) or _aborts(sub, rest):
        return d
    if redirected:
        return Decision(
            False,
            f"spark-git: blocked: `git {sub}` with --git-dir/--work-tree/GIT_DIR cannot be checked against the worktree it writes; "
            "run it inside that worktree (or with `git -C <worktree>`)",
        )
    return _place(who, sub, rest, where)


def _aborts(sub: str, rest: list[str]) -> bool:
    return sub in ("merge", "rebase", "cherry-pick", "revert", "am") and any(a in ("--abort", "--quit") for a in rest)


def _refs(who: Who, sub: str, rest: list[str], branches: dict[str, str], where: Path, settings: tuple[dict[str, str], dict[str, str]]) -> Decision | None:
    """The refs `git sub rest` would move, wherever it runs."""
    pos = [a for a in rest if not a.startswith("-")]
    hit: str | None = None
    agent = who.agent
    found = gitrefs.targets(sub, rest, where, who.repo, *settings)
    if found is not None or sub in ("switch", "checkout"):
        own = gitrefs.owners(who.repo, who.me.task, who.me.agent if agent else None, branches)
        hit = next((h for t in found or [] if t for h in [gitrefs.judge(t, own, agent, sub)] if h), None)
        if hit is None and sub in ("switch", "checkout"):
            hit = _creating(rest, own, agent, sub)
    elif sub == "symbolic-ref" and (len(pos) >= 2 or any(a in ("-d", "--delete") for a in rest)):
        hit = "a worktree's HEAD (which branch its commits move)"
    elif sub == "worktree":
        hit = _creating(rest, gitrefs.Owners(branches, None), False, sub)
    elif sub in ("filter-branch", "filter-repo"):
        hit = "every branch it is given (a history rewrite)"
    hit = hit or _history(who, sub, rest, pos)
    if hit is None and sub == "worktree" and pos[:1] and pos[0] in ("remove", "move"):
        return _worktree_removal(who.repo, where, pos)
    if hit is None and sub == "worktree" and agent and pos[:1] and pos[0] not in ("list", "prune"):
        hit = "another worktree (agents work in their own; `git worktree add --force` can check out a protected branch)"
    if hit is None and sub in ("config", "remote") and agent and (_config_writes(rest) if sub == "config" else _remote_writes(pos)):
        hit = "the repository's shared configuration (.git/config)"
    if hit is None and sub == "replace" and agent and (pos or rest) and not any(a in ("-l", "--list") for a in rest):
        hit = "what every worktree reads for a commit (refs/replace/, shared by the task and main)"
    if hit is None:
        return None
    fix = _FIX.get(sub, "spark-git merge <task> --agent <A> / spark-git complete <task>")
    return Decision(False, f"spark-git: blocked: `git {sub}` would move or rewrite {hit} past the gates; use `{fix}`")


def _history(who: Who, sub: str, rest: list[str], pos: list[str]) -> str | None:
    """What drops the history archive refs keep: reflogs and unreachable objects (an agent's), or
    spark-git's refs' reflogs (anyone's)."""
    spark = any("refs/spark" in a or a.startswith("spark/") for a in pos[1:])
    if sub == "reflog" and pos[:1] and pos[0] in ("expire", "delete") and (who.agent or spark):
        return "reflogs that keep archived work reachable"
    if who.agent and sub == "gc" and any(gitrefs.is_opt(a, "--prune") for a in rest):
        return "unreachable objects archived work may still need (`git gc` without --prune is fine)"
    if who.agent and sub == "prune" and not any(gitrefs.is_opt(a, "-n", "--dry-run") for a in rest):
        return "unreachable objects archived work may still need"
    return None


def _agent_paths(who: Who, sub: str, rest: list[str]) -> Decision | None:
    """An agent's git commands that write the hook or git settings in its own worktree (`git rm
    .claude/settings.json`), or out of it (`git apply --directory=../x`, `--unsafe-paths`)."""
    if not who.agent or sub not in ("rm", "mv", "checkout", "restore", "apply"):
        return None
    hit = None
    if sub == "apply":
        d = gitrefs.value_of(rest, "--directory")
        if any(gitrefs.is_opt(a, "--unsafe-paths") for a in rest) or (d is not None and (d.startswith(("/", "~")) or ".." in d.split("/"))):
            hit = "files outside the agent's worktree"
        elif d is not None and guarded(Path(d), who.protect):
            hit = guarded(Path(d), who.protect)
    else:
        args = rest[rest.index("--") + 1 :] if "--" in rest else [a for a in rest if not a.startswith("-")]
        hit = next((g for a in args for g in [guarded(Path(a), who.protect)] if g), None)
    if hit is None:
        return None
    return Decision(
        False,
        f"spark-git: blocked: agent {who.me.agent} may not change {hit} with `git {sub}`: it holds the hooks, git's or spark-git's "
        "own configuration, or lies outside its worktree; ask the coordinator",
    )


_OUTPUT_SUBS = ("diff", "log", "show", "diff-tree", "diff-index", "diff-files", "range-diff", "format-patch", "whatchanged")
_CLONE_VALUED = ("-b", "--branch", "-o", "--origin", "-c", "--config", "--depth", "--reference", "--reference-if-able", "--separate-git-dir",
                 "-u", "--upload-pack", "--template", "-j", "--jobs", "--filter", "--shallow-since", "--shallow-exclude", "--server-option",
                 "--bundle-uri", "--ref-format", "--object-format")


def _files_written(who: Who, sub: str, rest: list[str], where: Path) -> Decision | None:
    """Files git itself writes where it is told (`diff --output`, `format-patch -o`, `archive -o`,
    `bundle create`, `clone`, `init`, `worktree add`), judged like any other write."""
    found = [gitrefs.value_of(rest, "--output") if sub in _OUTPUT_SUBS else None]
    if sub == "format-patch":
        found.append(gitrefs.value_of(rest, "-o", "--output-directory"))
    elif sub == "archive":
        found.append(gitrefs.value_of(rest, "-o", "--output"))
    elif sub in ("clone", "init", "bundle", "worktree"):
        opts, pos = gitrefs.split_args(rest, _CLONE_VALUED if sub == "clone" else ("--separate-git-dir", "--template", "-b", "-B", "--reason"))
        found.append(gitrefs.value_of(opts, "--separate-git-dir"))
        if sub == "clone" and pos:
            found.append(pos[1] if len(pos) > 1 else os.path.basename(pos[0].rstrip("/")).removesuffix(".git") or ".")
        elif sub == "init":
            found.append(pos[0] if pos else ".")
        elif pos[:1] in (["create"], ["add"]) and len(pos) > 1:
            found.append(pos[1])
    for target in filter(None, found):
        d = shwrites.check_target(who, where, target, f"git {sub} {target}")
        if d is not None:
            return d
    return None


def _remote_writes(pos: list[str]) -> bool:
    return bool(pos) and pos[0] in ("add", "rename", "rm", "remove", "set-head", "set-branches", "set-url")


def _env_settings(env: dict[str, str]) -> dict[str, str]:
    """`GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>` on the command line, as `-c` settings."""
    out: dict[str, str] = {}
    for k, v in env.items():
        if k.startswith("GIT_CONFIG_KEY_"):
            out[v.lower()] = env.get("GIT_CONFIG_VALUE_" + k[len("GIT_CONFIG_KEY_"):], "")
    return out


def _agent_settings(who: Who, cfg: dict[str, str], env: dict[str, str]) -> Decision | None:
    if not who.agent:
        return None
    bad = next((k for k in cfg if k.startswith(_AGENT_CONFIG_DENIED)), None)
    if bad is None and "GIT_CONFIG_PARAMETERS" in env:
        bad = "GIT_CONFIG_PARAMETERS"
    if bad is None:
        return None
    return Decision(
        False,
        f"spark-git: blocked: agent {who.me.agent} may not set `{bad}` for a git command: it defines remotes, refspecs, aliases, "
        "hooks or included configuration the hook cannot see; run the plain git command",
    )


def _creating(rest: list[str], own: gitrefs.Owners, agent: bool, sub: str) -> str | None:
    """`switch -C X`, `checkout -B X`, `worktree add -B X` reset X; an agent switching its worktree
    to a branch not its own (or a name computed at run time) would commit onto it. `--detach` moves
    no branch."""
    for i, a in enumerate(rest[:-1]):
        if a in ("-C", "-B", "--force-create", "-c", "-b", "--create") and rest[i + 1].removeprefix("refs/heads/") in own.others:
            return f"{own.others[rest[i + 1].removeprefix('refs/heads/')]} ({rest[i + 1]})"
    if not agent or "--" in rest or any(gitrefs.is_opt(a, "--detach") or (sub == "switch" and a == "-d") for a in rest):
        return None
    if any(a in ("-C", "-B", "--force-create", "-c", "-b", "--create", "--orphan") for a in rest):
        return None
    pos = [a for a in rest if not a.startswith("-")]
    if len(pos) != 1:
        return None
    if "__spark_subst__" in pos[0] or "$" in pos[0]:
        return "a branch named at run time"
    name = pos[0].removeprefix("refs/heads/")
    return f"{own.others[name]} ({name})" if name in own.others else None


def _config_writes(rest: list[str]) -> bool:
    writes = ("--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section", "-e", "--edit")
    pos = [a for a in rest if not a.startswith("-")]
    if any(a.startswith("--get") or a in ("-l", "--list") for a in rest):
        return False
    return any(a in writes for a in rest) or (bool(pos) and pos[0] in ("set", "unset", "edit", "rename-section", "remove-section")) or len(pos) >= 2


def _worktree_removal(repo: Repo, where: Path, pos: list[str]) -> Decision | None:
    for a in pos[1:]:
        p = Path(os.path.expanduser(a))
        t = repo.locate(real(p if p.is_absolute() else where / p))
        if t.kind in ("task", "agent", "taskdir", "root"):
            return Decision(
                False,
                f"spark-git: blocked: `git worktree {pos[0]} {a}` touches a worktree of task {t.task}; "
                f"use `spark-git cleanup {t.task}` (after complete) or `spark-git abandon {t.task} --why ...`",
            )
    return None


def _place(who: Who, sub: str, rest: list[str], where: Path) -> Decision | None:
    """A command that writes the worktree it runs in (and may move its branch)."""
    resolved = real(where)
    pl = who.repo.locate(resolved)
    if pl.kind in ("task", "main") and (sub in MOVERS or sub == "push"):
        return _block_mover(sub, pl.kind, pl.task)
    if who.agent and resolved.is_relative_to(UNKNOWN_DIR):
        return Decision(
            False,
            f"spark-git: blocked: `git {sub}` runs in a directory computed at run time; agent {who.me.agent} runs git commands "
            "that change things only in its own worktree — name the directory literally",
        )
    if who.agent:
        if (pl.kind == "agent" and (pl.task, pl.agent) == (who.me.task, who.me.agent)) or (
            pl.kind == "outside" and not resolved.is_relative_to(who.repo.common)
        ):
            return None
        return Decision(
            False,
            f"spark-git: blocked: agent {who.me.agent} of task {who.me.task} runs git commands that change things only in its own "
            f"worktree; `git {sub}` would run {describe(pl)}",
        )
    if pl.kind == "agent":
        return Decision(
            False,
            f"spark-git: blocked: `git {sub}` would run in agent {pl.agent}'s worktree of task {pl.task}; only that agent "
            f"changes it — delegate to it (its work lands with `spark-git merge {pl.task} --agent {pl.agent}`)",
        )
    if pl.kind == "main" and not holds_main_lock(who.repo, who.sessions):
        return Decision(
            False,
            f"spark-git: blocked: `git {sub}` would change the main worktree and this session does not hold the main lock; "
            "work in a task (`spark-git start`) or take it with `spark-git lock main`",
        )
    return None


def _block_mover(sub: str, kind: str, task: str | None) -> Decision:
    if kind == "task":
        if sub in ("merge", "pull", "rebase"):
            fix = f"spark-git update {task}` (onto its base) or `spark-git merge {task} --agent <A>"
        elif sub in ("cherry-pick", "am"):
            fix = f"spark-git merge {task} --agent <A>"
        else:
            fix = f"spark-git complete {task}" if sub == "push" else f"spark-git abandon {task} --why ..."
        where, what = f"in the task worktree of {task}", f"the task branch of {task}"
    else:
        fix, where, what = "spark-git complete <task>", "in the main worktree", "the base branch (main worktree)"
    return Decision(False, f"spark-git: blocked: `git {sub}` {where} would move {what} past the gates; use `{fix}`")
