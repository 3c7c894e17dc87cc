"""The hook's refusals of issue 22/23's escapes guard real damage: each command, judged for agent a1,
is blocked; run for real in a1's worktree (what an unhooked agent would do) it moves a ref that is not
a1's — so the corpus models git as git behaves (`--mov` is `--move`, `main-worktree/HEAD` is main,
`-m MSG` is not the ref). The harmless calls the old hook blocked are allowed and, run for real,
succeed. Real git, real processes."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest
from fixtures.repo import commit, git, make_repo, sealed_env, spark

from tests.hookutil import event, hook

ARCHIVE = "refs/spark/archive/t1/uncommitted-a1/0123456789ab"


def _world(tmp: Path) -> dict:
    env = sealed_env(tmp / "home", SPARK_SESSION_ID="owner")
    repo = make_repo(tmp / "repo", {"README.md": "# demo\n", "src/app.py": "print('hi')\n"})
    assert spark(repo, "start", "t1", "--agents", "a1,a2", env=env).returncode == 0
    a1 = tmp / "repo.tasks/t1/agents/a1/code"
    commit(a1, {"src/app.py": "print('a1')\n"}, "a1's work")
    git(repo, "update-ref", ARCHIVE, "HEAD")
    return {"env": env, "repo": repo, "a1": a1}


def _refs(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split(" ", 1) for line in out.splitlines())


def _run(w: dict, cmd: str) -> subprocess.CompletedProcess[str]:
    """The command as an unhooked agent's shell would run it, in a1's worktree."""
    return subprocess.run(["bash", "-c", cmd], cwd=w["a1"], env={**w["env"], "SPARK_SESSION_ID": ""}, capture_output=True, text=True)


B64 = base64.b64encode(b"git update-ref refs/heads/main HEAD\n").decode()
ESCAPES = [  # (command, the ref it moves when run, how it changes)
    ("git update-ref -m MSG refs/heads/main HEAD", "refs/heads/main", "moved"),
    ("git -C {main} update-ref HEAD {a1head}", "refs/heads/main", "moved"),
    ("git update-ref main-worktree/HEAD HEAD", "refs/heads/main", "moved"),
    ("git branch --mov t1 t1-old", "refs/heads/t1", "gone"),
    ("git update-ref refs/heads/task-t1-agent-a2 HEAD", "refs/heads/task-t1-agent-a2", "moved"),
    ("git update-ref -m x -d " + ARCHIVE, ARCHIVE, "gone"),
    ("git notes --ref notes/spark-verdicts add -f -m forged HEAD", "refs/notes/spark-verdicts", "new"),
    ("GIT_NOTES_REF=refs/notes/spark-verdicts git notes add -f -m forged HEAD", "refs/notes/spark-verdicts", "new"),
    ("git -c core.notesRef=refs/notes/spark-verdicts notes add -f -m forged HEAD", "refs/notes/spark-verdicts", "new"),
    ("git -c remote.x.url={main} -c remote.x.fetch=+refs/heads/task-t1-agent-a1:refs/heads/main fetch -u x", "refs/heads/main", "moved"),
    ("git tag main HEAD", "refs/tags/main", "new"),
    ("cd {main}; cd /tmp; cd - >/dev/null && git update-ref HEAD {a1head}", "refs/heads/main", "moved"),
    (f"echo {B64} | base64 -d | sh", "refs/heads/main", "moved"),
    (f'sh -c "$(echo {B64} | base64 -d)"', "refs/heads/main", "moved"),
    ("python3 -c \"import subprocess; subprocess.run(['git', 'update-ref', 'refs/heads/main', 'HEAD'])\"", "refs/heads/main", "moved"),
]


@pytest.mark.parametrize(("template", "ref", "change"), ESCAPES, ids=[e[0][:48] for e in ESCAPES])
def test_an_escape_is_blocked_and_would_move_a_ref_not_the_agents(tmp_path: Path, template: str, ref: str, change: str) -> None:
    w = _world(tmp_path)
    cmd = template.format(main=w["repo"], a1head=git(w["a1"], "rev-parse", "HEAD"))
    r = hook(event(w["a1"], "Bash", command=cmd), w["env"])
    assert r.returncode == 2 and r.stderr.startswith("spark-git: blocked:"), (cmd, r.returncode, r.stderr)
    before = _refs(w["repo"])
    ran = _run(w, cmd)
    after = _refs(w["repo"])
    assert {"moved": ref in after and after.get(ref) != before.get(ref), "gone": ref in before and ref not in after,
            "new": ref not in before and ref in after}[change], (cmd, ran.stderr, before.get(ref), after.get(ref))


HARMLESS = [
    "git rebase -X theirs main",
    "git rebase --exec true --onto main HEAD~1",
    "git switch --detach main && git switch task-t1-agent-a1",
    "GIT_INDEX_FILE=$(mktemp -u) git read-tree HEAD",
    "python3 -c \"print(open('{main}/README.md').read().replace('#', ''))\"",
    "find {main}/src -name '*.py' -exec grep -l print {{}} +",
    "cd \"$(git rev-parse --show-toplevel)\" && git commit --allow-empty -qm wip",
]


@pytest.mark.parametrize("template", HARMLESS)
def test_a_harmless_call_is_allowed_and_works(tmp_path: Path, template: str) -> None:
    w = _world(tmp_path)
    cmd = template.format(main=w["repo"])
    r = hook(event(w["a1"], "Bash", command=cmd), w["env"])
    assert r.returncode == 0, (cmd, r.stderr)
    before = _refs(w["repo"])
    ran = _run(w, cmd)
    assert ran.returncode == 0, (cmd, ran.stderr)
    moved = {k for k in set(before) | set(_refs(w["repo"])) if before.get(k) != _refs(w["repo"]).get(k)}
    assert moved <= {"refs/heads/task-t1-agent-a1"}, moved
