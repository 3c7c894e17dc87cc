"""What a gate's command wrote besides its exit code: JUnit XML (pytest `--junitxml`, or any runner
that writes it) and coverage.py reports (XML, i.e. Cobertura, or JSON), read from where the config
says, and the thresholds of `[gates.require]` checked against them.

Only a file this run wrote counts: the matching files are stat'ed before the command starts, and a
file whose (mtime, size, inode) did not change afterwards is a leftover of an earlier run. Files are
parsed with the standard library's ElementTree: they are written by the gate's own command in the
worktree under test, the same code the gate already runs with the user's rights (docs/decisions.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from spark_git.core.config import ReportSpec
from spark_git.core.model import Model

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

Stamp = tuple[int, int, int]  # st_mtime_ns, st_size, st_ino
FAILED_NAMES_MAX = 50  # names of failing tests kept in the evidence; the counts are always complete


class TestCounts(Model):
    __test__ = False  # not a pytest test class, whatever its name
    total: int
    passed: int
    failed: int
    errors: int
    skipped: int
    files: list[str]  # the JUnit files read, relative to the worktree
    failed_tests: list[str] = []  # `classname::name` of failing and erroring tests (at most FAILED_NAMES_MAX)
    source: Literal["junit", "pytest"] = "junit"  # pytest: no JUnit XML configured, its summary line was read


class CoverageTotals(Model):
    rate: float  # 0.0-1.0: (covered lines + covered branches) / (lines + branches), as coverage.py totals it
    lines_covered: int | None = None
    lines_valid: int | None = None
    branches_covered: int | None = None
    branches_valid: int | None = None
    file: str
    format: Literal["xml", "json"]


class GateReports(Model):
    tests: TestCounts | None = None
    coverage: CoverageTotals | None = None
    unmet: list[str] = []  # each names the config key and both values; a gate with any fails


def stamps(worktree: Path, spec: ReportSpec | None) -> dict[str, Stamp]:
    """The stat of every file the reports of `spec` could read, before the gate's command runs."""
    out: dict[str, Stamp] = {}
    for pattern in (spec.junit, spec.coverage) if spec else ():
        for p in _matches(worktree, pattern):
            out[str(p)] = _stamp(p)
    return out


def _stamp(p: Path) -> Stamp:
    st = p.stat()
    return st.st_mtime_ns, st.st_size, st.st_ino


def _matches(worktree: Path, pattern: str | None) -> list[Path]:
    if not pattern:
        return []
    return sorted(p for p in worktree.glob(pattern) if p.is_file())


def _fresh(worktree: Path, pattern: str | None, before: dict[str, Stamp]) -> list[Path]:
    return [p for p in _matches(worktree, pattern) if before.get(str(p)) != _stamp(p)]


def collect(worktree: Path, spec: ReportSpec, before: dict[str, Stamp], pytest_counts: dict[str, int] | None) -> GateReports:
    """Reads the reports this run wrote and checks the thresholds. Never raises: a missing or
    unreadable report is an unmet condition of the gate."""
    rep = GateReports()
    if spec.junit:
        files = _fresh(worktree, spec.junit, before)
        if not files:
            rep.unmet.append(f"gates.junit: no file matching {spec.junit!r} was written by this run")
        else:
            try:
                rep.tests = junit_counts(files, worktree)
            except (SyntaxError, OSError, ValueError) as e:  # SyntaxError: ElementTree's ParseError
                rep.unmet.append(f"gates.junit: cannot read {spec.junit!r} as JUnit XML: {e}")
    elif pytest_counts is not None:
        rep.tests = _from_pytest(pytest_counts)
    if spec.coverage:
        files = _fresh(worktree, spec.coverage, before)
        if not files:
            rep.unmet.append(f"gates.coverage: {spec.coverage!r} was not written by this run")
        else:
            try:
                rep.coverage = coverage_totals(files[0], worktree)
            except (SyntaxError, OSError, ValueError, KeyError, TypeError) as e:
                rep.unmet.append(f"gates.coverage: cannot read {spec.coverage!r} as a coverage.py XML or JSON report: {e}")
    rep.unmet += unmet(spec, rep)
    return rep


