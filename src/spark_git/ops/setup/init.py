"""`spark-git init`: the repository's spark-git set-up in one step (issue 33 item 2) — the protocol, the
build and final gates (offering what the project shows it uses), the committed approvers' file, the
clients to hook; the config written (only the keys init owns are set, the rest of the file kept),
the hooks installed, both committed on the base branch when asked. Run again, it shows what would
change."""

from __future__ import annotations

import difflib
import json
import re
import shutil
import tomllib
from pathlib import Path

from spark_git.clients import registry
from spark_git.core import suggest
from spark_git.core.errors import BadInput, Blocked
from spark_git.core.layout import Layout
from spark_git.core.model import Model
from spark_git.ops.shared import hooksetup
from spark_git.state.store import Store

CONFIG = ".spark-git.toml"
PROTOCOLS = {"light": "the gates and your approval only: agents work, their merges are gated, you approve and land",
             "full": "every task walks REQUIREMENTS → SYNTHESIS → IMPLEMENTATION → REVIEW → VALIDATION, with agents' reports and your plan approval"}


class InitData(Model):
    protocol: str
    build: str | None
    final: str | None
    approvers: str | None  # the committed allowed-signers file
    clients: list[str]
    detected: list[str]  # gate commands the project suggests (first: the default)
    config: str  # path of the config file
    diff: str  # what the config file would become (unified diff; "" when it stays)
    hooks_to_install: list[str]  # clients whose hooks are not installed yet
    changed: bool  # anything would change (or, applied: did change)
    applied: bool = False
    committed: str | None = None  # the commit on the base branch


def detect(root: Path) -> list[str]:
    """Test commands the project shows it uses, the likeliest first."""
    found = []
    pkg = root / "package.json"
    if any((root / f).exists() for f in ("pytest.ini", "conftest.py", "tox.ini")) or _mentions(root / "pyproject.toml", "pytest") \
            or any(root.glob("test*/test_*.py")) or any(root.glob("test_*.py")):
        found.append("python -m pytest -q")
    scripts = _json(pkg).get("scripts")
    if isinstance(scripts, dict) and "test" in scripts:
        found.append("npm test")
    if (root / "Cargo.toml").exists():
        found.append("cargo test")
    if (root / "go.mod").exists():
        found.append("go test ./...")
    if re.search(r"(?m)^test\s*:", _read(root / "Makefile")):
        found.append("make test")
    return found


def clients_on_path() -> list[str]:
    """The clients installed here (their program on PATH)."""
    return [c.name for c in registry.every() if c.facts.run and shutil.which(c.facts.run.headless[0])]


def plan(layout: Layout, *, protocol: str, build: str | None, final: str | None, approvers: str | None, clients: list[str]) -> InitData:
    """What init would write: nothing is changed."""
    if protocol not in PROTOCOLS:
        raise BadInput(f"unknown protocol {protocol!r}: use light ({PROTOCOLS['light']}) or full", next=["spark-git init --protocol light"])
    bad = [c for c in clients if c not in registry.CLIENTS]
    if bad:
        raise BadInput(f"unknown client {', '.join(bad)}{suggest.did_you_mean(bad[0], registry.CLIENTS)}: use {', '.join(registry.CLIENTS)}",
                       next=[f"spark-git init --client {suggest.near(bad[0], registry.CLIENTS) or registry.DEFAULT}"])
    root = hooksetup.root_of(layout)
    if approvers is not None and not (root / approvers).is_file():
        raise BadInput(f"--approvers {approvers}: no such file in the repository (an allowed-signers file: `principal ssh-ed25519 AAAA…` per line)",
                       next=["spark-git init"])
    before = _read(root / CONFIG)
    after = render(before, protocol=protocol, build=build, final=final, approvers=approvers)
    diff = "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{CONFIG}", f"b/{CONFIG}"))
    have = {c.name for c in hooksetup.configured(root)}
    missing = [c for c in clients if c not in have]
    return InitData(protocol=protocol, build=build, final=final, approvers=approvers, clients=clients, detected=detect(root),
                    config=str(root / CONFIG), diff=diff, hooks_to_install=missing, changed=bool(diff or missing))


def apply(layout: Layout, store: Store, d: InitData, *, commit: bool, guide: str | None = None) -> InitData:
    """Writes the config, installs the hooks (and the coordinator's instructions, `guide`); with
    `commit`, commits them on the base branch."""
    root = hooksetup.root_of(layout)
    git = layout.git()
    base = str(layout.base_branch())
    if commit and git.run("symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip() != base:
        raise Blocked(f"the main worktree is not on the base branch {base}: init commits its files there",
                      hint=f"switch to {base} first, or run init without committing", next=[f"git -C {root} switch {base}"])
    if d.diff:
        after = render(_read(root / CONFIG), protocol=d.protocol, build=d.build, final=d.final, approvers=d.approvers)
        (root / CONFIG).write_text(after)
    done = hooksetup.install(layout, store, d.clients, "project", guide) if d.clients else None
    d.applied = True
    if commit:
        made = [Path(f.path) for f in done.files] + [Path(p) for p in done.instructions] if done else []
        files = [CONFIG, *(str(p.relative_to(root)) if p.is_absolute() else str(p) for p in made if not p.is_absolute() or p.is_relative_to(root))]
        files = [f for f in dict.fromkeys(files) if (root / f).exists()]
        git.run("add", "--", *files)
        if git.run("diff", "--cached", "--quiet", "--", *files, check=False).returncode != 0:
            git.run("commit", "-q", "-m", f"spark-git: {d.protocol} protocol" + (f", build gate `{d.build}`" if d.build else "") + ", hooks", "--", *files)
            d.committed = git.run("rev-parse", "HEAD").stdout.strip()
    return d


def render(text: str, *, protocol: str, build: str | None, final: str | None, approvers: str | None) -> str:
    """`text` (the config file as it is) with init's keys set; every other line kept."""
    text = _set(text, None, "protocol", protocol)
    for key, value in (("build", build), ("final", final)):
        if value is not None:
            text = _set(text, "gates", key, value)
    if approvers is not None:
        text = _set(text, "approval", "allowed_signers", approvers)
    return text


def _set(text: str, section: str | None, key: str, value: str) -> str:
    """Sets `key = "value"` in `[section]` (None: the top, before any section), adding what is missing."""
    line = f"{key} = {json.dumps(value)}"
    lines = text.splitlines()
    start = 0 if section is None else next((i + 1 for i, ln in enumerate(lines) if ln.strip() == f"[{section}]"), None)
    if start is None:
        return text.rstrip("\n") + ("\n\n" if text.strip() else "") + f"[{section}]\n{line}\n"
    end = next((i for i in range(start, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    for i in range(start, end):
        if re.match(rf"\s*{re.escape(key)}\s*=", lines[i]):
            if _value(lines[i]) != value:  # the same value stays as written (its comment too)
                lines[i] = line
            return "\n".join(lines) + "\n"
    lines.insert(start if section is None else end, line)
    return "\n".join(lines) + "\n"


def _value(line: str) -> object:
    try:
        return next(iter(tomllib.loads(line).values()), None)
    except tomllib.TOMLDecodeError:
        return None


def _read(p: Path) -> str:
    try:
        return p.read_text()
    except OSError:
        return ""


def _mentions(p: Path, word: str) -> bool:
    return word in _read(p)


def _json(p: Path) -> dict[str, object]:
    try:
        got = json.loads(p.read_text())
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}
