"""The forges' own command-line clients (`gh`, `glab`) for `complete --via`: spark-git never talks
HTTP; it runs the client the user is logged in with, through core/proc's runner, and reads the
output those clients document (`gh pr create` prints the URL; `--json`/`--output json` views)."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from spark_git.core import proc
from spark_git.core.errors import BadInput, Blocked, Failed

FORGES = ("gh", "glab")
METHODS = ("merge", "squash", "rebase")
TIMEOUT_S = 120.0
INSTALL = {
    "gh": "install the GitHub CLI (https://cli.github.com) and run `gh auth login`, or land with `spark-git complete TASK` (no --via)",
    "glab": "install the GitLab CLI (https://gitlab.com/gitlab-org/cli) and run `glab auth login`, or land with `spark-git complete TASK` (no --via)",
}
State = Literal["open", "merged", "closed"]


@dataclass(frozen=True)
class Opened:
    url: str
    number: str  # the PR number / the MR iid


@dataclass(frozen=True)
class Seen:
    state: State
    url: str
    merged_at: str | None = None
    merge_commit: str | None = None


def tool(via: str) -> str:
    """The client's path; a missing one is a usage error (exit 2) naming what to install."""
    if via not in FORGES:
        raise BadInput(f"--via {via!r}: one of {', '.join(FORGES)}")
    exe = shutil.which(via)
    if exe is None:
        raise BadInput(f"--via {via} needs the `{via}` command, which is not installed (or not on PATH); nothing was pushed", hint=INSTALL[via])
    return exe


def call(exe: str, args: list[str], cwd: Path) -> str:
    """Runs the client; its stdout. A refusal (non-zero exit) is exit 3 with the client's stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        r = proc.run([exe, *args], cwd, out, TIMEOUT_S, err=err)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace").strip()
    shown = f"{Path(exe).name} {' '.join(args[:2])}"
    if r.error is not None:
        raise Blocked(f"cannot run `{shown}`: {r.error}")
    if r.timed_out:
        raise Failed(f"`{shown}` did not answer within {TIMEOUT_S:.0f}s")
    if r.exit_code != 0:
        raise Blocked(f"`{shown}` refused (exit {r.exit_code}): {stderr or stdout.strip()}", details={"stderr": stderr, "argv": [exe, *args]})
    return stdout


def _json(stdout: str, shown: str) -> Any:
    try:
        return json.loads(stdout)
    except ValueError as e:
        raise Failed(f"`{shown}` printed something that is not JSON: {e}") from e


class Cli(Protocol):
    """One forge's client: open a PR/MR, find an open one, enable auto-merge, read its state."""

    def create(self, cwd: Path, base: str, branch: str, title: str, body: str) -> Opened: ...
    def find_open(self, cwd: Path, branch: str) -> Opened | None: ...
    def auto_merge(self, cwd: Path, opened: Opened, sha: str, method: str) -> None: ...
    def view(self, cwd: Path, opened: Opened) -> Seen: ...


_TRAILING_NUMBER = re.compile(r"/(\d+)/?$")


def _number(url: str) -> str:
    m = _TRAILING_NUMBER.search(url)
    return m.group(1) if m else url


class Gh:
    def __init__(self, exe: str) -> None:
        self.exe = exe

    def create(self, cwd: Path, base: str, branch: str, title: str, body: str) -> Opened:
        with tempfile.NamedTemporaryFile("w", suffix=".md") as f:
            f.write(body)
            f.flush()
            out = call(self.exe, ["pr", "create", "--base", base, "--head", branch, "--title", title, "--body-file", f.name], cwd)
        urls = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("http")]
        if not urls:
            raise Failed(f"`gh pr create` printed no pull request URL: {out.strip()!r}")
        return Opened(urls[-1], _number(urls[-1]))

    def find_open(self, cwd: Path, branch: str) -> Opened | None:
        found = _json(call(self.exe, ["pr", "list", "--head", branch, "--state", "open", "--json", "url,number"], cwd), "gh pr list")
        return Opened(str(found[0]["url"]), str(found[0]["number"])) if found else None

    def auto_merge(self, cwd: Path, opened: Opened, sha: str, method: str) -> None:
        call(self.exe, ["pr", "merge", opened.url, "--auto", "--match-head-commit", sha, f"--{method}"], cwd)

    def view(self, cwd: Path, opened: Opened) -> Seen:
        d = _json(call(self.exe, ["pr", "view", opened.url, "--json", "state,mergedAt,mergeCommit,url"], cwd), "gh pr view")
        state = {"MERGED": "merged", "CLOSED": "closed"}.get(str(d.get("state")), "open")
        commit = (d.get("mergeCommit") or {}).get("oid")
        return Seen(state, str(d.get("url") or opened.url), d.get("mergedAt") or None, commit or None)  # type: ignore[arg-type]


class Glab:
    def __init__(self, exe: str) -> None:
        self.exe = exe

    def create(self, cwd: Path, base: str, branch: str, title: str, body: str) -> Opened:
        out = call(self.exe, ["mr", "create", "--source-branch", branch, "--target-branch", base, "--title", title,
                              "--description", body, "--yes"], cwd)
        urls = [w for ln in out.splitlines() for w in ln.split() if w.startswith("http") and "merge_requests" in w]
        if not urls:
            raise Failed(f"`glab mr create` printed no merge request URL: {out.strip()!r}")
        return Opened(urls[-1], _number(urls[-1]))

    def find_open(self, cwd: Path, branch: str) -> Opened | None:
        found = _json(call(self.exe, ["mr", "list", "--source-branch", branch, "--output", "json"], cwd), "glab mr list")
        live = [m for m in found if m.get("state") == "opened"]
        return Opened(str(live[0]["web_url"]), str(live[0]["iid"])) if live else None

    def auto_merge(self, cwd: Path, opened: Opened, sha: str, method: str) -> None:
        extra = [f"--{method}"] if method != "merge" else []  # glab merges with a merge commit unless told otherwise
        call(self.exe, ["mr", "merge", opened.number, "--auto-merge", "--sha", sha, "--yes", *extra], cwd)

    def view(self, cwd: Path, opened: Opened) -> Seen:
        d = _json(call(self.exe, ["mr", "view", opened.number, "--output", "json"], cwd), "glab mr view")
        state = {"merged": "merged", "closed": "closed", "locked": "closed"}.get(str(d.get("state")), "open")
        commit = d.get("merge_commit_sha") or d.get("squash_commit_sha")
        return Seen(state, str(d.get("web_url") or opened.url), d.get("merged_at") or None, commit or None)  # type: ignore[arg-type]


def cli(via: str) -> Cli:
    exe = tool(via)
    return Gh(exe) if via == "gh" else Glab(exe)
