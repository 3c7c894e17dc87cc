"""The refs a git command writes, and whose they are. An agent may move only its own branch (and its
own worktree's HEAD), and make, move or drop scratch branches nobody else has; every other ref — a
task or base branch, another agent's branch, a tag, notes, spark-git's refs, another worktree's HEAD
(`main-worktree/HEAD`, `worktrees/<id>/HEAD`), refs read from stdin — is refused. The coordinator
may not move the protected ones. Options are matched as git's parse-options does (`--mov` is
`--move`). Standard library only (runs before every tool call)."""

from __future__ import annotations

import os
from pathlib import Path

from spark_git.core import paths
from spark_git.core.paths import Repo

UNKNOWN = "refs it cannot see (from stdin, a computed name or unseen configuration)"
EVERY = "every branch or tag (--all, --mirror, --tags, a wildcard)"
UPDATE_REFS = "the branches that point into the rebased commits (--update-refs, an update-ref todo line)"


def is_opt(a: str, *names: str) -> bool:
    """`a` is one of `names`: exactly, `--name=value`, an unambiguous-looking abbreviation of a long
    name (git accepts `--mov` for `--move`), or a letter in a cluster of short flags (`-Df`)."""
    for n in names:
        if a == n or (n.startswith("--") and a.startswith(n + "=")):
            return True
        if n.startswith("--") and a.startswith("--") and len(a.split("=", 1)[0]) >= 4 and n.startswith(a.split("=", 1)[0]):
            return True
        if len(n) == 2 and n[0] == "-" and len(a) > 2 and a[0] == "-" and a[1] != "-" and a[1:].isalpha() and n[1] in a[1:]:
            return True
    return False


