"""`spark-git start --from SOURCE`: read where the work is described, derive a title, and put the
text into task.md's objective.

Kinds, tried in the order of the workflow-engine document (seed 002, first match wins): a Jira key
(`PROJ-123`); a GitHub issue (`#123` — which falls back to a PR —, `owner/repo#123`, a github.com
issue URL); a GitHub PR (`!123`, a github.com pull URL), all through `gh`; a GitLab merge request URL through `glab`; an existing file; an
existing directory (its README, CLAUDE.md, docs/requirements.md, .cursorrules, requirements and spec
files); an Atlassian browse URL through `jira`; any other http(s) URL through `curl`; otherwise the
argument is the text itself. spark-git never talks to the network itself: a missing tool is exit 2
saying which tool and how else to pass the text."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from spark_git.core.errors import BadInput, Failed
from spark_git.core.git import clean_env
from spark_git.core.model import Model
from spark_git.state.files import write_text_atomic

GH_SHORT = re.compile(r"^(?:(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+))?#(?P<num>\d+)$")
GH_PR = re.compile(r"^!(?P<num>\d+)$")  # 002: `!123` is a pull request
GH_URL = re.compile(r"^https?://github\.com/(?P<repo>[^/\s]+/[^/\s]+)/(?P<kind>issues|pull)/(?P<num>\d+)(?:[/?#].*)?$")
GL_MR_URL = re.compile(r"^(?P<project>https?://[^/\s]+/[^\s]+?)/-/merge_requests/(?P<num>\d+)(?:[/?#].*)?$")  # GitLab MR
JIRA_KEY = re.compile(r"^[A-Z][A-Z0-9]+-\d+$")
JIRA_URL = re.compile(r"^https?://[^/\s]+/browse/(?P<key>[A-Z][A-Z0-9]+-\d+)(?:[/?#].*)?$")
URL = re.compile(r"^https?://\S+$")
DIR_FILES = re.compile(r"^(readme|requirements?|spec|specification)([._-].*)?$", re.IGNORECASE)
# 002's priority order for a directory; other DIR_FILES matches follow.
DIR_FIRST = ("README.md", "CLAUDE.md", "docs/requirements.md", ".cursorrules")
TIMEOUT_S = 60.0


class Source(Model):
    kind: str  # file | directory | github | jira | url | text
    ref: str  # what was given
    title: str
    text: str
    files: list[str] = []


def read(arg: str, cwd: Path) -> Source:
    if not arg.strip():
        raise BadInput("--from is empty: give a file, directory, issue reference, URL or text")
    p = Path(os.path.expanduser(arg))
    p = p if p.is_absolute() else cwd / p
    if len(arg) < 4096 and "\n" not in arg:
        src = _reference(arg, p, cwd)
        if src is not None:
            return src
        if looks_like_path(arg):
            raise BadInput(f"--from {arg!r}: no such file or directory ({p})",
                           hint="a mistyped path is not taken as the task's text; to give text, write it as a sentence")
    text = arg.strip()
    return Source(kind="text", ref=_short(text, 80), title=title_of(text), text=text)


_DOC_SUFFIX = re.compile(r"\.(md|markdown|txt|rst|adoc|org|json|ya?ml|toml|html?)$", re.IGNORECASE)


def looks_like_path(arg: str) -> bool:
    """One word with a slash, a leading `.`/`~`, or a document's suffix: meant as a path, not as text."""
    word = arg.strip()
    if not word or any(c.isspace() for c in word) or URL.match(word):
        return False
    return "/" in word or word.startswith((".", "~")) or bool(_DOC_SUFFIX.search(word))


def detect(arg: str, p: Path) -> str:
    """The kind of source `arg` names, in 002's order (`p`: arg as a path)."""
    checks: list[tuple[str, bool]] = [
        ("jira", bool(JIRA_KEY.match(arg))),
        ("github", bool(GH_SHORT.match(arg) or GH_PR.match(arg) or GH_URL.match(arg))),
        ("gitlab", bool(GL_MR_URL.match(arg))),
        ("file", p.is_file()),
        ("directory", p.is_dir()),
        ("jira-url", bool(JIRA_URL.match(arg))),
        ("url", bool(URL.match(arg))),
    ]
    return next((kind for kind, hit in checks if hit), "text")


