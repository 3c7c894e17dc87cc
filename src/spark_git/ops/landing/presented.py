"""What `approve --changes` shows the human before asking, and records in its result: the commits
(agent, subject), a diffstat against the base, the last gate results, the reviewers' decisions and
the open flags. Read only; built from the commit being approved, so what was shown is what is
recorded."""

from __future__ import annotations

from spark_git.core import gitdrivers
from spark_git.core.errors import SparkError
from spark_git.core.git import Git, branch_ref
from spark_git.core.model import Model
from spark_git.gates import evidence
from spark_git.ops.shared import history
from spark_git.state.models import TaskFile
from spark_git.state.report_evidence import AgentStatus
from spark_git.state.store import Store


class PresentedCommit(Model):
    sha: str
    agent: str | None  # None: not attributable
    subject: str


class DiffFile(Model):
    path: str
    added: int | None  # None: a binary file
    removed: int | None


class GateResult(Model):
    gate: str  # "build" or "final"
    result: str  # "passed" or "failed"
    commit: str | None
    agent: str | None = None
    at: str | None = None
    log_path: str | None = None
    on_this_commit: bool  # the gate ran on the commit being approved


class ReviewerDecision(Model):
    agent: str
    status: str | None  # the reviewer's last report (None: never reported)
    decision: str | None  # APPROVED / REJECTED
    reviewed: str | None  # the task head the decision was for
    current: bool  # the decision is for the commit being approved
    feedback: str | None = None


class Presented(Model):
    task: str
    commit_sha: str
    base_branch: str
    base: str  # the commit the diffstat is taken against (the merge base with the base branch)
    commits: list[PresentedCommit]  # newest first
    files: list[DiffFile]
    added: int
    removed: int
    gates: list[GateResult]  # the last run of each gate
    reviewers: list[ReviewerDecision]
    flags: list[str]  # what the human should know before approving
    # files in this head that a configured merge driver combined where both sides changed the same lines
    # (its updates onto the base), and those it would combine onto the base as it is now
    combined: list[gitdrivers.Combined] = []


def present(store: Store, tf: TaskFile, target: str) -> Presented:
    layout, task = store.layout, tf.task_name
    git = layout.git()
    base = git.out("merge-base", branch_ref(tf.base_branch), target) if git.branch_head(tf.base_branch) else tf.base_commit
    files = _diffstat(git, base, target)
    view = Presented(
        task=task, commit_sha=target, base_branch=tf.base_branch, base=base, commits=_commits(store, task, base, target),
        files=files, added=sum(f.added or 0 for f in files), removed=sum(f.removed or 0 for f in files),
        gates=_gates(store, task, target), reviewers=_reviewers(store, tf, target), flags=[],
    )
    view.combined = _combined(store, tf, target)
    view.flags = _flags(store, tf, view)
    return view


def _combined(store: Store, tf: TaskFile, target: str) -> list[gitdrivers.Combined]:
    """What `update` recorded for the heads this one is built on, then what landing onto the moved base would add."""
    git = store.layout.git()
    try:
        trail = store.read_audit(tf.task_name)
    except SparkError:  # an unreadable trail: doctor reports it
        trail = None
    out = [gitdrivers.Combined.model_validate(c) for e in (trail.events if trail else []) if e.get("kind") == "updated"
           and isinstance(e.get("new_head"), str) and git.is_ancestor(e["new_head"], target) for c in e.get("combined") or []]
    base_head = git.branch_head(tf.base_branch)
    if base_head and gitdrivers.declared(git.cwd, store.layout.repo.common_dir) and not git.is_ancestor(base_head, target):
        out += gitdrivers.combined(git, base_head, target)
    return out


def _commits(store: Store, task: str, base: str, target: str) -> list[PresentedCommit]:
    recs = store.layout.git().log_fields(f"{base}..{target}", ["%H", "%s", "%B"])  # every commit that lands, merged side branches included
    notes = store.notes_in(f"{base}..{target}")
    return [PresentedCommit(sha=sha, agent=history.agent_of(body, notes.get(sha, []))[0], subject=subject) for sha, subject, body in recs]


