"""`complete --via gh|glab`: landing through the forge. The forge is one we cannot reach from a test, so
its client is a stand-in executable first on PATH that records its argv and answers as the real `gh`
and `glab` document (`pr create` prints the URL; `pr view --json`, `mr view --output json`); the push
goes to a real bare remote. The same guards as `complete` run before anything is pushed."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures.repo import commit, git, spark
from fixtures.servers import bare, machine, seed

PY = sys.executable
URL = {"gh": "https://github.com/octo/app/pull/7", "glab": "https://gitlab.example.com/octo/app/-/merge_requests/7"}

# The stand-in: one script for both clients, told apart by its name. State (open/merged/closed, the
# refusals a test asks for) in <bin>/forge.json; every call appended to <bin>/<name>.calls.
STAND_IN = r'''#!{python}
import json, shutil, sys
from pathlib import Path
d, name, args = Path(__file__).parent, Path(__file__).name, sys.argv[1:]
with open(d / f"{name}.calls", "a") as f:
    f.write(json.dumps(args) + "\n")
sf = d / "forge.json"
st = json.loads(sf.read_text()) if sf.exists() else {}
url = {urls}[name]
def refuse(what):
    print(f"{what} refused by the forge", file=sys.stderr)
    sys.exit(1)
if args[1] == "create":
    if st.get("state") == "open":  # as the real clients do: one open PR/MR per branch
        refuse("create: a pull request for this branch already exists")
    if name == "gh":
        shutil.copy(args[args.index("--body-file") + 1], d / "body.md")
    else:
        (d / "body.md").write_text(args[args.index("--description") + 1])
    st["state"] = "open"
    print(url if name == "gh" else f"!7 the title (branch)\n {url}")
elif args[1] == "list":
    live = st.get("state") == "open"
    print(json.dumps(([{"url": url, "number": 7}] if live else []) if name == "gh" else ([{"iid": 7, "web_url": url, "state": "opened"}] if live else [])))
elif args[1] == "merge":
    if st.get("refuse_auto"):
        refuse("auto-merge")
    st["auto"] = True
elif args[1] == "view":
    s, c, at = st.get("state", "open"), st.get("merge_commit"), st.get("merged_at")
    if name == "gh":
        print(json.dumps({"state": s.upper(), "mergedAt": at, "mergeCommit": {"oid": c} if c else None, "url": url}))
    else:
        print(json.dumps({"iid": 7, "state": {"open": "opened"}.get(s, s), "merged_at": at, "merge_commit_sha": c, "web_url": url}))
sf.write_text(json.dumps(st))
'''


def _world(tmp_path: Path, final: list[str] | None = None, remote_mode: bool = False) -> dict[str, Any]:
    config = 'protocol = "light"\n[approval]\nallow_non_interactive = true\n'
    if final:
        config += f"[gates]\nfinal = {json.dumps(final)}\n"
    url = f"file://{bare(tmp_path)}"
    seed(tmp_path, url, {"README.md": "# app\n"}, config=config)
    m = machine(tmp_path, url, "m0")
    if not remote_mode:
        (m / ".git" / "spark" / "remote.toml").unlink()  # a plain clone of the forge's repository: local mode
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("gh", "glab"):
        p = bindir / name
        p.write_text(STAND_IN.replace("{python}", PY).replace("{urls}", repr(URL)))
        p.chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "SPARK_SESSION_ID": "s1"}
    return {"m": m, "bin": bindir, "env": env, "tasks": tmp_path / "m0.tasks", "root": tmp_path}


def _approved(w: dict[str, Any], task: str = "t1") -> str:
    assert spark(w["m"], "--json", "start", task, "--agents", "", env=w["env"]).returncode == 0
    head = commit(w["tasks"] / task / "code", {"feature.txt": "feature\n"}, f"{task}: the feature")
    assert spark(w["m"], "--json", "approve", task, "--changes", env=w["env"]).returncode == 0
    return head


def _calls(w: dict[str, Any], name: str) -> list[list[str]]:
    p = w["bin"] / f"{name}.calls"
    return [json.loads(ln) for ln in p.read_text().splitlines()] if p.exists() else []


def _forge_merges(w: dict[str, Any], task: str) -> str:
    """What the forge does once its checks pass: merges the PR's branch into main on the remote."""
    seedc = w["root"] / "seed"
    git(seedc, "fetch", "--quiet", "origin")
    git(seedc, "reset", "--quiet", "--hard", "origin/main")
    git(seedc, "-c", "user.name=forge", "-c", "user.email=forge@example.com", "merge", "--quiet", "--no-ff", "-m", "Merge pull request #7", f"origin/{task}")
    git(seedc, "push", "--quiet", "origin", "HEAD:main")
    sha = git(seedc, "rev-parse", "HEAD")
    st = json.loads((w["bin"] / "forge.json").read_text())
    (w["bin"] / "forge.json").write_text(json.dumps({**st, "state": "merged", "merge_commit": sha, "merged_at": "2026-01-02T03:04:05Z"}))
    return sha


