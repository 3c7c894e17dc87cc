"""The repo's spark-git configuration: `.spark-git.toml` or `[tool.spark-git]` in pyproject.toml."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from spark_git.core import committed, configfiles, suggest
from spark_git.core import riskdefaults as rd
from spark_git.core.errors import BadInput
from spark_git.core.model import Model, empty_list

Command = list[str] | str | None  # argv list, or a shell string


class _Strict(Model):
    # strict: TOML has real types; `timeout_s = true` or `"10"` is a mistake, not 1 s or 10 s.
    model_config = ConfigDict(extra="forbid", strict=True)


def _relative(v: str | None) -> str | None:
    # A report is read from the worktree the gate ran in; a path outside it would read another run's file.
    if v and (Path(v).is_absolute() or ".." in Path(v).parts):
        raise ValueError("must be a path relative to the worktree, without '..'")
    return v or None  # "" turns off a report inherited from [gates]


class RequireConfig(_Strict):
    coverage: float | None = Field(None, ge=0, le=1, description="Least total coverage (0.0-1.0) the gate's coverage report may show.")
    tests_failed: int | None = Field(None, ge=0, description="Most failed + erroring tests the gate's JUnit XML may show.")
    tests_min: int | None = Field(None, ge=0, description="Least number of tests the gate's JUnit XML must show.")


class GateReportsConfig(_Strict):
    """One gate's own report paths and thresholds; a key left out is taken from [gates]."""

    junit: str | None = Field(None, description="JUnit XML (path or glob) this gate's command writes.")
    coverage: str | None = Field(None, description="coverage.py XML (Cobertura) or JSON report this gate's command writes.")
    require: RequireConfig | None = None

    @field_validator("junit", "coverage")
    @classmethod
    def _paths(cls, v: str | None) -> str | None:
        return _relative(v)


@dataclass(frozen=True)
class ReportSpec:
    """What one gate reads after its command (paths relative to its worktree) and the thresholds it enforces."""

    junit: str | None
    coverage: str | None
    require: RequireConfig

    def fingerprint(self) -> dict[str, Any]:
        return {"junit": self.junit, "coverage": self.coverage, "require": self.require.model_dump()}


class GatesConfig(_Strict):
    build: Command = Field(None, description="Command run in the agent worktree before an agent merge.")
    final: Command = Field(None, description="Command run on the task head before landing on the base branch.")
    timeout_s: float = Field(1800.0, gt=0, description="Seconds before a gate is killed (with its process group).")
    junit: str | None = Field(None, description="JUnit XML (path or glob, relative to the worktree) the gate commands write, e.g. 'build/junit.xml'.")
    coverage: str | None = Field(None, description="coverage.py XML (Cobertura) or JSON report the gate commands write, e.g. 'coverage.xml'.")
    require: RequireConfig = Field(default_factory=RequireConfig, description="Thresholds on the reports: a gate that misses one fails.")
    reports: dict[Literal["build", "final"], GateReportsConfig] = Field(
        default_factory=dict, description="Per-gate report paths and thresholds ([gates.reports.final]), over [gates]'s.")
    network: bool = Field(False, description="Give the gates the network (a gate that needs a package index says so); without it they run in a network namespace of their own.")
    env: list[str] = Field(default_factory=empty_list, description="Names of more environment variables a gate keeps (it gets PATH, the locale, the virtualenv and spark-git's SPARK_* otherwise).")

    @field_validator("junit", "coverage")
    @classmethod
    def _paths(cls, v: str | None) -> str | None:
        return _relative(v)

    @field_validator("build", "final")
    @classmethod
    def _command(cls, v: Command) -> Command:
        # An empty command would read as "no gate": leaving the key out says that, a "" is a mistake.
        if v is not None and (not v or (isinstance(v, str) and not v.strip()) or (isinstance(v, list) and not str(v[0]).strip())):
            raise ValueError("is an empty command; give the command to run, or leave the key out for no gate")
        return v

    def reports_for(self, gate: str) -> ReportSpec | None:
        """The resolved reports of gate `gate` ("build" / "final"); None when it reads none and requires nothing."""
        own = next((r for g, r in self.reports.items() if g == gate), None)
        got = own.model_fields_set if own else set()
        junit = own.junit if own and "junit" in got else self.junit
        coverage = own.coverage if own and "coverage" in got else self.coverage
        require = own.require if own and own.require is not None else self.require
        if not junit and not coverage and require == RequireConfig.model_construct():
            return None
        return ReportSpec(junit, coverage, require)


