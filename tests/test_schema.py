"""`spark-git schema` is the contract: the JSON each command actually prints with --json (and each
file spark-git writes) validates against the schema `spark-git schema NAME` prints, and against the
pydantic model behind it. jsonschema is not a dependency: a small validator for the subset pydantic
emits lives here, strict about undocumented keys."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from fixtures import contractdoc
from fixtures.repo import commit, make_repo

from tests.hookutil import run_cli

CONFIG = """protocol = "light"
[approval]
allow_non_interactive = true
[ports]
start = 45700
end = 45799
"""


def validate(value: Any, schema: dict, root: dict, path: str = "$") -> list[str]:
    """Errors of `value` against `schema` (refs into root's $defs). Objects may only carry keys the
    schema names unless it says additionalProperties."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return validate(value, root["$defs"][name], root, path)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [validate(value, s, root, path) for s in schema[key]]
            return [] if any(not o for o in options) else [f"{path}: matches none of {key}: {options}"]
    errs: list[str] = []
    if "allOf" in schema:
        for s in schema["allOf"]:
            errs += validate(value, s, root, path)
    if "const" in schema and value != schema["const"]:
        errs.append(f"{path}: {value!r} != const {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{path}: {value!r} not in {schema['enum']}")
    t = schema.get("type")
    if t is not None:
        kinds = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "null": type(None), "array": list, "object": dict}
        ok = any(isinstance(value, kinds[k]) and not (k in ("integer", "number") and isinstance(value, bool)) for k in ([t] if isinstance(t, str) else t))
        if not ok:
            return [*errs, f"{path}: {type(value).__name__} is not {t}"]
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        errs.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errs += validate(item, schema["items"], root, f"{path}[{i}]")
    if isinstance(value, dict) and (t == "object" or "properties" in schema):
        props = schema.get("properties", {})
        for req in schema.get("required", []):
            if req not in value:
                errs.append(f"{path}: missing required {req!r}")
        extra = schema.get("additionalProperties", "strict")
        for k, v in value.items():
            if k in props:
                errs += validate(v, props[k], root, f"{path}.{k}")
            elif isinstance(extra, dict):
                errs += validate(v, extra, root, f"{path}.{k}")
            elif extra is not True:
                errs.append(f"{path}: key {k!r} is not in the schema")
    return errs


class Contract:
    def __init__(self, repo: Path) -> None:
        self.repo = repo
        r = run_cli(repo, "schema", "--json")
        assert r.returncode == 0, r
        envelope = r.json
        self.schemas: dict[str, dict] = envelope["data"]["schemas"]
        assert not validate(envelope["data"], self.schemas["schema"], self.schemas["schema"])
        self.checked: set[str] = {"schema"}
        self.examples: dict[str, tuple[list[str], dict[str, Any]]] = {}  # the first envelope of each: docs/json-contract.md

    def check(self, name: str, value: Any) -> None:
        from spark_git.ops.views import schema as mod

        s = self.schemas[name]
        errs = validate(value, s, s)
        assert not errs, f"{name}: {errs}"
        mod.model_of(name).model_validate(value)  # the model that produced it accepts it back
        self.checked.add(name)

    def run(self, name: str, *args: str, ok: bool = True, **kw) -> dict:
        r = run_cli(self.repo, *args, "--json", **kw)
        env = r.json  # exactly one JSON object on stdout
        assert not validate(env, self.schemas["envelope"], self.schemas["envelope"]), env
        if ok:
            assert r.returncode == 0 and env["status"] == "OK", r
            assert env["data_schema"] == name, env["data_schema"]  # the envelope says which shape `data` has
            self.check(name, env["data"])
        else:
            assert r.returncode != 0 and env["status"] in ("BLOCKED", "FAIL") and env["data_schema"] == "error", r
            self.check("error", env["data"])
        if name not in ("schema",):
            self.examples.setdefault(name if ok else "error", ([*args], env))
        return env

    def documented(self, tmp: Path) -> None:
        """docs/json-contract.md's examples: rewritten from this run with SPARK_REGEN_GOLDEN=1; else each
        validated against its schema today, and one there for every command this run saw."""
        if os.environ.get("SPARK_REGEN_GOLDEN"):
            contractdoc.write(self.examples, str(tmp))
        doc = contractdoc.examples_in_doc()
        assert sorted(set(self.examples) - set(doc)) == [], "commands without an example in docs/json-contract.md (SPARK_REGEN_GOLDEN=1)"
        for name, env in doc.items():
            assert not validate(env, self.schemas["envelope"], self.schemas["envelope"]), name
            s = self.schemas[env["data_schema"]]
            errs = validate(env["data"], s, s)
            assert not errs, f"docs/json-contract.md's `{name}` example no longer matches its schema: {errs}"