def _diffstat(git: Git, base: str, target: str) -> list[DiffFile]:
    out = git.run("diff", "--numstat", "-z", "--no-renames", base, target).stdout
    res = []
    for item in out.split("\0"):
        added, _, rest = item.partition("\t")
        removed, _, path = rest.partition("\t")
        if path:
            res.append(DiffFile(path=path, added=int(added) if added.isdigit() else None, removed=int(removed) if removed.isdigit() else None))
    return res


def _gates(store: Store, task: str, target: str) -> list[GateResult]:
    try:
        trail = store.read_audit(task)
    except SparkError:  # an unreadable trail: no gate results to show (doctor reports it)
        trail = None
    last: dict[str, GateResult] = {}
    for e in trail.build_verifications if trail else []:
        name = str(e.get("gate") or "build")
        result = evidence.result_of(e)
        g = GateResult(gate=name, result=str(result), commit=e.get("commit"), agent=e.get("agent"), at=e.get("at"),
                       log_path=e.get("log_path"), on_this_commit=e.get("commit") == target)
        # A run on the commit approved outranks a later run on another (a refused merge changed nothing
        # here): the screen shows what the gate said about this head.
        if g.on_this_commit or name not in last or not last[name].on_this_commit:
            last[name] = g
    return list(last.values())


def _reviewers(store: Store, tf: TaskFile, target: str) -> list[ReviewerDecision]:
    res = []
    for name, entry in tf.agents.items():
        if entry.role != "reviewer":
            continue
        r = _report(store, tf.task_name, name)
        res.append(ReviewerDecision(agent=name, status=r.status if r else None, decision=r.decision if r else None,
                                    reviewed=r.last_review_sha if r else None, current=bool(r and r.last_review_sha == target),
                                    feedback=r.feedback if r else None))
    return res


def _report(store: Store, task: str, agent: str) -> AgentStatus | None:
    try:
        return store.read_status(task, agent)
    except SparkError:  # an unreadable report: shown as never reported (doctor reports the file)
        return None


def _flags(store: Store, tf: TaskFile, view: Presented) -> list[str]:
    git, target = store.layout.git(), view.commit_sha
    flags = [f"{c.sha[:12]} is not attributed to an agent: {c.subject}" for c in view.commits if c.agent is None]
    if not view.commits:
        flags.append(f"nothing to approve: {target[:12]} adds no commit to {view.base_branch}")
    for g in view.gates:
        if g.result == "failed":
            flags.append(f"the last {g.gate} gate failed" + (f" (on {g.commit[:12]})" if g.commit else ""))
        elif g.result == evidence.NOT_RUN:
            flags.append(f"no {g.gate} gate is configured: nothing ran")
    if not any(g.gate == "build" and g.on_this_commit and g.result == "passed" for g in view.gates):
        flags.append(f"no passing build gate on {target[:12]} itself")
    for r in view.reviewers:
        if r.decision != "APPROVED":
            flags.append(f"reviewer {r.agent}: " + (f"{r.decision}" + (f": {r.feedback}" if r.feedback else "") if r.decision else "no decision"))
        elif not r.current:
            flags.append(f"reviewer {r.agent} approved {(r.reviewed or '?')[:12]}, not {target[:12]}")
    for name, entry in tf.agents.items():
        head = git.branch_head(entry.branch)
        if head and not git.is_ancestor(head, target):
            flags.append(f"agent {name} has commits on {entry.branch} that are not in what you approve")
        report = _report(store, tf.task_name, name)
        if report is not None and report.status in ("ERROR", "BLOCKED"):
            flags.append(f"agent {name} reports {report.status}: {report.feedback or '(no message)'}")
    for c in view.combined:
        flags.append(f"{c.path}: lines {c.spans()} were changed on both sides and merge={c.driver} combined them without a conflict; read the result")
    base_head = git.branch_head(view.base_branch)
    if base_head and base_head != view.base:
        flags.append(f"{view.base_branch} moved since (now {base_head[:12]}): complete will merge the task onto it (if its patch applies unchanged) and gate it again")
    return flags
