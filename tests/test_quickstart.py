"""The README's quick start pasted verbatim into a fresh shell on a real project (issue 33 item 3): a
Python project with pytest tests, in `~/src/myproject` with its `.venv`; the five commands run as
written, an agent's commit between `start` and `merge` as the comment says. The quick start used to
stop at `merge` (exit 3: "no session was given")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fixtures.repo import git, make_repo, sealed_env

README = Path(__file__).resolve().parents[1] / "README.md"


def quick_start() -> list[str]:
    text = README.read_text().split("## Quick start on your own repository\n", 1)[1]
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [ln for ln in block.splitlines() if ln.strip()]


def test_the_quick_start_works_pasted_verbatim(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "src" / "myproject"
    make_repo(project, {"parser.py": "def parse(s):\n    return s.split(',')\n",
                        "test_parser.py": "from parser import parse\n\n\ndef test_parse():\n    assert parse('a,b') == ['a', 'b']\n",
                        ".gitignore": ".venv/\n__pycache__/\n"})
    venv_bin = project / ".venv" / "bin"  # the project's virtualenv: pytest and spark-git, as the user installed them
    venv_bin.mkdir(parents=True)
    (venv_bin / "activate").write_text(f'export VIRTUAL_ENV="{project / ".venv"}"\nexport PATH="{Path(sys.executable).parent}:$PATH"\n')
    env = {k: v for k, v in sealed_env(home).items() if k != "SPARK_SESSION_ID"}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"  # a fresh shell: nothing of the test's own
    lines = quick_start()
    assert len(lines) == 5 and lines[-1].startswith("spark-git merge fix-parser --agent coder"), lines
    before_merge = "\n".join(lines[:-1])
    r = subprocess.run(["bash", "-ec", before_merge], cwd=home, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout, r.stderr)
    coder = home / "src" / "myproject.tasks" / "fix-parser" / "agents" / "coder" / "code"
    (coder / "parser.py").write_text("def parse(s):\n    return [p.strip() for p in s.split(',')]\n")
    git(coder, "commit", "-qam", "[coder] strip the fields", env=env)  # "after the agent committed there"
    r = subprocess.run(["bash", "-ec", "\n".join([lines[0], lines[-1]])], cwd=home, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert git(project, "show", "fix-parser:parser.py") == "def parse(s):\n    return [p.strip() for p in s.split(',')]"  # landed in the task branch
    assert "SPARK_SESSION_ID" not in env and "SPARK_SESSION_ID" not in "\n".join(lines)  # nobody exported a session