def _report_with_evidence(c: Contract, tmp: Path, root: Path) -> None:
    out = {"status": "OK", "summary": "done", "artifacts": {"files_changed": ["app.py"]}, "gates": {"needs_review": True},
           "next": {"recommended_agent": "Reviewer", "reason": "review"}}
    spark = {"id": "spark_1", "version": "4.3", "agent": "a2", "state": {"status": "completed", "phase": 5},
             "quality": {"step_6_testing": {"coverage": 0.9, "tests_total": 3, "tests_passed": 3, "tests_failed": 0},
                         "violations_total": 0, "can_proceed": True}, "evidence": {"files_created": ["app.py"]}}
    c.check("evidence output", out)
    c.check("evidence spark", spark)
    (tmp / "out.json").write_text(json.dumps(out))
    (tmp / "spark.json").write_text(json.dumps(spark))
    c.run("report", "report", "t1", "--agent", "a2", "--status", "WORKING", "--evidence", str(tmp / "out.json"), "--evidence", str(tmp / "spark.json"))
    c.check("evidence", json.loads((root / "t1" / "agents" / "a2" / "status.json").read_text())["evidence"])


def _remote_commands(c: Contract, tmp: Path) -> None:
    """Remote mode against a bare repository on file://."""
    shared = tmp / "shared.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(shared)], check=True)
    subprocess.run(["git", "remote", "add", "origin", f"file://{shared}"], cwd=c.repo, check=True)
    subprocess.run(["git", "push", "--quiet", "origin", "main"], cwd=c.repo, check=True)
    c.run("remote check", "remote", "check", "origin")
    c.run("remote enable", "remote", "enable", "origin", "--machine", "m1")
    c.run("start", "start", "t3", "--agents", "")
    c.run("heartbeat", "heartbeat", "t3")
    c.run("remote status", "remote", "status")
    c.run("remote sync", "remote", "sync")
    c.run("abandon", "abandon", "t3", "--why", "schema test done")
    c.run("remote disable", "remote", "disable")


def _verify_command(c: Contract, tmp: Path) -> None:
    """`verify` FAILs here (no `.spark-landers` is committed) with its own `data`, not an error's; `accept`
    runs in a repo of its own (tests/verifykit.py: approvers and landers committed), where it holds."""
    from tests.verifykit import day

    r = run_cli(c.repo, "verify", "--json")
    assert r.returncode == 1 and r.json["status"] == "FAIL" and r.json["data_schema"] == "verify", r
    assert not validate(r.json, c.schemas["envelope"], c.schemas["envelope"])
    c.check("verify", r.json["data"])
    c.run("ci", "ci", "github")
    q = day(tmp / "accept", 1)
    pushed = commit(q.repo, {"hotfix.py": "h = 1\n"}, "a hotfix straight onto main")
    r = q.spark("t0", "accept", pushed, "--why", "the schema test keeps it", "--json")
    assert r.returncode == 0 and r.json["data_schema"] == "accept" and not validate(r.json, c.schemas["envelope"], c.schemas["envelope"]), r
    c.check("accept", r.json["data"])