def split_args(rest: list[str], valued: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(options, positional). Options in `valued` take the next word unless written `--opt=value`."""
    opts: list[str] = []
    pos: list[str] = []
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "--":
            pos += rest[i + 1 :]
            break
        if a.startswith("-") and a != "-":
            opts.append(a)
            if "=" not in a and any(a == v or (v.startswith("--") and len(a) >= 4 and v.startswith(a)) for v in valued):
                opts.append(rest[i + 1] if i + 1 < len(rest) else "")
                i += 1
        else:
            pos.append(a)
        i += 1
    return opts, pos


def value_of(opts: list[str], *names: str) -> str | None:
    for i, a in enumerate(opts):
        for n in names:
            if a.startswith(n + "=") and n.startswith("--"):
                return a.split("=", 1)[1]
            if a == n or (n.startswith("--") and len(a) >= 4 and n.startswith(a) and "=" not in a):
                return opts[i + 1] if i + 1 < len(opts) else ""
    return None


# -- whose refs ----------------------------------------------------------------------------------


class Owners:
    """Branch → what it is, for every branch the caller may not move; the caller's own branch."""

    __slots__ = ("gitdir", "mine", "others")

    def __init__(self, others: dict[str, str], mine: str | None, gitdir: Path | None = None) -> None:
        self.others = others
        self.mine = mine
        self.gitdir = gitdir  # the agent's own worktree's git dir: its HEAD is the agent's


def owners(repo: Repo, task: str | None, agent: str | None, protected: dict[str, str]) -> Owners:
    """For an agent: the protected branches, every other agent's branch and every branch checked out
    in another worktree; for the coordinator (agent None): the protected branches."""
    if agent is None:
        return Owners(protected, None)
    others = dict(protected)
    mine = None
    try:
        entries = [d for d in os.scandir(repo.tasks_root) if d.is_dir()]
    except OSError:
        entries = []
    for d in entries:
        tf = paths.read_json(Path(d.path) / paths.TASK_JSON) or {}
        agents = tf.get("agents")
        if not isinstance(agents, dict):
            continue
        for name, a in agents.items():
            branch = a.get("branch") if isinstance(a, dict) else None
            if not isinstance(branch, str):
                continue
            if (d.name, name) == (task, agent):
                mine = branch
            else:
                others.setdefault(branch, f"agent {name}'s branch of task {d.name}")
    own_gitdir = gitdir_of(paths.agent_worktree(repo.tasks_root, task or "", agent))
    for gd in checked_out_dirs(repo):
        ref = head_ref(gd)
        if ref and ref.startswith("refs/heads/") and gd != own_gitdir:
            others.setdefault(ref[len("refs/heads/"):], "a branch checked out in another worktree")
    if mine is not None:
        others.pop(mine, None)
    return Owners(others, mine, own_gitdir)


def checked_out_dirs(repo: Repo) -> list[Path]:
    out = [repo.common]
    try:
        out += [Path(e.path) for e in os.scandir(repo.common / "worktrees") if e.is_dir()]
    except OSError:
        pass
    return out


def gitdir_of(worktree: Path) -> Path | None:
    """The git dir of the worktree that holds `worktree` (walking up), resolved."""
    for cand in (worktree, *worktree.parents):
        dotgit = cand / ".git"
        if dotgit.is_dir():
            return Path(os.path.realpath(dotgit))
        try:
            text = dotgit.read_text().strip()
        except OSError:
            continue
        if text.startswith("gitdir:"):
            g = Path(text[len("gitdir:"):].strip())
            return Path(os.path.realpath(g if g.is_absolute() else cand / g))
        return None
    return None


def head_ref(gitdir: Path | None) -> str | None:
    """What HEAD in `gitdir` points at: `refs/heads/X`, or None (detached, unreadable)."""
    try:
        text = (gitdir / "HEAD").read_text().strip() if gitdir else ""
    except OSError:
        return None
    return text[5:].strip() if text.startswith("ref:") else None


# -- naming the refs -------------------------------------------------------------------------------


def full(ref: str, repo: Repo, where: Path, deref: bool = True, short: str = "refs/heads/") -> str:
    """A ref as written in a command, as the full ref it writes. HEAD (here, `main-worktree/HEAD`,
    `worktrees/<id>/HEAD`) is followed to its branch unless `deref` is False; a detached or
    undereferenced HEAD is `HEAD <gitdir>`; another worktree's other refs are `worktree-ref <name>`."""
    ref = ref.lstrip("+")
    if "__spark_subst__" in ref or "$" in ref or "`" in ref:
        return UNKNOWN
    gitdir: Path | None = None
    if ref == "HEAD" or ref == "@":
        gitdir = gitdir_of(where)
    elif ref == "main-worktree/HEAD":
        gitdir = repo.common
    elif ref.startswith("worktrees/") and ref.count("/") == 2 and ref.endswith("/HEAD"):
        gitdir = repo.common / "worktrees" / ref.split("/")[1]
    elif ref.startswith(("main-worktree/", "worktrees/")):
        return f"worktree-ref {ref}"
    if gitdir is not None:
        target = head_ref(gitdir) if deref else None
        return target or f"HEAD {os.path.realpath(gitdir)}"
    if ref.startswith("refs/"):
        return ref
    if short == "root":  # update-ref takes the name as given: `main` is a ref at the top of .git
        return f"root {ref}"
    return short + ref


def judge(target: str, own: Owners, agent: bool, via: str) -> str | None:
    """What `target` is when the caller may not write it, else None. `via` is the command family:
    fetch may update remote-tracking refs."""
    if target in (UNKNOWN, EVERY, UPDATE_REFS):
        return target
    if target.startswith(("refs/spark/", "refs/notes/spark")):
        return f"spark-git's own refs ({target})"
    if target.startswith("HEAD "):
        if not agent or (own.gitdir is not None and target == f"HEAD {own.gitdir}"):
            return None  # the agent's own worktree's HEAD, detached
        return f"another worktree's HEAD ({target[5:]})"
    if target.startswith("worktree-ref "):
        return f"another worktree's ref ({target[13:]})"
    if target.startswith("root "):
        name = target[5:]
        return None if name.isupper() else f"a ref named {name} at the top of .git (it shadows branches)"  # ORIG_HEAD: per worktree
    if target.startswith("refs/heads/"):
        name = target[len("refs/heads/"):]
        if "*" in name:
            return EVERY
        if name in own.others:
            return f"{own.others[name]} ({name})"
        return None
    if target.startswith("refs/tags/"):
        name = target[len("refs/tags/"):]
        if agent:
            return f"a tag ({name}, which only the coordinator makes)"
        return f"a tag named like {own.others[name]} ({name}): it shadows the branch" if name in own.others else None
    if target.startswith("refs/remotes/") and via == "fetch":
        return None
    return f"a ref that is not the agent's branch ({target})" if agent else None


# -- the refs each command writes ----------------------------------------------------------------

_FETCH_VALUED = ("--depth", "--deepen", "--shallow-since", "--shallow-exclude", "-j", "--jobs", "--upload-pack", "--refmap",
                 "-o", "--server-option", "--negotiation-tip", "--filter", "--submodule-prefix")
_PUSH_VALUED = ("--repo", "--receive-pack", "--exec", "-o", "--push-option")
_BRANCH_VALUED = ("--set-upstream-to", "-u", "--format", "--sort", "--contains", "--no-contains", "--merged", "--no-merged",
                  "--points-at")
_TAG_VALUED = ("-m", "--message", "-F", "--file", "-u", "--local-user", "--cleanup", "--format", "--sort", "--contains",
               "--no-contains", "--merged", "--no-merged", "--points-at", "--trailer")
_REBASE_VALUED = ("--onto", "-s", "--strategy", "-X", "--strategy-option", "-x", "--exec", "-C", "--whitespace", "--empty")
NOTES_WRITES = ("add", "copy", "append", "edit", "merge", "remove", "prune")


def targets(sub: str, rest: list[str], where: Path, repo: Repo, cfg: dict[str, str], env: dict[str, str]) -> list[str] | None:
    """The full refs `git sub rest` writes (UNKNOWN / EVERY where it cannot tell); None for a command
    that writes no refs (or is judged elsewhere)."""
    if sub == "update-ref":
        return _update_ref(rest, where, repo)
    if sub == "fast-import":
        return [UNKNOWN]
    if sub in ("fetch", "push", "send-pack", "pull"):  # pull fetches first: its refspecs are fetch's
        return _transfer("fetch" if sub == "pull" else sub, rest, where, repo, cfg) + _updating_refs(sub, rest, cfg, env)
    if sub == "branch":
        return _branch(rest, where, repo)
    if sub == "tag":
        opts, pos = split_args(rest, _TAG_VALUED)
        if not pos or any(is_opt(o, "-l", "--list", "-v", "--verify") or (o.startswith("-n") and o[2:].isdigit()) for o in opts):
            return []
        return ["refs/tags/" + p for p in (pos if any(is_opt(o, "-d", "--delete") for o in opts) else pos[:1])]
    if sub == "notes":
        return _notes(rest, cfg, env)
    if sub == "rebase":
        _, pos = split_args(rest, _REBASE_VALUED)
        return ([full(pos[1], repo, where)] if len(pos) >= 2 else []) + _updating_refs(sub, rest, cfg, env)
    return None


def _updating_refs(sub: str, rest: list[str], cfg: dict[str, str], env: dict[str, str]) -> list[str]:
    """`rebase --update-refs` (or `rebase.updateRefs`) moves every branch that points into the rebased
    commits — a task branch among them; an `update-ref` line slipped into the todo list by a
    sequence editor moves any ref."""
    if sub not in ("rebase", "pull"):
        return []
    on = any(is_opt(a, "--update-refs") for a in rest) or cfg.get("rebase.updaterefs", "").lower() in ("true", "1", "yes", "on")
    editor = " ".join(v for v in (env.get("GIT_SEQUENCE_EDITOR", ""), cfg.get("sequence.editor", "")) if v)
    return [UPDATE_REFS] if on or "update-ref" in editor or "__spark_subst__" in editor else []


def _update_ref(rest: list[str], where: Path, repo: Repo) -> list[str]:
    opts, pos = split_args(rest, ("-m",))
    if any(is_opt(o, "--stdin") for o in opts):
        return [UNKNOWN]
    if not pos:
        return []
    return [full(pos[0], repo, where, deref=not any(is_opt(o, "--no-deref") for o in opts), short="root")]


def _transfer(sub: str, rest: list[str], where: Path, repo: Repo, cfg: dict[str, str]) -> list[str]:
    """fetch/push/send-pack: each refspec's destination, those configured with `-c remote.X.*`, and
    the mass forms."""
    opts, pos = split_args(rest, _FETCH_VALUED if sub == "fetch" else _PUSH_VALUED)
    out: list[str] = []
    for key, value in cfg.items():
        if key.startswith("remote.") and key.endswith((".fetch", ".push")):
            out.append(_dest(value, where, repo, sub))
        elif key.startswith("remote.") and (key.endswith(".mirror") or "$" in value):
            out.append(EVERY if key.endswith(".mirror") else UNKNOWN)
    refmap = value_of(opts, "--refmap")
    if refmap:
        out.append(_dest(refmap, where, repo, sub))
    if sub != "fetch" and any(is_opt(o, "--all", "--branches", "--mirror", "--tags", "--prune") for o in opts):
        out.append(EVERY)
    specs = pos[1:]
    delete = any(is_opt(o, "-d", "--delete") for o in opts) and sub != "fetch"
    for spec in specs:
        if delete:
            out.append(full(spec, repo, where))
        elif ":" in spec or sub != "fetch":
            out.append(_dest(spec, where, repo, sub))
    return out


def _dest(spec: str, where: Path, repo: Repo, sub: str) -> str:
    src, colon, dst = spec.lstrip("+").partition(":")
    if not colon:
        dst = src  # push: the same name on the other side (HEAD: the current branch)
    if not dst:
        return "" if not colon or sub == "fetch" else full(src, repo, where)
    if dst == "HEAD" and sub == "fetch":
        return full("HEAD", repo, where)
    return full(dst, repo, where)


def _branch(rest: list[str], where: Path, repo: Repo) -> list[str]:
    opts, pos = split_args(rest, _BRANCH_VALUED)
    current = head_ref(gitdir_of(where)) or "HEAD"
    if any(is_opt(o, "-l", "--list", "-a", "--all", "-r", "--remotes", "--show-current", "-v", "--verbose") for o in opts):
        return []
    if any(is_opt(o, "-d", "-D", "--delete") for o in opts):
        return [full(p, repo, where) for p in pos]
    if any(is_opt(o, "-m", "-M", "--move", "-c", "-C", "--copy") for o in opts):
        moving = any(is_opt(o, "-m", "-M", "--move") for o in opts)
        old = full(pos[0], repo, where) if len(pos) >= 2 else current
        new = full(pos[-1], repo, where) if pos else old
        return [old, new] if moving else [new]
    upstream = value_of(opts, "--set-upstream-to", "-u") is not None or any(is_opt(o, "--unset-upstream", "--edit-description") for o in opts)
    if upstream:
        return [full(pos[0], repo, where) if pos else current]
    return [full(pos[0], repo, where)] if pos else []


def _notes(rest: list[str], cfg: dict[str, str], env: dict[str, str]) -> list[str]:
    i, ref = 0, None
    while i < len(rest) and rest[i].startswith("-"):
        if rest[i] == "--ref" and i + 1 < len(rest):
            ref, i = rest[i + 1], i + 2
            continue
        if rest[i].startswith("--ref="):
            ref = rest[i].split("=", 1)[1]
        i += 1
    sub = rest[i] if i < len(rest) else "list"
    if sub not in NOTES_WRITES:
        return []
    ref = ref or env.get("GIT_NOTES_REF") or cfg.get("core.notesref") or "refs/notes/commits"
    if "$" in ref or "__spark_subst__" in ref:
        return [UNKNOWN]
    if not ref.startswith("refs/"):
        ref = ("refs/" if ref.startswith("notes/") else "refs/notes/") + ref
    return [ref]
