"""`refs/notes/spark`: one JSON object per line per commit (attribution, gate evidence, approvals).

Every write is read → append → `notes add -f` under the notes mutex: plain `git notes append` from
two processes at once silently loses one of the writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from spark_git.core.git import Git
from spark_git.core.layout import Layout
from spark_git.state.locks import NOTES, mutex
from spark_git.state.models import now

NOTES_REF = "refs/notes/spark"


def ensure_rewrite_config(layout: Layout) -> None:
    """Notes follow `git rebase` / `commit --amend` of annotated commits. Set by `start`, before any
    note of the task exists; the notes mutex because two writers of .git/config fail on its lock."""
    git = layout.git()
    with mutex(layout, NOTES):
        cur = dict(ln.split(" ", 1) for ln in git.run("config", "--get-regexp", r"^notes\.rewrite", check=False).lines if " " in ln)
        if cur.get("notes.rewriteref") != NOTES_REF:
            git.config_set("notes.rewriteRef", NOTES_REF)
        if cur.get("notes.rewrite.rebase") != "true":
            git.config_set("notes.rewrite.rebase", "true")


def append_many(layout: Layout, entries: Iterable[tuple[str, dict[str, Any]]]) -> None:
    """Appends each (commit, object) as one line to that commit's note."""
    git = layout.git()
    with mutex(layout, NOTES):
        by_commit: dict[str, list[dict[str, Any]]] = {}
        for sha, obj in entries:
            by_commit.setdefault(sha, []).append({"time": now(), **obj})
        for sha, objs in by_commit.items():
            old = git.notes_show(NOTES_REF, sha) or ""
            lines = [ln for ln in old.splitlines() if ln.strip()]
            lines += [json.dumps(o, sort_keys=True) for o in objs]
            git.notes_set(NOTES_REF, sha, "\n".join(lines) + "\n")


def append(layout: Layout, sha: str, obj: dict[str, Any]) -> None:
    append_many(layout, [(sha, obj)])


def parse(text: str) -> list[dict[str, Any]]:
    res = []
    for ln in text.splitlines():
        ln = ln.strip()
        if not ln:
            continue
        try:
            obj = json.loads(ln)
        except ValueError:
            continue  # a line someone else wrote by hand; not ours to interpret
        if isinstance(obj, dict):
            res.append(obj)
    return res


def read(git: Git, sha: str) -> list[dict[str, Any]]:
    return parse(git.notes_show(NOTES_REF, sha) or "")


def read_range(git: Git, rev_range: str) -> dict[str, list[dict[str, Any]]]:
    return {sha: parse(t) for sha, t in git.notes_of(NOTES_REF, rev_range).items()}
