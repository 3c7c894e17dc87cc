"""The JSON contract on every way out of a command, `-h`, shell completion, and the checker that
fixtures/contract.py runs on every CLI call of the suite (it must catch what it is there to catch)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from fixtures.contract import cli_parse_problem, hint_problems
from fixtures.repo import make_repo, spark, spark_argv, spark_in_process

from spark_git.core.errors import BROKEN_PIPE, INTERNAL, INTERRUPTED, USAGE


def _one_envelope(stdout: str) -> dict:
    import json

    lines = stdout.splitlines()
    assert len(lines) == 1, stdout
    return json.loads(lines[0])


@pytest.mark.parametrize("args", [["merge"], ["status", "--bogus"], ["agent", "add", "t1"], ["nosuchcommand"], []])
@pytest.mark.parametrize("process", [False, True])
def test_usage_errors_print_one_envelope_and_exit_2(repo: Path, args: list[str], process: bool) -> None:
    r = spark(repo, "--json", *args, process=process)
    assert r.returncode == USAGE, r
    env = _one_envelope(r.stdout)
    assert env["status"] == "FAIL" and env["data_schema"] == "error" and env["data"]["error"] == env["summary"], env
    assert env["next"] and env["next"][0].endswith("--help")
    assert "Usage:" in r.stderr or "Error" in r.stderr  # click's own message stays on stderr


@pytest.mark.parametrize(("args", "help_of"), [(["classify", "t1", "--files"], "classify"), (["merge", "t1", "--agent"], "merge"),
                                              (["status", "--bogus"], "status")])
def test_a_usage_error_points_at_the_help_of_its_command(repo: Path, args: list[str], help_of: str) -> None:
    r = spark(repo, "--json", *args)
    assert r.returncode == USAGE and r.json["next"] == [f"spark-git {help_of} --help"], r.json


def test_internal_error_and_ctrl_c_print_one_envelope(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from spark_git.ops.shared import history

    def bug(*_a: object, **_k: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(history, "who", bug)
    r = spark(repo, "--json", "who", "t1")
    env = _one_envelope(r.stdout)
    assert r.returncode == INTERNAL and env["data"]["error"].startswith("internal error") and "ZeroDivisionError" in env["data"]["traceback"], r
    r = spark(repo, "who", "t1")
    assert r.returncode == INTERNAL and r.stdout == "" and "Traceback" in r.stderr and "please report" in r.stderr, r

    def interrupted(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(history, "who", interrupted)
    r = spark(repo, "--json", "who", "t1")
    env = _one_envelope(r.stdout)
    assert r.returncode == INTERRUPTED and env["status"] == "FAIL" and env["data_schema"] == "error", r


@pytest.mark.parametrize("json_mode", [False, True])
def test_a_closed_stdout_ends_quietly(tmp_path: Path, json_mode: bool) -> None:
    """`spark-git schema | head`: the reader goes away; no traceback, exit 141 (as for SIGPIPE)."""
    args = ["--json", "schema"] if json_mode else ["schema"]
    p = subprocess.Popen(spark_argv(*args), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(10)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == BROKEN_PIPE and err == "", err


@pytest.mark.parametrize("args", [["-h"], ["merge", "-h"], ["agent", "add", "-h"], ["queue", "run", "-h"], ["--json", "status", "-h"]])
def test_dash_h_is_help_everywhere(repo: Path, args: list[str]) -> None:
    r = spark(repo, *args)
    assert r.returncode == 0 and "Usage:" in r.stdout and "-h, --help" in r.stdout, r


def test_shell_completion_for_bash_zsh_and_fish(tmp_path: Path) -> None:
    def run(extra: dict[str, str], *args: str) -> str:
        env = {**os.environ, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1", **extra}
        return subprocess.run(spark_argv(*args), cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout

    scripts = {sh: run({}, "--show-completion", sh) for sh in ("bash", "zsh", "fish")}
    assert "complete -o default -F _spark_git_completion spark-git" in scripts["bash"]
    assert scripts["zsh"].startswith("#compdef spark-git")
    assert "complete --command spark-git" in scripts["fish"]
    # what the installed scripts ask the program: commands, then a command's options
    words = run({"_SPARK_GIT_COMPLETE": "complete_bash", "COMP_WORDS": "spark-git sta", "COMP_CWORD": "1"}).split()
    assert {"start", "status"} <= set(words) and all(w.startswith("sta") for w in words), words
    assert "--all" in run({"_SPARK_GIT_COMPLETE": "complete_bash", "COMP_WORDS": "spark-git merge --a", "COMP_CWORD": "2"}).split()
    assert "add" in run({"_SPARK_GIT_COMPLETE": "complete_fish", "_TYPER_COMPLETE_ARGS": "spark-git agent ", "_TYPER_COMPLETE_FISH_ACTION": "get-args"})


def test_the_envelope_log_records_human_runs_too(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    log = tmp_path / "envelopes.jsonl"
    r = spark_in_process(repo, "status", env={**os.environ, "SPARK_GIT_ENVELOPE_LOG": str(log)})  # spark() would use its own log
    assert r.returncode == 0 and not r.stdout.startswith("{"), r
    env = _one_envelope(log.read_text())
    assert env["status"] == "OK" and env["data_schema"] == "status"


@pytest.mark.parametrize("hint", [
    "spark-git merge t1 --agent a1", "cd /tmp/x && git status", "GIT_EDITOR=true git rebase --continue",
    "spark-git approve t1 --request-changes --why '...'", "spark-git status --help", "spark-git -C /tmp/r agent add t1 a3 --why 'more hands'",
    "export SPARK_SESSION_ID=spark-20260101-abcdef12",
])
def test_the_hint_checker_accepts_commands(hint: str) -> None:
    assert hint_problems(hint) == []


@pytest.mark.parametrize(("hint", "why"), [
    ("edit the conflicting files, then: git add <files>", "shell operator"),
    ("edit the conflicting files, then: git add them", "not one of"),
    ("git add <files>", "shell operator"),
    ("spark-git advance t3  (from REVIEW, towards COMPLETE)", "shell operator"),
    ("spark-git report t1 --agent a1 --scope RESOLVE_NOW|DEFER", "shell operator"),
    ("spark-git merge t1 --agnet a1", "refuses it"),
    ("spark-git merge", "refuses it"),
    ("spark-git nosuchcommand", "refuses it"),
    ("commit or remove the changes", "not one of"),
    ("spark-git 'unterminated", "not shell syntax"),
    ("cd /tmp/my repo.tasks/t1/code", "cd takes one directory"),
    ("cd /tmp/x && git rebase --continue", "opens an editor"),
])
def test_the_hint_checker_catches_prose_and_bad_commands(hint: str, why: str) -> None:
    found = hint_problems(hint)
    assert found and why in found[0], found


def test_cli_parse_descends_into_groups() -> None:
    assert cli_parse_problem(["agent", "add", "t1", "a3", "--why", "x"]) is None
    assert cli_parse_problem(["queue", "run"]) is None
    assert "refuses it" in (cli_parse_problem(["agent", "add"]) or "")


@pytest.mark.usefixtures("unboxed")
def test_ctrl_c_during_a_gate_prints_one_envelope_and_exits_130(tmp_path: Path) -> None:
    """A real SIGINT to a real process while its gate runs: the gate is stopped, the envelope says so."""
    import signal

    from tests.mergekit import Task, config

    ready, go = tmp_path / "ready", tmp_path / "go"
    os.mkfifo(ready)
    os.mkfifo(go)
    t = Task(tmp_path, ["a1"], config(build=f"echo started > {ready}; read x < {go}"))
    t.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    p = subprocess.Popen(spark_argv("--json", "merge", t.task, "--agent", "a1"), cwd=t.repo, env=dict(os.environ, SPARK_SESSION_ID="s1"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(ready) as f:  # blocks until the gate runs
        assert f.read().strip() == "started"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    try:  # a gate still waiting would get its line; none should be left
        os.close(os.open(go, os.O_WRONLY | os.O_NONBLOCK))
        gate_left = True
    except OSError:
        gate_left = False
    assert p.returncode == INTERRUPTED and not gate_left, (p.returncode, out, err)
    env = _one_envelope(out)
    assert env["status"] == "FAIL" and env["data_schema"] == "error" and "interrupted" in env["summary"], env


def test_every_detail_key_of_an_error_is_in_the_error_schema() -> None:
    """The error schema is closed: each key a SparkError's `details={...}` gives must be a field of
    ErrorData (ops/views/envelope.py), or every `--json` refusal carrying it breaks the contract."""
    import re

    from spark_git.ops.views.envelope import ErrorData

    src = Path(__file__).parent.parent / "src" / "spark_git"
    texts = [f.read_text() for f in src.rglob("*.py")]
    keys = {k for t in texts for block in re.findall(r"details=\{([^}]*)\}", t) for k in re.findall(r'"([a-z_]+)":', block)}
    keys |= {k for t in texts for k in re.findall(r'details(?:\.setdefault\(|\[)"([a-z_]+)"', t)}  # added to an error on its way up
    assert keys and not keys - set(ErrorData.model_fields), sorted(keys - set(ErrorData.model_fields))


def test_hints_quote_paths_with_spaces(tmp_path: Path) -> None:
    """A repository under a directory with a space: the `cd` hints stay one word each (the contract
    checker in fixtures/repo.py parses them)."""
    repo = make_repo(tmp_path / "my repo")
    env = {**os.environ, "SPARK_SESSION_ID": "s1"}
    r = spark(repo, "--json", "start", "t1", "--agents", "a1", env=env)
    assert r.returncode == 0 and r.json["next"][0] == f"cd '{tmp_path}/my repo.tasks/t1/code'", r
    r = spark(repo, "--json", "agent", "add", "t1", "a2", "--why", "more hands", env=env)
    assert r.returncode == 0 and r.json["next"] == [f"cd '{tmp_path}/my repo.tasks/t1/agents/a2/code'"], r


def test_the_checker_catches_an_editor_in_a_hint_in_words() -> None:
    from fixtures.contract import EDITOR_PROSE

    assert EDITOR_PROSE.search("resolve the conflicts, `git add` them and `git rebase --continue`")
    assert not EDITOR_PROSE.search("resolve them, `git add` them and `GIT_EDITOR=true git rebase --continue`")


def test_the_hint_checker_catches_commands_the_task_is_not_ready_for(tmp_path: Path) -> None:
    """fixtures/hints.py: `complete` before an approval holds, `merge` where the protocol refuses it,
    unless the approval is suggested first."""
    import json

    from fixtures.hints import illegal_hints

    full = make_repo(tmp_path / "full")
    assert spark(full, "start", "t1", "--agents", "a1", env={**os.environ, "SPARK_SESSION_ID": "s1"}).returncode == 0
    hints = lambda *n: illegal_hints(full, json.dumps({"next": list(n)}))
    assert any("merge refused now" in b for b in hints("spark-git merge t1 --all"))
    assert any("complete in INIT" in b for b in hints("spark-git complete t1"))
    light = make_repo(tmp_path / "light", config='protocol = "light"\n')
    assert spark(light, "start", "t1", "--agents", "a1", env={**os.environ, "SPARK_SESSION_ID": "s1"}).returncode == 0
    found = illegal_hints(light, json.dumps({"next": ["spark-git complete t1"]}))
    assert any("before the changes are approved" in b for b in found), found
    assert illegal_hints(light, json.dumps({"next": ["spark-git approve t1 --changes", "spark-git complete t1"]})) == []
    assert illegal_hints(light, json.dumps({"next": ["spark-git merge t1 --all"]})) == []
