"""The hook corpus: tests/data/hook-events/events.jsonl holds Claude-Code-shaped events, the repo
situation each needs (where the caller stands, where its session was launched or recorded) and the
expected decision. Every event is replayed through the real `spark-git hook pre-tool-use` entry
point (in-process; every 20th also as a real process). Target: 0 wrong decisions."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.repo import commit, make_repo, sealed_env, spark

from spark_git.__main__ import main
from spark_git.guard import identity
from tests.hookutil import hook, put_in_state

CORPUS = Path(__file__).parent / "data" / "hook-events" / "events.jsonl"
EVENTS = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def _world(base: Path, config_broken: bool) -> dict[str, Path]:
    env = sealed_env(base / "home", SPARK_SESSION_ID="s1")
    repo = make_repo(base / "repo", {"README.md": "# demo\n", "src/app.py": "print('hi')\n"}, config="" if config_broken else None)
    for t in ("t1", "t2"):
        assert spark(repo, "start", t, "--agents", "a1,a2", env=env).returncode == 0
    put_in_state(repo, "t1", "IMPLEMENTATION")
    if config_broken:
        commit(repo, {".spark-git.toml": "tasks_root = [unclosed\n"}, "broken config")  # committed: what the hook reads
    root = base / "repo.tasks"
    (base / "outside").mkdir()
    make_repo(base / "scratch", {"f.txt": "x\n"})  # a repo of its own (`git init scratch && cd scratch`)
    return {
        "a1": root / "t1/agents/a1/code", "a2": root / "t1/agents/a2/code", "code": root / "t1/code", "code2": root / "t2/code",
        "t2a1": root / "t2/agents/a1/code", "taskdir": root / "t1", "root": root, "main": repo, "outside": base / "outside",
        "common": repo / ".git", "home": base / "home", "scratch": base / "scratch",
    }


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Path]]:
    return {"world": _world(tmp_path_factory.mktemp("corpus"), False), "bad-config": _world(tmp_path_factory.mktemp("corpus-bad"), True)}


def _fill(value: Any, w: dict[str, Path]) -> Any:
    if isinstance(value, str):
        for key, name in (("A1", "a1"), ("A2", "a2"), ("CODE2", "code2"), ("CODE", "code"), ("T2A1", "t2a1"), ("MAIN", "main"),
                          ("ROOT", "root"), ("COMMON", "common"), ("HOME", "home"), ("SCRATCH", "scratch"),
                          ("T", "taskdir")):
            value = value.replace("{" + key + "}", str(w[name]))
        return value
    if isinstance(value, dict):
        return {k: _fill(v, w) for k, v in value.items()}
    return value


def _prepare(e: dict, w: dict[str, Path]) -> tuple[str, dict[str, str]]:
    """The event's stdin and the environment its client would give the hook."""
    session = f"corpus-{e['id']}"
    if "record" in e:
        identity.remember(w["common"], session, w[e["record"]])
    env = {"HOME": str(w["home"])}
    if "launch" in e:
        env[identity.PROJECT_DIR_ENV] = str(w[e["launch"]])
    raw = e.get("raw") or json.dumps({"session_id": session, "cwd": str(w[e["cwd"]]), "hook_event_name": "PreToolUse",
                                      "tool_name": e["tool"], "tool_input": _fill(e["input"], w)})
    return raw, env


def _in_process(raw: str, env: dict[str, str], cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    for k in (identity.PROJECT_DIR_ENV, "SPARK_SESSION_ID"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "stdin", io.StringIO(raw))
    capsys.readouterr()
    rc = main(["hook", "pre-tool-use"])
    return rc, capsys.readouterr().err


def test_the_corpus_is_big_and_covers_both_answers() -> None:
    assert len(EVENTS) >= 150 and len({e["id"] for e in EVENTS}) == len(EVENTS)
    assert {e["expect"] for e in EVENTS} == {"allow", "deny"}
    assert {"Bash", "PowerShell", "Write", "Edit", "NotebookEdit"} <= {e["tool"] for e in EVENTS}


def test_every_event_gets_its_expected_decision(worlds, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], record_property) -> None:
    wrong = []
    for e in EVENTS:
        w = worlds[e["situation"]]
        raw, env = _prepare(e, w)
        rc, err = _in_process(raw, env, w[e["cwd"]], monkeypatch, capsys)
        got = "deny" if rc == 2 else "allow"
        if got != e["expect"] or (got == "deny" and not err.startswith("spark-git: blocked:")):
            wrong.append((e, f"{e['id']} {e['why']!r}: expected {e['expect']}, got rc={rc} {err.strip()[:160]}"))
    should_block = sum(e["expect"] == "deny" for e in EVENTS)
    leaked = sum(e["expect"] == "deny" for e, _ in wrong)
    harmless = len(EVENTS) - should_block
    blocked = len(wrong) - leaked
    record_property("summary", f"hook corpus: {len(EVENTS)} events; should-block {should_block}, allowed {leaked}; "
                               f"harmless {harmless}, blocked {blocked} ({100 * blocked / harmless:.1f} per 100)")
    assert not wrong, f"{len(wrong)} wrong decisions of {len(EVENTS)}:\n" + "\n".join(text for _, text in wrong)


@pytest.mark.parametrize("e", EVENTS[::20], ids=lambda e: e["id"])
def test_some_events_as_real_processes(worlds, e: dict) -> None:
    w = worlds[e["situation"]]
    raw, extra = _prepare(e, w)
    env = {**sealed_env(w["home"]), **extra}
    ev = json.loads(raw) if "raw" not in e else {"cwd": str(w[e["cwd"]])}
    r = hook(ev, env) if "raw" not in e else spark(w[e["cwd"]], "hook", "pre-tool-use", input=raw, env=env, process=True)
    assert ("deny" if r.returncode == 2 else "allow") == e["expect"], (e, r)