def _forge_command(c: Contract, tmp: Path, root: Path) -> None:
    """`complete --via gh`: a stand-in `gh` first on PATH (tests/test_forge.py), the push to the bare remote."""
    from tests.test_forge import STAND_IN, URL

    bindir = tmp / "forge-bin"
    bindir.mkdir()
    (bindir / "gh").write_text(STAND_IN.replace("{python}", sys.executable).replace("{urls}", repr(URL)))
    (bindir / "gh").chmod(0o755)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}"}
    c.run("start", "start", "t4", "--agents", "")
    commit(root / "t4" / "code", {"forge.py": "f = 4\n"}, "forge work")
    c.run("approve", "approve", "t4", "--changes")
    c.run("complete --via", "complete", "t4", "--via", "gh", env=env)
    c.run("queue", "queue", env=env)


def test_every_command_and_file_matches_its_schema(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# demo\n", "app.py": "x = 1\n"}, config=CONFIG)
    root = tmp_path / "repo.tasks"
    c = Contract(repo)
    # one schema per name, also one at a time
    one = run_cli(repo, "schema", "task.json", "--json").json["data"]
    assert one["names"] == ["task.json"] and one["schemas"]["task.json"] == c.schemas["task.json"]

    c.run("start", "start", "t1", "--agents", "a1,a2")
    c.run("status", "status")
    c.run("classify", "classify", "t1", "--files", "app.py")
    c.run("advance", "advance", "t1")
    c.run("approve --plan --request-changes", "approve", "t1", "--plan", "--request-changes", "--why", "the plan misses the migration")
    c.run("report", "report", "t1", "--agent", "a1", "--status", "WORKING")
    _report_with_evidence(c, tmp_path, root)
    c.run("audit", "audit", "t1")
    c.run("brief", "brief", "t1", "--agent", "a1")
    c.run("agent add", "agent", "add", "t1", "a3", "--why", "more hands")
    c.run("env", "env", "t1", "--agent", "a1")
    c.run("init", "init", "--client", "claude")  # shown only (no --yes): nothing written
    ev = {"session_id": "s1", "cwd": str(repo), "hook_event_name": "SessionStart", "source": "compact"}
    d = c.run("hook session-start", "hook", "session-start", input=json.dumps(ev))
    assert [t["task"] for t in d["data"]["tasks"]] == ["t1"]
    c.run("hooks install", "hooks", "install")
    c.run("hooks install", "hooks", "install", "--scope", "user")  # (the sealed HOME)
    c.run("hooks check", "hooks", "check")
    c.run("hooks uninstall", "hooks", "uninstall", "--scope", "user")
    c.run("statusline", "statusline", input=json.dumps({"cwd": str(root / "t1" / "agents" / "a1" / "code")}))
    c.run("hooks uninstall", "hooks", "uninstall")
    wt = {"session_id": "nobody", "cwd": str(repo), "hook_event_name": "WorktreeCreate", "name": "scratch"}
    made = c.run("hook worktree-create", "hook", "worktree-create", input=json.dumps(wt))["data"]["path"]
    wt = {"session_id": "nobody", "cwd": str(repo), "hook_event_name": "WorktreeRemove", "worktree_path": made}
    c.run("hook worktree-remove", "hook", "worktree-remove", input=json.dumps(wt))
    c.run("lock main", "lock", "main", session="s-main")
    c.check("main-lock.json", json.loads((root / "main" / "task.json").read_text()))
    c.run("unlock main", "unlock", "main", session="s-main")
    c.run("error", "start", "t1", session="intruder", ok=False)  # BLOCKED: owned by s1

    commit(root / "t1" / "agents" / "a1" / "code", {"feature.py": "y = 2\n"}, "[a1] add feature")
    c.run("merge", "merge", "t1", "--agent", "a1")
    c.run("merge --all", "merge", "t1", "--all")
    c.run("sync", "sync", "t1", "--agent", "a2")
    c.run("who", "who", "t1")
    c.run("log", "log", "t1")
    c.check("task.json", json.loads((root / "t1" / "task.json").read_text()))
    c.check("status.json", json.loads((root / "t1" / "agents" / "a1" / "status.json").read_text()))
    c.check("ports.json", json.loads((root / "ports.json").read_text()))
    c.check("config", tomllib.loads((repo / ".spark-git.toml").read_text()))
    c.run("approve --request-changes", "approve", "t1", "--request-changes", "--why", "rename it")
    c.run("approve", "approve", "t1", "--changes")
    c.run("complete", "complete", "t1")
    c.run("queue", "queue")
    c.run("queue run", "queue", "run")
    _verify_command(c, tmp_path)
    c.run("queue --stats", "queue", "--stats")
    c.run("watch", "watch", "--once")
    c.check("queue.json", json.loads((root / ".queue" / "queue.json").read_text()))
    c.run("cleanup", "cleanup", "t1")
    c.check("audit-trail.json", json.loads((root / "t1" / "audit-trail.json").read_text()))
    c.check("audit-snapshot.json", json.loads((root / "t1" / "audit-snapshot.json").read_text()))
    c.run("archive list", "archive", "list")
    c.run("start", "start", "t2", "--agents", "b1")
    c.run("update", "update", "t2")
    commit(root / "t2" / "agents" / "b1" / "code", {"wip.py": "z = 3\n"}, "[b1] wip")
    c.run("lock break", "lock", "break", "t2", "--why", "owner went away", session="human")
    c.run("abandon", "abandon", "t2", "--why", "changed our minds", session="human")
    refs = c.run("archive list", "archive", "list")["data"]
    if "doctor" in c.schemas:
        c.run("doctor", "doctor")
    _remote_commands(c, tmp_path)
    _forge_command(c, tmp_path, root)

    # every schema the registry offers was exercised by a real command or file
    # `agent run` needs a real client: tests/test_agent_run.py runs one (its envelope passes fixtures/contract.py)
    untested = set(c.schemas) - c.checked - {"envelope", "archive restore", "agent run", "agent run --all"}
    assert not untested, f"schemas with no output checked against them: {sorted(untested)}"
    c.documented(tmp_path)
    assert refs is not None


def test_every_cli_command_has_a_schema() -> None:
    """Each command of the CLI (each sub-command of a group) is in the registry, except
    `hook pre-tool-use`, which speaks Claude Code's exit-code protocol, not JSON. The typer app is
    walked in-process (the command tree typer builds), which is what `--help` prints."""
    import typer

    from spark_git.cli import app
    from spark_git.ops.views import schema as mod

    def walk(cmd, prefix: str = "") -> list[str]:
        if getattr(cmd, "commands", None):  # a group (which may answer by itself: `queue`)
            return ([prefix] if getattr(cmd, "invoke_without_command", False) else []) + [n for name, sub in sorted(cmd.commands.items()) for n in walk(sub, f"{prefix} {name}".strip())]
        return [prefix]

    names = walk(typer.main.get_command(app))
    assert "start" in names and "hooks install" in names and "hook session-start" in names
    missing = [n for n in names if n not in mod.COMMANDS and n != "hook pre-tool-use"]
    assert not missing, f"commands without a schema: {missing}"
    absent = [n for n in names if n in mod.COMMANDS and mod.model_of(n) is None]
    assert not absent, f"registry names a model that does not exist: {absent}"
    stale = [n for n in mod.COMMANDS if n.split(" --")[0] not in names]  # "merge --all": an option with its own data
    assert not stale, f"registry names commands the CLI does not have: {stale}"


def test_schema_output_is_byte_identical_to_the_checked_in_copy(tmp_path: Path) -> None:
    """The published contract does not drift with refactoring: `spark-git schema` (human and --json)
    prints exactly what tests/data/ holds. Regenerate those files only for a deliberate change."""
    import subprocess

    data = Path(__file__).parent / "data"
    for args, name in ((["--json", "schema"], "schema.json"), (["schema"], "schema.txt")):
        out = subprocess.run([sys.executable, "-m", "spark_git", *args], cwd=tmp_path, capture_output=True, check=True).stdout
        assert out == (data / name).read_bytes(), f"`spark-git {' '.join(args)}` differs from tests/data/{name}"