def _reference(arg: str, p: Path, cwd: Path) -> Source | None:
    kind = detect(arg, p)
    if kind == "jira":
        return _jira(arg, arg, cwd)
    if kind == "file":
        return _file(arg, p)
    if kind == "directory":
        return _directory(arg, p)
    if kind == "url":
        return _url(arg, cwd)
    # github or jira-url: detect() matched exactly one of these patterns
    if m := GH_SHORT.match(arg):
        return _github(arg, m["repo"], m["num"], None, cwd)
    if m := GH_PR.match(arg):
        return _github(arg, None, m["num"], "pr", cwd)
    if m := GH_URL.match(arg):
        return _github(arg, m["repo"], m["num"], "pr" if m["kind"] == "pull" else "issue", cwd)
    if m := GL_MR_URL.match(arg):
        return _gitlab(arg, m["project"], m["num"], cwd)
    if m := JIRA_URL.match(arg):
        return _jira(arg, m["key"], cwd)
    return None


def title_of(text: str, fallback: str = "task") -> str:
    """The first Markdown heading, else the first non-empty line, trimmed."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("#"):
            return _short(ln.lstrip("#").strip(), 100) or fallback
    return _short(lines[0], 100) if lines else fallback


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1].rstrip() + "…"


def _read_text(p: Path) -> str:
    try:
        return p.read_text(errors="replace")
    except OSError as e:
        raise BadInput(f"cannot read {p}: {e.strerror}") from e


def _file(arg: str, p: Path) -> Source:
    text = _read_text(p).strip()
    if not text:
        raise BadInput(f"{p} is empty: nothing to start from")
    return Source(kind="file", ref=arg, title=title_of(text, p.stem), text=text, files=[str(p)])


def _dir_files(p: Path) -> list[Path]:
    first = [p / name for name in DIR_FIRST if (p / name).is_file()]
    rest = sorted(f for f in p.iterdir() if f.is_file() and DIR_FILES.match(f.name) and f not in first)
    return first + rest


def _directory(arg: str, p: Path) -> Source:
    files = _dir_files(p)
    if not files:
        raise BadInput(f"{p} holds no README, CLAUDE.md, docs/requirements.md, .cursorrules, requirements or spec file",
                       hint="point --from at the file that describes the work")
    parts = []
    for f in files:
        body = _read_text(f).strip()
        if body:
            parts.append(body if len(files) == 1 else f"### {f.relative_to(p)}\n\n{body}")
    text = "\n\n".join(parts)
    if not text:
        raise BadInput(f"the README/requirements files in {p} are empty")
    return Source(kind="directory", ref=arg, title=title_of(text, p.name), text=text, files=[str(f) for f in files])


def _tool(name: str, what: str, instead: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        raise BadInput(f"reading {what} needs the `{name}` command, which is not installed (or not on PATH)", hint=instead)
    return exe


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise Failed(f"`{' '.join(argv)}` did not answer within {TIMEOUT_S:.0f}s") from e


def _github(arg: str, repo: str | None, num: str, kind: str | None, cwd: Path) -> Source:
    gh = _tool("gh", f"GitHub issue {arg}", "install the GitHub CLI (https://cli.github.com) and `gh auth login`, or pass the issue text with --from FILE")
    kinds = [kind] if kind else ["issue", "pr"]  # `#123` may be either
    errors = []
    for k in kinds:
        argv = [gh, k, "view", num, "--json", "title,body,url"] + (["--repo", repo] if repo else [])
        r = _run(argv, cwd)
        if r.returncode == 0:
            try:
                doc = json.loads(r.stdout)
                title, body, url = str(doc.get("title") or "").strip(), str(doc.get("body") or "").strip(), str(doc.get("url") or "")
            except (ValueError, AttributeError) as e:
                raise Failed(f"`gh {k} view {num}` printed something that is not the expected JSON: {e}") from e
            text = f"{title}\n\n{body}".strip() + (f"\n\nSource: {url}" if url else "")
            return Source(kind="github", ref=arg, title=title or f"{k} {num}", text=text)
        errors.append(f"gh {k} view {num}: {r.stderr.strip() or f'exit {r.returncode}'}")
    raise Failed(f"cannot read {arg} through gh:\n" + "\n".join(errors), details={"stderr": "\n".join(errors)})


def _gitlab(arg: str, project: str, num: str, cwd: Path) -> Source:
    glab = _tool("glab", f"GitLab merge request {arg}", "install the GitLab CLI (https://gitlab.com/gitlab-org/cli) and `glab auth login`, or pass the text with --from FILE")
    r = _run([glab, "mr", "view", num, "--repo", project, "--output", "json"], cwd)
    if r.returncode != 0:
        raise Failed(f"cannot read {arg} through glab: {r.stderr.strip() or f'exit {r.returncode}'}", details={"stderr": r.stderr.strip()})
    try:
        doc = json.loads(r.stdout)
        title, body = str(doc.get("title") or "").strip(), str(doc.get("description") or "").strip()
    except (ValueError, AttributeError) as e:
        raise Failed(f"`glab mr view {num}` printed something that is not the expected JSON: {e}") from e
    return Source(kind="gitlab", ref=arg, title=title or f"merge request {num}", text=f"{title}\n\n{body}".strip() + f"\n\nSource: {arg}")


def _jira(arg: str, key: str, cwd: Path) -> Source:
    jira = _tool("jira", f"Jira issue {key}", "install jira-cli (https://github.com/ankitpokhrel/jira-cli) and configure it, or pass the issue text with --from FILE")
    r = _run([jira, "issue", "view", key, "--plain"], cwd)
    if r.returncode != 0:
        raise Failed(f"cannot read {key} through jira: {r.stderr.strip() or f'exit {r.returncode}'}", details={"stderr": r.stderr.strip()})
    text = r.stdout.strip()
    if not text:
        raise Failed(f"`jira issue view {key}` printed nothing")
    return Source(kind="jira", ref=arg, title=f"{key} {title_of(text, key)}" if key not in title_of(text) else title_of(text), text=text)


def _url(arg: str, cwd: Path) -> Source:
    curl = _tool("curl", arg, "spark-git does not fetch web pages itself: save the page and pass --from FILE, or paste its text")
    r = _run([curl, "-fsSL", "--max-time", str(int(TIMEOUT_S)), arg], cwd)
    if r.returncode != 0:
        raise Failed(f"cannot fetch {arg} with curl (exit {r.returncode}): {r.stderr.strip()}", details={"stderr": r.stderr.strip()})
    body = r.stdout
    m = re.search(r"<title[^>]*>(.*?)</title>", body, re.IGNORECASE | re.DOTALL)
    if m:  # HTML: keep the visible text, roughly
        title = " ".join(m.group(1).split())
        text = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", body, flags=re.IGNORECASE | re.DOTALL)
        text = re.sub(r"<[^>]+>", " ", text)
        text = "\n".join(" ".join(ln.split()) for ln in text.splitlines() if ln.strip())
    else:
        text = body.strip()
        title = title_of(text, arg)
    return Source(kind="url", ref=arg, title=title or arg, text=f"{text}\n\nSource: {arg}")


MARKER = "<!-- spark-git start --from: classify replaces this file with its template and keeps the objective -->"
OBJECTIVE = "Task Objective"  # the section name the protocol's task.md check looks for


def objective_body(src: Source) -> str:
    # A blockquote: headings inside the ingested text do not become sections of task.md.
    quoted = "\n".join(f"> {ln}" if ln.strip() else ">" for ln in src.text.splitlines())
    return f"{quoted}\n\n_From {src.kind}: {src.ref}_"


def write_objective(task_md: Path, title: str, src: Source) -> None:
    """Puts the source text under `## Task Objective` of task.md: replaces that section's body when
    task.md exists; otherwise writes a task.md holding the objective, which `classify` later turns
    into its full template (see carried_objective)."""
    body = objective_body(src)
    if task_md.is_file():
        doc = task_md.read_text()
        m = re.search(r"^##\s+(Task\s+)?Objective\s*$", doc, re.MULTILINE)
        if m:
            nxt = re.search(r"^#{1,2}\s", doc[m.end():], re.MULTILINE)
            end = m.end() + nxt.start() if nxt else len(doc)
            doc = doc[: m.end()] + "\n\n" + body + "\n" + ("\n" if nxt else "") + doc[end:]
        else:
            doc = doc.rstrip("\n") + f"\n\n## {OBJECTIVE}\n\n{body}\n"
    else:
        doc = f"{MARKER}\n# {title}\n\n## {OBJECTIVE}\n\n{body}\n"
    write_text_atomic(task_md, doc)


def carried_objective(task_md: Path) -> str | None:
    """The objective of a task.md that only `start --from` wrote (marker present, no other section
    added), for classify to carry into its template; None otherwise (task.md is then left alone)."""
    try:
        doc = task_md.read_text()
    except OSError:
        return None
    if not doc.startswith(MARKER):
        return None
    m = re.search(rf"^##\s+{OBJECTIVE}\s*$", doc, re.MULTILINE)
    if not m or re.search(r"^#{1,6}\s", doc[m.end():], re.MULTILINE):
        return None
    return doc[m.end():].strip("\n")


def with_objective(template: str, objective: str | None) -> str:
    """`template` with the body of its `## Task Objective` section replaced by `objective`."""
    if objective is None:
        return template
    m = re.search(rf"^##\s+{OBJECTIVE}\s*$", template, re.MULTILINE)
    if not m:
        return template.rstrip("\n") + f"\n\n## {OBJECTIVE}\n\n{objective}\n"
    nxt = re.search(r"^#{1,2}\s", template[m.end():], re.MULTILINE)
    end = m.end() + nxt.start() if nxt else len(template)
    return template[: m.end()] + "\n\n" + objective + "\n" + ("\n" if nxt else "") + template[end:]
