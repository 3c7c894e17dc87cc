"""Conflicts a configured merge driver hides (issue 32 item 6): `merge=union` (more-itertools sets it on
more.py) combines two edits of the same lines without a word from git. The radar, `update` and the
approval screen name the file and the lines both sides changed."""

from __future__ import annotations

from pathlib import Path

from fixtures.repo import git

from tests.protokit import P

LIGHT = """protocol = "light"
[approval]
allow_non_interactive = true
"""
DOC = "".join(f"line {i}\n" for i in range(1, 11))
FILES = {"README.md": "# demo\n", "doc.txt": DOC, ".gitattributes": "doc.txt merge=union\n"}


def _edit(line: int, text: str) -> dict[str, str]:
    return {"doc.txt": DOC.replace(f"line {line}\n", f"{text}\n")}


def _first_landed(tmp_path: Path, line: int, texts: tuple[str, str], approve_second: bool) -> tuple[P, P]:
    """Two tasks that change the same line of doc.txt (merge=union); the first has landed."""
    p1 = P(tmp_path, task="t1", config=LIGHT, agents="coder", files=FILES)
    p2 = P(tmp_path, task="t2", config=LIGHT, agents="coder", repo=p1.repo)
    for p, text in ((p1, texts[0]), (p2, texts[1])):
        p.commit("coder", _edit(line, text), "edit")
        p.ok("merge", p.task, "--agent", "coder")
        if p is p1 or approve_second:
            p.ok("approve", p.task, "--changes")
    p1.ok("complete", p1.task)
    return p1, p2


def test_update_names_the_lines_a_union_driver_combined(tmp_path: Path) -> None:
    _, p2 = _first_landed(tmp_path, 4, ("the first paragraph", "the second paragraph"), approve_second=True)
    d = p2.ok("update", p2.task)["data"]
    assert d["rebased"], d
    # git merged it "cleanly": both paragraphs are there, and nothing else would have said so
    merged = git(p2.repo, "show", f"{p2.head()}:doc.txt")
    assert "the first paragraph" in merged and "the second paragraph" in merged
    assert d["combined"] == [{"path": "doc.txt", "driver": "union", "lines": [[4, 4]]}], d
    text = p2.spark("update", p2.task).stdout  # a second update: nothing to rebase, nothing combined now
    assert "combined by merge" not in text
    screen = p2.spark("--json", "approve", p2.task, "--changes").json["data"]["presented"]
    assert [c["path"] for c in screen["combined"]] == ["doc.txt"], screen
    assert any(f.startswith("doc.txt: lines 4 were changed on both sides and merge=union combined them") for f in screen["flags"]), screen["flags"]


def test_update_text_shows_the_combined_file(tmp_path: Path) -> None:
    _, p2 = _first_landed(tmp_path, 7, ("one", "two"), approve_second=False)
    out = p2.spark("update", p2.task)
    assert out.returncode == 0, out
    assert "combined by merge=union: doc.txt (lines 7 of the merge base changed on both sides" in " ".join(out.stdout.split()), out.stdout


def test_status_radar_warns_before_the_driver_combines(tmp_path: Path) -> None:
    p = P(tmp_path, task="t1", config=LIGHT, agents="a1,a2", files=FILES)
    p.commit("a1", _edit(2, "from a1"), "a1 edit")
    p.commit("a2", _edit(3, "from a2"), "a2 edit")  # adjoining lines: git's own merge would stop here
    radar = p.ok("status", p.task)["data"]["tasks"][0]["radar"]
    pair = next(c for c in radar["checked"] if c["other"] == "a2")
    assert not pair["conflict"] and pair["combined"] == [{"path": "doc.txt", "driver": "union", "lines": [[2, 3]]}], radar
    text = " ".join(p.spark("status", p.task).stdout.split())
    assert "a1 and a2 both change doc.txt lines 2-3: merge=union would combine them silently" in text, text


def test_without_a_driver_nothing_is_reported_and_changes_far_apart_are_not_combined(tmp_path: Path) -> None:
    p = P(tmp_path, task="t1", config=LIGHT, agents="a1,a2", files=FILES)
    p.commit("a1", _edit(1, "top"), "a1 edit")
    p.commit("a2", _edit(9, "bottom"), "a2 edit")  # an unchanged line between: git's merge is clean anyway
    radar = p.ok("status", p.task)["data"]["tasks"][0]["radar"]
    assert all(c["combined"] == [] for c in radar["checked"]), radar
    q = P(tmp_path / "plain", task="t1", config=LIGHT, agents="a1,a2", files={"README.md": "# demo\n", "doc.txt": DOC})
    q.commit("a1", _edit(2, "x"), "a1 edit")
    q.commit("a2", _edit(2, "y"), "a2 edit")
    radar = q.ok("status", q.task)["data"]["tasks"][0]["radar"]
    pair = next(c for c in radar["checked"] if c["other"] == "a2")
    assert pair["conflict"] and pair["files"] == ["doc.txt"] and pair["combined"] == [], radar  # git's own conflict, reported as before
