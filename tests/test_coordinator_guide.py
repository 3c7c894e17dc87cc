"""`hooks install` also writes the coordinator's instructions in each client's form (a Claude Code skill,
an AGENTS.md section for Codex, a GEMINI.md section for Gemini), generated from the CLI's help and the
protocol's states; `hooks uninstall` leaves every file byte for byte as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path

from fixtures.repo import make_repo, spark

CLIENTS = ("--client", "claude", "--client", "codex", "--client", "gemini")


def test_install_writes_the_instructions_and_uninstall_restores_every_file_byte_exact(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "# r\n"})
    (repo / "AGENTS.md").write_bytes(b"# mine\nno newline at the end")
    env = {"SPARK_SESSION_ID": "owner"}
    r = spark(repo, "hooks", "install", *CLIENTS, "--json", env={**os.environ, **env})
    assert r.returncode == 0, r
    skill = (repo / ".claude/skills/spark-git/SKILL.md").read_text()
    assert skill.startswith("---\nname: spark-git\n") and "`spark-git agent run`" in skill and "AWAITING_USER_APPROVAL" in skill
    assert (repo / "AGENTS.md").read_text().startswith("# mine\nno newline at the end\n<!-- spark-git")
    assert "`spark-git merge`" in (repo / "GEMINI.md").read_text()
    again = spark(repo, "hooks", "install", *CLIENTS, "--json", env={**os.environ, **env})
    assert again.returncode == 0 and json.loads(again.stdout)["data"]["instructions"] == [], again
    assert (repo / "AGENTS.md").read_text().count("<!-- spark-git") == 1  # idempotent
    r = spark(repo, "hooks", "uninstall", *CLIENTS, "--json", env={**os.environ, **env})
    assert r.returncode == 0, r
    assert (repo / "AGENTS.md").read_bytes() == b"# mine\nno newline at the end"
    assert not (repo / "GEMINI.md").exists() and not (repo / ".claude/skills").exists()