def unmet(spec: ReportSpec, rep: GateReports) -> list[str]:
    """The thresholds of `spec.require` the reports miss, each naming the key and both values."""
    req, out = spec.require, []
    if req.coverage is not None:
        if rep.coverage is None:
            out.append(f"gates.require.coverage = {req.coverage:g}: no coverage report was read (set gates.coverage)")
        elif rep.coverage.rate < req.coverage:
            out.append(f"gates.require.coverage = {req.coverage:g}: coverage is {rep.coverage.rate:g} ({rep.coverage.file})")
    for key, limit in (("tests_failed", req.tests_failed), ("tests_min", req.tests_min)):
        if limit is None:
            continue
        if rep.tests is None:
            out.append(f"gates.require.{key} = {limit}: no test counts were read (set gates.junit)")
        elif key == "tests_failed" and rep.tests.failed + rep.tests.errors > limit:
            out.append(f"gates.require.tests_failed = {limit}: {rep.tests.failed} failed and {rep.tests.errors} errors")
        elif key == "tests_min" and rep.tests.total < limit:
            out.append(f"gates.require.tests_min = {limit}: {rep.tests.total} tests ran")
    return out


def junit_counts(files: list[Path], worktree: Path) -> TestCounts:
    """Counts over every `<testcase>` of the files (a runner that writes only suite totals: their
    `tests`/`failures`/`errors`/`skipped` attributes)."""
    total = failed = errors = skipped = 0
    names: list[str] = []
    for f in files:
        root = _xml_root(f)
        if root.tag not in ("testsuites", "testsuite"):
            raise ValueError(f"{f.name}: root element is <{root.tag}>, not <testsuites> or <testsuite>")
        cases = list(root.iter("testcase"))
        if not cases:
            suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
            for s in suites:
                total += int(s.get("tests", 0))
                failed += int(s.get("failures", 0))
                errors += int(s.get("errors", 0))
                skipped += int(s.get("skipped", 0))
        for c in cases:
            total += 1
            kinds = {child.tag for child in c}
            kind = "error" if "error" in kinds else "failure" if "failure" in kinds else "skipped" if "skipped" in kinds else None
            failed, errors, skipped = failed + (kind == "failure"), errors + (kind == "error"), skipped + (kind == "skipped")
            if kind in ("failure", "error") and len(names) < FAILED_NAMES_MAX:
                names.append(f"{c.get('classname', '')}::{c.get('name', '')}".lstrip(":"))
    return TestCounts(total=total, passed=total - failed - errors - skipped, failed=failed, errors=errors, skipped=skipped,
                      files=[str(f.relative_to(worktree)) for f in files], failed_tests=names)


def coverage_totals(f: Path, worktree: Path) -> CoverageTotals:
    """coverage.py's total from its XML (`coverage xml`, Cobertura) or JSON (`coverage json`) report."""
    rel = str(f.relative_to(worktree))
    if f.suffix == ".json":
        totals = json.loads(f.read_text())["totals"]
        return CoverageTotals(
            rate=round(float(totals["percent_covered"]) / 100, 4), lines_covered=int(totals["covered_lines"]),
            lines_valid=int(totals["num_statements"]), branches_covered=totals.get("covered_branches"),
            branches_valid=totals.get("num_branches"), file=rel, format="json",
        )
    root = _xml_root(f)
    if root.tag != "coverage":
        raise ValueError(f"root element is <{root.tag}>, not <coverage>")
    lc, lv, bc, bv = (int(root.get(k, 0)) for k in ("lines-covered", "lines-valid", "branches-covered", "branches-valid"))
    rate = (lc + bc) / (lv + bv) if lv + bv else float(root.get("line-rate", 0))
    return CoverageTotals(rate=round(rate, 4), lines_covered=lc, lines_valid=lv, branches_covered=bc, branches_valid=bv, file=rel, format="xml")


def _from_pytest(counts: dict[str, int]) -> TestCounts:
    passed, failed, errors, skipped = (counts.get(k, 0) for k in ("passed", "failed", "errors", "skipped"))
    return TestCounts(total=passed + failed + errors + skipped + counts.get("xfailed", 0) + counts.get("xpassed", 0),
                      passed=passed + counts.get("xpassed", 0), failed=failed, errors=errors, skipped=skipped + counts.get("xfailed", 0),
                      files=[], source="pytest")


def token(rep: GateReports | None) -> str:
    """One short token for `status`: `12 tests, 1 failed, cov 87%`."""
    if rep is None:
        return ""
    parts = []
    if rep.tests:
        bad = rep.tests.failed + rep.tests.errors
        parts.append(f"{rep.tests.total} tests" + (f", {bad} failed" if bad else ""))
    if rep.coverage:
        parts.append(f"cov {rep.coverage.rate:.0%}")
    return ", ".join(parts)


def _xml_root(f: Path) -> Element:
    import xml.etree.ElementTree as ET  # only a gate that writes reports pays for the XML parser (start-up)

    return ET.parse(f).getroot()
