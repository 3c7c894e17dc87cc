"""docs/seed-coverage.md stays honest: every row has an id, a requirement, what spark-git does and a
test column; every test it names exists; ids are unique; every claim (done, partial, differently) names
a test or holds by construction."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "seed-coverage.md"
REF = re.compile(r"tests/([a-z0-9_]+\.py)::([A-Za-z0-9_]+)")
VERDICTS = ("done", "partial", "differently", "not done", "out of scope")


def _rows() -> list[list[str]]:
    rows = []
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if line.startswith("| ") and re.fullmatch(r"00[0-4]\.[A-Za-z0-9.]+", cells[0]):
            assert len(cells) == (5 if cells[0].startswith("004") else 4), line  # a stray "|" splits a cell
            rows.append(cells)
    return rows


def _tests(file: str) -> set[str]:
    tree = ast.parse((ROOT / "tests" / file).read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}


def test_every_named_test_exists() -> None:
    refs = REF.findall(DOC.read_text())
    assert len(refs) > 100
    missing = [f"tests/{f}::{n}" for f, n in refs if not (ROOT / "tests" / f).is_file() or n not in _tests(f)]
    assert missing == []


def test_every_row_is_complete_and_ids_are_unique() -> None:
    rows = _rows()
    assert len(rows) > 200
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    for r in rows:
        what, test = r[-2], r[-1]
        assert what.startswith(VERDICTS), r
        assert test, r
        if what.startswith("out of scope"):
            assert test in ("—", "(by construction)") or REF.search(test), r
        elif not what.startswith("not done"):  # a claim (done, partial, differently) names its proof
            assert test == "(by construction)" or REF.search(test), r
