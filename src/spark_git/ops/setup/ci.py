"""`spark-git ci github|gitlab [--write]` (issue 34): the forge's job that runs `spark-git verify --fetch`
on every push to the base branch, so a push that bypassed the queue fails where everyone sees it.
Printed by default; `--write` puts it in the main worktree (GitHub: a workflow file of its own;
GitLab: a job appended to .gitlab-ci.yml, the one file GitLab reads), for the human to commit."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from spark_git.core.errors import BadInput
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.state.files import write_text_atomic

Forge = Literal["github", "gitlab"]
VERIFY_COMMAND = "spark-git verify --fetch"  # what the job runs: it fetches the base and the notes, no secret
INSTALL = "pip install spark-git"
JOB = "spark-verify"
PATHS: dict[str, str] = {"github": ".github/workflows/spark-verify.yml", "gitlab": ".gitlab-ci.yml"}

GITHUB = """\
# spark-git: every commit on {base} carries a signed landing attestation (`spark-git verify`).
# A push that bypassed spark-git's queue fails this workflow, naming the commit.
name: {job}
on:
  push:
    branches: [{base}]
jobs:
  {job}:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with:
          fetch-depth: 0  # verify reads each landing's parent: a shallow clone is refused
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: {install}
      - run: {command}
"""

GITLAB = """\
# spark-git: every commit on {base} carries a signed landing attestation (`spark-git verify`).
# A push that bypassed spark-git's queue fails this job, naming the commit.
{job}:
  image: python:3.12
  variables:
    GIT_DEPTH: "0"  # verify reads each landing's parent: a shallow clone is refused
  rules:
    - if: $CI_PIPELINE_SOURCE == "push" && $CI_COMMIT_BRANCH == "{base}"
  script:
    - {install}
    - {command}
"""


class CiData(Model):
    forge: Forge
    path: str  # where --write puts it, relative to the main worktree
    text: str  # the workflow (GitHub) or the job (GitLab)
    command: str  # the command the job runs
    written: Literal["printed", "created", "appended", "unchanged"]


def render(forge: Forge, base: str, install: str = INSTALL) -> str:
    return (GITHUB if forge == "github" else GITLAB).format(base=base, job=JOB, install=install, command=VERIFY_COMMAND)


def _write(path: Path, text: str, forge: Forge) -> Literal["created", "appended", "unchanged"]:
    have = path.read_text(errors="replace") if path.is_file() else None
    if have is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
        return "created"
    if text in have:
        return "unchanged"
    if forge == "gitlab" and f"\n{JOB}:" not in f"\n{have}":
        write_text_atomic(path, have + ("" if have.endswith("\n") else "\n") + "\n" + text)
        return "appended"
    raise BadInput(f"{path} exists with another {JOB} job: left alone", hint="compare it with what `spark-git ci` prints, then remove it and write again",
                   next=[f"spark-git ci {forge}", f"git rm {path}"])


def ci(layout: Layout, forge: str, *, write: bool, install: str = INSTALL) -> CiData:
    if forge not in PATHS:
        raise BadInput(f"no forge {forge!r}: spark-git writes a job for github or gitlab", next=["spark-git ci github", "spark-git ci gitlab"])
    f: Forge = "github" if forge == "github" else "gitlab"
    text = render(f, layout.base_branch(), install)
    how: Literal["printed", "created", "appended", "unchanged"] = _write(layout.main_worktree / PATHS[f], text, f) if write else "printed"
    return CiData(forge=f, path=PATHS[f], text=text, command=VERIFY_COMMAND, written=how)