class AttributionConfig(_Strict):
    mode: Literal["require", "add", "off"] = "add"


class ApprovalConfig(_Strict):
    allow_non_interactive: bool = False
    allowed_signers: str | None = Field(None, description="A committed allowed-signers file (git's format) of the team's approvers, read from the base branch.")
    unprotected_key: bool = Field(False, description="Accept an approval key without a passphrase (CI, demos): any process of the user could approve; "
                                  "every approval note and the approval screen say so.")


class VerifyConfig(_Strict):
    since: str | None = Field(None, description="`spark-git verify`: the last commit of the base branch from before spark-git was adopted; every first-parent commit after it must carry a landing attestation.")


class RiskConfig(_Strict):
    """003's tables by default. A repo's lists and per-level agents EXTEND the defaults (its entries
    first); `replace = true` (every key given) or `replace = ["high", "agents"]` replaces instead."""

    replace: bool | list[str] = Field(False, description="true, or the keys given here that replace the defaults instead of extending them.")
    tests: list[str] = Field(default_factory=lambda: list(rd.TESTS), description="MEDIUM: test files, tried before every other list.")
    high: list[str] = Field(default_factory=lambda: list(rd.HIGH))
    medium: list[str] = Field(default_factory=lambda: list(rd.MEDIUM))
    low: list[str] = Field(default_factory=lambda: list(rd.LOW))
    keywords: list[str] = Field(default_factory=lambda: list(rd.KEYWORDS), description="In the title or objective: escalate one level.")
    agents: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in rd.AGENTS.items()}, description="Required agent set for each risk level.")
    content_agents: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in rd.CONTENT_AGENTS.items()},
        description="A word in the title, objective or changed paths → agents added to the set.")

    @model_validator(mode="before")
    @classmethod
    def _extend_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        replace = data.get("replace", False)
        out = dict(data)
        for key, value in data.items():
            if key == "replace" or key not in cls.model_fields or replace is True or (isinstance(replace, list) and key in replace):
                continue
            out[key] = _extended(value, cls.model_fields[key].get_default(call_default_factory=True))
        return out


def _extended(value: Any, default: Any) -> Any:
    """A list: the repo's entries, then the defaults'. A dict of lists: each key's lists joined."""
    if isinstance(default, list) and isinstance(value, list):
        return list(dict.fromkeys([*value, *default]))
    if isinstance(default, dict) and isinstance(value, dict):
        merged = {k: list(v) for k, v in default.items()}
        for k, v in value.items():
            merged[k] = list(dict.fromkeys([*merged.get(k, []), *v])) if isinstance(v, list) else v
        return merged
    return value


class ScopeConfig(_Strict):
    """003's domain authority in SCOPE_NEGOTIATION."""

    veto: list[str] = Field(default_factory=lambda: list(rd.VETO), description="Roles whose RESOLVE_NOW (or BLOCKING items) cannot be deferred.")
    final_say: list[str] = Field(default_factory=lambda: list(rd.FINAL_SAY),
                                 description="Roles whose scope decision settles a disagreement among the other reviewers.")


class WorktreeConfig(_Strict):
    include: list[str] = Field(default_factory=empty_list, description="Ignored files (gitignore patterns) copied into new worktrees.")
    setup: list[Command] = Field(default_factory=empty_list, description="Commands run in each new worktree after creation.")


class PortsConfig(_Strict):
    start: int = Field(41000, ge=1024, le=65535)
    end: int = Field(41999, ge=1024, le=65535)

    @model_validator(mode="after")
    def _ordered(self) -> PortsConfig:
        if self.start > self.end:
            raise ValueError(f"ports.start ({self.start}) is greater than ports.end ({self.end})")
        return self


class EvidenceConfig(_Strict):
    coverage_min: float | None = Field(None, ge=0, le=1, description="An agent's evidence with coverage below this (0.0-1.0) is not COMPLETE.")


class RulesConfig(_Strict):
    requirements_min_bytes: int = Field(100, ge=0, description="A requirements report smaller than this many bytes does not count (003: 100).")


