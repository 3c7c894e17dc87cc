"""Seed 002's complexity assessment: six signals → LITE / ASK / FULL; `classify` shows it, suggests
`light` or `full`, and records it in task.json (the config's `protocol` stays the human's decision)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_git.ops.life.complexity import assess, objective_text
from tests.protokit import P


@pytest.mark.parametrize(("text", "files", "score", "rec"), [
    ("fix a typo in the readme", 1, 0, "LITE"),
    ("speed up the build cache", 1, 1, "LITE"),
    # 002's borderline example: two components, one integration, ~12 files → 3, ASK
    ("frontend and backend for the new webhook", 12, 3, "ASK"),
    ("frontend, backend and database: login with password and oauth via a third-party api", 16, 8, "FULL"),
    ("try a new framework", 0, 1, "LITE"),
])
def test_assess_scores_the_six_signals(text: str, files: int, score: int, rec: str) -> None:
    c = assess(text, [f"src/f{i}.py" for i in range(files)])
    assert (c.score, c.recommendation) == (score, rec), c.signals
    assert c.suggested_protocol == ("full" if rec == "FULL" else "light")


def test_keywords_are_whole_words() -> None:
    assert assess("build a special guide", []).signals == []  # neither "ui" nor "ci" inside words


def test_objective_section_is_read() -> None:
    md = "# t\n\n## Task Objective\n\n> add payment with stripe\n\n## Scope\n\n- a database\n"
    assert "stripe" in objective_text(md) and "database" not in objective_text(md)


def test_classify_shows_and_records_the_assessment(tmp_path: Path) -> None:
    p = P(tmp_path, "cx", title="Login with password through the OAuth api")
    d = p.ok("classify", p.task, "--files", "src/app.py")["data"]
    cx = d["complexity"]
    assert cx["recommendation"] == "FULL" and cx["suggested_protocol"] == "full" and cx["protocol_in_effect"] == "full"
    assert "Security-sensitive feature detected" in cx["signals"]
    assert json.loads((p.root / "task.json").read_text())["complexity"] == cx
    human = p.spark("classify", p.task, "--files", "src/app.py")
    assert human.returncode == 0 and f"complexity {cx['score']}/10: FULL, suggests protocol full" in human.stdout, human