def _remote_heads(w: dict[str, Any]) -> str:
    return git(w["m"], "ls-remote", "origin", "refs/heads/*")


def test_gh_pushes_the_branch_opens_the_pr_with_the_evidence_and_enables_auto_merge(tmp_path: Path) -> None:
    w = _world(tmp_path, final=[PY, "-c", "print('final gate ran')"])
    head = _approved(w)
    r = spark(w["m"], "--json", "complete", "t1", "--via", "gh", env=w["env"])
    assert r.returncode == 0, r
    d = r.json["data"]
    assert (d["url"], d["head"], d["auto_merge"], d["method"], d["gate"]["passed"]) == (URL["gh"], head, True, "merge", True)
    assert f"{head}\trefs/heads/t1" in _remote_heads(w)  # pushed at the gated head
    create, merge = _calls(w, "gh")
    assert create[:2] == ["pr", "create"] and create[create.index("--base") + 1] == "main" and create[create.index("--head") + 1] == "t1"
    assert merge == ["pr", "merge", URL["gh"], "--auto", "--match-head-commit", head, "--merge"]  # auto-merge only of the gated head
    body = (w["bin"] / "body.md").read_text()
    assert "## Gates" in body and "final: passed" in body and "## Approvals" in body and "approved by" in body and "## Attribution" in body
    evidence = json.loads(body.split("<!-- spark-git evidence: ")[1].split(" -->")[0])
    assert evidence["head"] == head and evidence["gate"]["passed"] is True and evidence["approvals"][0]["commit"] == head
    tf = json.loads((w["tasks"] / "t1" / "task.json").read_text())
    assert tf["forge"]["state"] == "open" and tf["forge"]["url"] == URL["gh"] and tf["state"] != "COMPLETE"
    notes = git(w["m"], "notes", "--ref=refs/notes/spark", "show", head)
    assert '"kind": "forge"' in notes or '"kind":"forge"' in notes

    q = spark(w["m"], "--json", "queue", env=w["env"])  # still open: seen, nothing recorded
    assert q.returncode == 0 and [(f["task"], f["state"]) for f in q.json["data"]["forge"]] == [("t1", "open")], q
    merged = _forge_merges(w, "t1")
    q = spark(w["m"], "--json", "queue", env=w["env"])
    assert [(f["state"], f["merge_commit"]) for f in q.json["data"]["forge"]] == [("merged", merged)], q
    assert [(o["task"], o["result"], o["landed_commit"]) for o in q.json["data"]["recent"]] == [("t1", "landed", merged)]
    assert _calls(w, "gh")[-1] == ["pr", "view", URL["gh"], "--json", "state,mergedAt,mergeCommit,url"]
    tf = json.loads((w["tasks"] / "t1" / "task.json").read_text())
    assert tf["state"] == "COMPLETE" and tf["forge"]["state"] == "merged"
    assert '"landed_as"' in git(w["m"], "notes", "--ref=refs/notes/spark", "show", head)
    assert git(w["m"], "rev-parse", "main") == merged  # the base as the forge left it: the task is contained in it
    c = spark(w["m"], "--json", "cleanup", "t1", env=w["env"])
    assert c.returncode == 0, c


def test_glab_opens_the_mr_and_status_records_the_merge(tmp_path: Path) -> None:
    w = _world(tmp_path, remote_mode=True)  # remote mode: the branch goes to sync.remote, the lock stays on the remote
    head = _approved(w)
    r = spark(w["m"], "--json", "complete", "t1", "--via", "glab", "--merge-method", "squash", env=w["env"])
    assert r.returncode == 0 and r.json["data"]["url"] == URL["glab"], r
    create, merge = _calls(w, "glab")
    assert create[:2] == ["mr", "create"] and create[create.index("--source-branch") + 1] == "t1" and create[create.index("--target-branch") + 1] == "main"
    assert merge == ["mr", "merge", "7", "--auto-merge", "--sha", head, "--yes", "--squash"]
    assert "final: no gate configured" in (w["bin"] / "body.md").read_text()
    assert f"{head}\trefs/heads/t1" in _remote_heads(w)
    s = spark(w["m"], "--json", "status", "t1", env=w["env"])
    assert s.json["data"]["tasks"][0]["forge"]["state"] == "open", s
    merged = _forge_merges(w, "t1")
    s = spark(w["m"], "--json", "status", "t1", env=w["env"])
    t = s.json["data"]["tasks"][0]
    assert (t["state"], t["forge"]["state"], t["forge"]["merge_commit"]) == ("COMPLETE", "merged", merged), s
    assert _calls(w, "glab")[-1] == ["mr", "view", "7", "--output", "json"]
    assert "forge (glab)" in spark(w["m"], "status", "t1", env=w["env"]).stdout