class QueueConfig(_Strict):
    batch_max: int = Field(8, ge=1, le=64, description="Most tasks gated together by the merge queue; 1 gates every task alone.")
    wait_s: float = Field(7200.0, gt=0, description="How long a `complete` waits for its outcome while another process drains the queue.")
    poll_s: float = Field(0.1, gt=0, description="How often a waiting `complete` looks for its outcome.")
    retries: int = Field(0, ge=0, le=5, description="Re-run a candidate's failing final gate up to this many times before blaming it; "
                         "a pass on a retry is recorded as flaky (0: the first failure counts).")
    shared: list[str] = Field(default_factory=empty_list, description="Paths (globs on the whole repository path, e.g. 'pyproject.toml', 'uv.lock') "
                              "that tie a task touching them to every other ready task: never gated in a lane apart.")
    recheck: Literal["combined", "none"] = Field("combined", description="A lane that passed on a base another lane has since moved: "
                                                 "'combined' gates it again on the combined tree before it lands, 'none' lands it on its lane's verdict.")
    parallel: int | None = Field(None, ge=1, le=64, description="Candidates the merge queue gates at once (the batch and speculative ones, "
                                 "each in its own scratch worktree); unset: the CPU count. 1 gates one at a time (batch, then bisection).")

    lanes: bool = Field(False, description="With more than one runner, gate tasks whose changed paths do not overlap in separate lanes "
                        "(at most one per runner) that land without waiting for each other; see `shared`, `recheck` and `lanes_from`.")
    lanes_from: float = Field(0.16, ge=0, le=1, description="With `lanes`: a batch is split into lanes (with `pipeline`: lanes are opened across "
                              "batches instead of stacking them) only once at least this share of the last 32 tasks the queue landed or "
                              "failed were culprits (lanes pay for their combined rechecks only when batches often fail); 0: always.")
    pipeline: bool = Field(False, description="With more than one runner, gate the next batch while runners are free, without waiting for the "
                           "one ahead: stacked on what the batch ahead is expected to land, landing right after it; with `lanes`: a lane "
                           "for waiting tasks whose paths overlap none in flight (lanes across batches).")

    def runners(self) -> int:
        """`parallel`, or the CPU count (at least 1) when unset."""
        return self.parallel or max(1, os.cpu_count() or 1)


class ArchiveConfig(_Strict):
    ignored_max_bytes: int = Field(
        10 * 1024 * 1024, ge=0, description="Ignored files of a worktree archived at cleanup/abandon, at most this many bytes in all (0: none).")


class CleanupConfig(_Strict):
    caches: list[str] = Field(default_factory=empty_list, description="Build caches (file or directory names, glob patterns) cleanup/abandon remove without archiving, "
                              "besides .pytest_cache, __pycache__, .mypy_cache and .ruff_cache.")


class SyncConfig(_Strict):
    remote: str | None = Field(None, description="Remote mode: the git remote holding task locks, state, queue and notes (off when unset).")
    machine: str | None = Field(None, description="This machine's name in remote leases; default: the host name.")
    lease_s: float = Field(900.0, gt=0, description="Seconds a remote lock's lease lasts; renewed by every mutating command and `heartbeat`.")
    state_branch: str | None = Field(None, description="Keep the remote's locks, queue and notes in this one branch (e.g. 'spark/state') instead of refs/spark/* and refs/notes/*: for hosts that refuse custom ref namespaces.")


class AgentsConfig(_Strict):
    parallel: int | None = Field(None, ge=1, description="`agent run --all`: most clients running at once; default: the CPU count.")


class TopLevel(_Strict):
    # The keys outside every [section], with their rules. `Config` adds the sections; a load validates
    # this and each section the file holds on its own (`validated`), not the whole `Config`.
    tasks_root: str | None = Field(None, description="Where task directories live; default: '<repo-dir>.tasks' beside the main worktree.")
    base_branch: str | None = Field(None, description="Branch tasks start from and land on; default: the main worktree's branch.")
    task_branch_template: str = "{task}"
    agent_branch_template: str = "task-{task}-agent-{agent}"
    default_agents: list[str] = Field(default_factory=empty_list)
    agent_roles: dict[str, Literal["reviewer", "updater", "other"]] = Field(default_factory=dict)
    protocol: Literal["full", "light"] = "full"
    stale_minutes: float = Field(30.0, gt=0, description="WORKING without an update for longer than this is flagged.")

    @field_validator("task_branch_template")
    @classmethod
    def _task_template(cls, v: str) -> str:
        if "{task}" not in v:
            raise ValueError("must contain {task}")
        return _check_template(v, "{task}")

    @field_validator("agent_branch_template")
    @classmethod
    def _agent_template(cls, v: str) -> str:
        if "{task}" not in v or "{agent}" not in v:
            raise ValueError("must contain {task} and {agent}")
        return _check_template(v, "{task} and {agent}")

    @model_validator(mode="after")
    def _templates_apart(self) -> TopLevel:
        # git cannot hold both "t" and "t/a" (a directory/file clash in refs/heads): the second
        # branch of every start would fail after the first was created.
        t = self.task_branch_template.format(task="t")
        a = self.agent_branch_template.format(task="t", agent="a")
        if a.startswith(t + "/") or t.startswith(a + "/"):
            raise ValueError(f"task_branch_template gives {t!r} and agent_branch_template {a!r}: git cannot hold a branch and another one below it")
        return self


