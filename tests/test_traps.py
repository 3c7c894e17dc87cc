"""The small traps of a first hour (issue 33 item 5): a mistyped task, agent, client or config key is
refused with the name that was meant, and a refused task name leaves no lock file behind; `next`
entries are commands that can be pasted (real agent names, a reason worded, not `NAME` or '...')."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fixtures.repo import make_repo, spark, too_wide

LIGHT = 'protocol = "light"\n'


def env() -> dict[str, str]:
    return {**os.environ, "SPARK_SESSION_ID": "s1"}


def test_a_mistyped_name_is_refused_with_the_one_meant_and_leaves_no_lock_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"app.py": "x = 1\n"}, config=LIGHT)
    assert spark(repo, "start", "fix-parser", "--agents", "coder", env=env()).returncode == 0
    spark_dir = repo / ".git" / "spark"
    before = sorted(p.name for p in spark_dir.iterdir())
    for args, meant, nxt in [
        (("merge", "fix-parsr", "--agent", "coder"), "did you mean 'fix-parser'?", "spark-git status fix-parser"),
        (("abandon", "fix-parsr", "--why", "typo"), "did you mean 'fix-parser'?", "spark-git status fix-parser"),
        (("brief", "fix-parser", "--agent", "codr"), "did you mean 'coder'?", None),
        (("hooks", "install", "--client", "claud"), "did you mean 'claude'?", "spark-git hooks install --client claude"),
    ]:
        r = spark(repo, "--json", *args, env=env())
        out = json.loads(r.stdout)
        assert r.returncode == 2 and meant in out["summary"], (args, r)
        assert nxt is None or out["next"][0] == nxt, (args, out["next"])
    assert sorted(p.name for p in spark_dir.iterdir()) == before  # no task-fix-parsr.lock left for good


def test_a_mistyped_config_key_names_the_key_meant(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"app.py": "x = 1\n"}, config=LIGHT + "stale_minutez = 5\n[gates]\nbiuld = 'true'\n")
    r = spark(repo, "--json", "status", env=env())
    summary = json.loads(r.stdout)["summary"]
    assert r.returncode == 2 and "stale_minutez: unknown key (did you mean 'stale_minutes'?)" in summary, summary
    assert "gates.biuld: unknown key (did you mean 'build'?)" in summary, summary


def test_next_names_the_real_agents_and_a_worded_reason(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"app.py": "x = 1\n"}, config=LIGHT)
    assert spark(repo, "start", "t1", "--agents", "coder,tester", env=env()).returncode == 0
    out = json.loads(spark(repo, "--json", "merge", "t1", env=env()).stdout)
    assert out["next"] == ["spark-git merge t1 --agent coder", "spark-git merge t1 --agent tester", "spark-git merge t1 --all"], out
    out = json.loads(spark(repo, "--json", "cleanup", "t1", env=env()).stdout)
    assert not [n for n in out["next"] if "'...'" in n or "NAME" in n], out["next"]


def test_request_changes_under_light_keeps_the_state_as_the_docs_say(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"app.py": "x = 1\n"}, config=LIGHT + "[approval]\nallow_non_interactive = true\n")
    assert spark(repo, "start", "t1", "--agents", "", env=env()).returncode == 0
    task_json = tmp_path / "r.tasks" / "t1" / "task.json"
    state = json.loads(task_json.read_text())["state"]
    r = spark(repo, "--json", "approve", "t1", "--request-changes", "--why", "what must change", env=env())
    assert r.returncode == 0, r
    tf = json.loads(task_json.read_text())
    assert tf["state"] == state and tf["checkpoint_history"][-1]["decision"] == "changes_requested", tf
    assert 'Under `protocol = "light"` there is no' in (Path(__file__).parents[1] / "docs" / "merging.md").read_text()


def _complete(repo: Path, words: str) -> list[str]:
    import subprocess
    import sys

    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    env = {**os.environ, "_SPARK_GIT_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    r = subprocess.run([sys.executable, "-m", "spark_git"], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    return r.stdout.split()


def test_the_shell_completes_tasks_agents_and_clients(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"app.py": "x = 1\n"}, config=LIGHT)
    for t, agents in (("fix-parser", "coder,tester"), ("docs", "writer")):
        assert spark(repo, "start", t, "--agents", agents, env=env()).returncode == 0
    assert _complete(repo, "spark-git merge fix") == ["fix-parser"]
    assert _complete(repo, "spark-git merge ") == ["docs", "fix-parser"]
    assert _complete(repo, "spark-git merge fix-parser --agent ") == ["coder", "tester"]
    assert _complete(repo, "spark-git agent run docs writer --client g") == ["gemini"]


def test_names_cut_to_fit_80_columns_are_printed_whole_below_their_row(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"app.py": "x = 1\n"}, config=LIGHT)
    owner = "session-of-a-long-running-coordinator"
    for t in ("add-oauth2-support-for-refresh-tokens", "fix-the-flaky-queue-test-on-two-cores"):
        assert spark(repo, "start", t, "--agents", "a", env={**env(), "SPARK_SESSION_ID": owner}).returncode == 0
    out = spark(repo, "status", env={**env(), "COLUMNS": "80"}).stdout
    lines = out.splitlines()
    assert too_wide(lines, 80) == [], lines
    for name in ("add-oauth2-support-for-refresh-tokens", "fix-the-flaky-queue-test-on-two-cores", owner):
        assert any(name in ln.split() for ln in lines), (name, out)  # whole, as a word that can be copied