@pytest.mark.parametrize("case", ["unapproved", "gate-fails", "no-client"])
def test_the_guards_of_complete_run_before_anything_is_pushed(tmp_path: Path, case: str) -> None:
    marker = tmp_path / "m0.tasks" / "fail"  # in the tasks root: the gate box shows it (read-only)
    w = _world(tmp_path, final=[PY, "-c", f"import os, sys; sys.exit(5 if os.path.exists({str(marker)!r}) else 0)"])
    assert spark(w["m"], "--json", "start", "t1", "--agents", "", env=w["env"]).returncode == 0
    commit(w["tasks"] / "t1" / "code", {"feature.txt": "feature\n"}, "the feature")
    env, want = w["env"], 3
    if case != "unapproved":
        assert spark(w["m"], "--json", "approve", "t1", "--changes", env=w["env"]).returncode == 0
    if case == "gate-fails":
        marker.write_text("")
        want = 1
    if case == "no-client":
        only_git = tmp_path / "only-git"
        only_git.mkdir()
        os.symlink(shutil.which("git") or "git", only_git / "git")
        env, want = {**env, "PATH": str(only_git)}, 2
    before = (_remote_heads(w), (w["tasks"] / "t1" / "task.json").read_bytes())
    r = spark(w["m"], "--json", "complete", "t1", "--via", "gh", env=env)
    assert r.returncode == want, r
    assert _calls(w, "gh") == [] and _remote_heads(w) == before[0]
    if case == "no-client":
        assert "`gh` command" in r.json["summary"] and (w["tasks"] / "t1" / "task.json").read_bytes() == before[1]
    if case == "unapproved":
        assert "not approved" in r.json["summary"] or any("approve" in n for n in r.json["next"]), r


def test_a_rerun_finds_the_open_pr_and_a_refused_auto_merge_is_exit_3_with_the_pr_recorded(tmp_path: Path) -> None:
    w = _world(tmp_path)
    head = _approved(w)
    (w["bin"] / "forge.json").write_text(json.dumps({"refuse_auto": True}))
    r = spark(w["m"], "--json", "complete", "t1", "--via", "gh", env=w["env"])
    assert r.returncode == 3 and URL["gh"] in r.json["summary"] and "auto-merge" in r.json["summary"], r
    assert json.loads((w["tasks"] / "t1" / "task.json").read_text())["forge"]["url"] == URL["gh"]  # opened, and recorded
    st = json.loads((w["bin"] / "forge.json").read_text())
    (w["bin"] / "forge.json").write_text(json.dumps({**st, "refuse_auto": False}))
    r = spark(w["m"], "--json", "complete", "t1", "--via", "gh", env=w["env"])  # again: the PR exists, so create refuses; it is found
    assert r.returncode == 0 and r.json["data"]["url"] == URL["gh"], r
    assert [c[:2] for c in _calls(w, "gh")] == [["pr", "create"], ["pr", "merge"], ["pr", "create"], ["pr", "list"], ["pr", "merge"]]
    assert _calls(w, "gh")[-1][-3:] == ["--match-head-commit", head, "--merge"]


def test_a_pr_closed_unmerged_is_recorded_as_such(tmp_path: Path) -> None:
    w = _world(tmp_path)
    _approved(w)
    assert spark(w["m"], "--json", "complete", "t1", "--via", "gh", env=w["env"]).returncode == 0
    (w["bin"] / "forge.json").write_text(json.dumps({"state": "closed"}))
    q = spark(w["m"], "--json", "queue", env=w["env"])
    assert [(f["state"], f["error"]) for f in q.json["data"]["forge"]] == [("closed", None)], q
    assert [(o["result"], o["reason"]) for o in q.json["data"]["recent"]] == [("blocked", f"closed on the forge unmerged: {URL['gh']}")]
    assert json.loads((w["tasks"] / "t1" / "task.json").read_text())["state"] != "COMPLETE"


def test_an_unanswering_forge_never_fails_queue_or_status(tmp_path: Path) -> None:
    w = _world(tmp_path)
    _approved(w)
    assert spark(w["m"], "--json", "complete", "t1", "--via", "gh", env=w["env"]).returncode == 0
    (w["bin"] / "gh").write_text("#!/bin/sh\necho 'error connecting to api.github.com' >&2\nexit 1\n")
    q = spark(w["m"], "--json", "queue", env=w["env"])
    assert q.returncode == 0 and "error connecting" in q.json["data"]["forge"][0]["error"], q
    s = spark(w["m"], "--json", "status", "t1", env=w["env"])
    assert s.returncode == 0 and s.json["data"]["tasks"][0]["forge"]["state"] == "open", s


def test_via_usage_errors_change_nothing(tmp_path: Path) -> None:
    w = _world(tmp_path)
    _approved(w)
    for args in (["--via", "bitbucket"], ["--merge-method", "squash"], ["--via", "gh", "--no-wait"], ["--via", "gh", "--merge-method", "octopus"]):
        r = spark(w["m"], "--json", "complete", "t1", *args, env=w["env"])
        assert r.returncode == 2, (args, r)
    assert _calls(w, "gh") == []