class Config(TopLevel):
    # The whole configuration: the top-level keys and one model per [section] (no docstring: it
    # would become the description in `spark-git schema config`).
    gates: GatesConfig = Field(default_factory=GatesConfig)
    attribution: AttributionConfig = Field(default_factory=AttributionConfig)
    approval: ApprovalConfig = Field(default_factory=ApprovalConfig)
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    risk: RiskConfig = Field(default_factory=RiskConfig)
    scope: ScopeConfig = Field(default_factory=ScopeConfig)
    worktree: WorktreeConfig = Field(default_factory=WorktreeConfig)
    ports: PortsConfig = Field(default_factory=PortsConfig)
    evidence: EvidenceConfig = Field(default_factory=EvidenceConfig)
    rules: RulesConfig = Field(default_factory=RulesConfig)
    queue: QueueConfig = Field(default_factory=QueueConfig)
    archive: ArchiveConfig = Field(default_factory=ArchiveConfig)
    cleanup: CleanupConfig = Field(default_factory=CleanupConfig)
    sync: SyncConfig = Field(default_factory=SyncConfig)
    agents: AgentsConfig = Field(default_factory=AgentsConfig)


def _check_template(v: str, allowed: str) -> str:
    # Any other placeholder ("{nope}", "{0}", a stray brace) would fail later in str.format.
    try:
        sample = v.format(task="t", agent="a")
    except (KeyError, IndexError, ValueError, AttributeError) as e:
        raise ValueError(f"may only use the placeholders {allowed} ({type(e).__name__}: {e})") from None
    problem = branch_name_problem(sample)
    if problem:
        raise ValueError(f"gives {sample!r}, which is not a valid branch name: {problem}")
    return v


_REF_BAD_CHARS = set(" ~^:?*[\\\x7f")


def branch_name_problem(name: str) -> str | None:
    """Why `name` is not a plain branch name (the rules of `git check-ref-format --branch`, without
    running git at config load), or None. A full ref ("refs/tags/x") would create that ref, not a branch."""
    if name.startswith("refs/") or name == "HEAD":
        return "it is a full ref name; give the branch name only"
    if name.startswith(("-", "/")) or name.endswith(("/", ".")) or "//" in name:
        return "it starts with '-' or '/', ends with '/' or '.', or contains '//'"
    if ".." in name or "@{" in name or name == "@" or any(c in _REF_BAD_CHARS or ord(c) < 32 for c in name):
        return "it contains '..', '@{', a space, a control character or one of ~^:?*[\\"
    if any(part.startswith(".") or part.endswith(".lock") for part in name.split("/")):
        return "a component starts with '.' or ends with '.lock'"
    return None


def format_validation_error(source: str, err: ValidationError, prefix: str = "") -> str:
    lines = [f"invalid configuration in {source}:"]
    for e in err.errors():
        key = prefix + ".".join(str(p) for p in e["loc"]) if e["loc"] else prefix.rstrip(".") or "(top level)"
        msg = "unknown key" + suggest.did_you_mean(str(e["loc"][-1]), _known(e["loc"])) if e["type"] == "extra_forbidden" and e["loc"] else e["msg"]
        lines.append(f"  {key}: {msg}")
    return "\n".join(lines)


def _known(loc: tuple[int | str, ...]) -> list[str]:
    """The keys allowed where `loc` points (its section's fields, or the top level's)."""
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        f = model.model_fields.get(str(part))
        if f is None or not (isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)):
            return []
        model = f.annotation
    return list(model.model_fields)


def _sections() -> dict[str, type[_Strict]]:
    """Config's [sections] by key: the fields `Config` adds to `TopLevel`."""
    return {name: f.annotation for name, f in Config.model_fields.items()
            if name not in TopLevel.model_fields and isinstance(f.annotation, type) and issubclass(f.annotation, _Strict)}


