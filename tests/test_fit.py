"""cli/fit.py: cells cut in the middle, tables within the width, problems packed whole."""

from __future__ import annotations

from spark_git.cli import fit


def test_middle_keeps_both_ends() -> None:
    cut = fit.middle("task-add-oauth-agent-reviewer", 12)
    assert len(cut) == 12 and cut.startswith("task-a") and cut.endswith("iewer") and "…" in cut
    assert fit.middle("short", 12) == "short"


def test_table_fits_the_width_in_stages() -> None:
    rows = [["TASK", "STATE", "PROBLEMS"], ["a-very-long-task-name-indeed", "IMPLEMENTATION", "conflict a1/a2: src/app.py"]]
    for w in (40, 60, 80):
        lines = fit.table(rows, w, {0: 8}, {2: 10})
        assert all(len(ln) <= w for ln in lines), (w, lines)
        assert "IMPLEMENTATION" in lines[1]  # not in any stage: never cut
    # the first stage gives first: at 60 the task name is cut, the problems are whole
    assert fit.table(rows, 60, {0: 8}, {2: 10})[1].endswith("conflict a1/a2: src/app.py")
    assert fit.table(rows, None) == fit.table(rows, 500)


def test_items_are_whole_or_counted() -> None:
    assert fit.items(["1 conflict", "3 silent"], 40) == "1 conflict; 3 silent"
    assert fit.items(["1 conflict", "3 silent", "1 blocked"], 22) == "1 conflict; +2 more"
    assert fit.items(["a-problem-much-too-long-for-the-cell"], 10) == fit.middle("a-problem-much-too-long-for-the-cell", 10)


def test_wrap_breaks_between_words_only() -> None:
    text = "next: CLASSIFIED blocked by /a/very/long/path/that/is/one/word/and/longer/than/the/line and more"
    lines = fit.wrap(text, 30, "  ")
    assert " ".join(ln.strip() for ln in lines) == text
    assert "/a/very/long/path/that/is/one/word/and/longer/than/the/line" in [ln.strip() for ln in lines]