def defaults() -> Config:
    """`Config()` without building a validator: the defaults are valid by construction (a test
    compares the two), and a repo without a config file then validates nothing at start-up."""
    sections: dict[str, Any] = {name: section.model_construct() for name, section in _sections().items()}
    return Config.model_construct(**sections)


def validated(data: dict[str, Any]) -> Config:
    """`Config.model_validate(data)`, building the validators of the top-level keys and of the
    sections `data` holds only: pydantic builds a model's whole schema on its first validation, all
    16 sections (≈ 10 ms of every command) for a file that sets one key. A mistake anywhere is
    reported by the whole model, as before: every bad key at once, under its full name."""
    sections = _sections()
    if any(name in data and not isinstance(data[name], dict) for name in sections) or not set(data) <= set(Config.model_fields):
        return Config.model_validate(data)
    try:
        top = TopLevel.model_validate({k: v for k, v in data.items() if k not in sections})
        given = {name: section.model_validate(data[name]) for name, section in sections.items() if name in data}
    except ValidationError:
        return Config.model_validate(data)
    values: dict[str, Any] = {**dict(top), **{name: given[name] if name in given else section.model_construct() for name, section in sections.items()}}
    return Config.model_construct(_fields_set=set(data), **values)


def with_local_sync(config: Config, path: Path) -> Config:
    """This clone's own `[sync]` keys (`spark-git remote enable/disable`, kept in the git directory:
    a machine's name and switch are not the repository's) over the repository's."""
    if not path.is_file():
        return config
    try:
        local = tomllib.loads(path.read_text()).get("sync", {})
        merged = SyncConfig.model_validate({**config.sync.model_dump(exclude_unset=False), **local})
    except (tomllib.TOMLDecodeError, ValidationError) as e:
        raise BadInput(f"cannot read {path}: {e}", hint="rewrite it with `spark-git remote enable NAME` or `spark-git remote disable`") from e
    return config.model_copy(update={"sync": merged})


def load_config(main_worktree: Path, common_dir: Path | None = None) -> tuple[Config, str | None]:
    """The config and where it came from (None: defaults). The repository's part is the one committed
    on the base branch (core/committed.py); `.spark-git.toml` wins over pyproject; the person's config
    file and SPARK_GIT_* variables then set personal keys (core/configfiles.py)."""
    data, source, prefix = committed.section(main_worktree, common_dir or main_worktree / ".git")
    mine, mine_sources = configfiles.personal(configfiles.environ())
    if data is None and not mine:
        return defaults(), None
    where = ", ".join([s for s in (source, *mine_sources) if s])
    try:
        return validated(configfiles.merged(data, mine)), where
    except ValidationError as e:
        raise BadInput(format_validation_error(where, e, prefix), details={"errors": e.errors(include_url=False, include_context=False)},
                       hint="`spark-git schema config` lists every key, its type and default", next=["spark-git schema config"]) from e


def check_tasks_root(root: Path, main_worktree: Path, common_dir: Path, configured: bool) -> None:
    """Refuses a tasks_root spark-git cannot safely own (exit 2 naming the key). `root` and the repo
    paths are resolved. Task worktrees inside a repository would show up there as untracked files
    (and, inside ours, make the main worktree dirty so that no `complete` could ever land)."""
    where = "tasks_root" if configured else "the default tasks_root"
    hint = "set tasks_root to a directory outside every repository (the default is '<repo-dir>.tasks')"
    if root == common_dir or common_dir in root.parents:
        raise BadInput(f"tasks_root {root} is inside the git directory {common_dir}", hint="choose a tasks_root outside .git (the default is '<repo-dir>.tasks')")
    if root == main_worktree or main_worktree in root.parents:
        raise BadInput(f"{where} {root} is inside the repository {main_worktree}", hint=hint, details={"key": "tasks_root"})
    if root in main_worktree.parents:
        raise BadInput(f"{where} {root} contains the repository {main_worktree}", hint=hint, details={"key": "tasks_root"})
    if root.exists() and not root.is_dir():
        raise BadInput(f"{where} {root} exists and is not a directory", hint=hint, details={"key": "tasks_root"})
    if not configured:
        return  # the default sits beside the repo; a repo nested in another one keeps working as before
    for d in (root, *root.parents):
        if (d / ".git").exists():
            raise BadInput(f"tasks_root {root} is inside another git repository ({d})", hint=hint, details={"key": "tasks_root"})
