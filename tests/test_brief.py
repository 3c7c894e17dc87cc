"""`spark-git brief <task> --agent A`: seed 004's Universal Input JSON, validated against the schema
`spark-git schema brief` publishes; changed files with their change types and renames."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.repo import commit, git

from tests.protokit import FULL_CONFIG, P
from tests.test_schema import validate

REV, UP = "rev-reviewer", "up-updater"
CONFIG = FULL_CONFIG + f"""[risk]
replace = ["agents", "content_agents"]  # exactly these agents, none added for words of the title
content_agents = {{}}
[risk.agents]
HIGH = ["{REV}", "{UP}"]
MEDIUM = ["{REV}", "{UP}"]
LOW = ["{REV}", "{UP}"]
"""
LONG = "".join(f"line {i} of a file long enough for git to see the rename\n" for i in range(20))


def implemented(tmp: Path) -> P:
    files = {"README.md": "# demo\n", "src/app.py": "print('hi')\n", "old.py": LONG, "gone.py": "x = 1\n", ".gitignore": "*.flag\n"}
    p = P(tmp, "br", title="Harden the security of login", config=CONFIG, files=files)
    p.ok("classify", p.task, "--files", "src/app.py")
    p.go()
    p.go()
    for a in (REV, UP):
        p.requirements(a)
        p.report(a)
    p.go()
    md = p.root / "task.md"
    md.write_text(md.read_text() + "\n## Non-goals\n\n- no new UI\n- no schema change\n\n## Constraints\n\n- keep Python 3.11\n")
    p.plans([REV, UP])
    p.ok("approve", p.task, "--plan")
    p.go()
    wt = p.wt(UP)
    git(wt, "mv", "old.py", "new.py")
    git(wt, "rm", "-q", "gone.py")
    commit(wt, {"added.py": "y = 2\n", "src/app.py": "print('changed')\n"}, f"[{UP}] rename, delete, add, modify")
    p.ok("merge", p.task, "--agent", UP)
    return p


def test_brief_json_is_the_004_input_and_matches_its_schema(tmp_path: Path) -> None:
    p = implemented(tmp_path)
    env = p.ok("brief", p.task, "--agent", REV)
    schema = p.ok("schema", "brief")["data"]["schemas"]["brief"]
    assert validate(env["data"], schema, schema) == []
    d = env["data"]
    t = d["task"]
    changed = {f["path"]: (f["change_type"], f["old_path"]) for f in t["session_changed_files"]}
    assert changed == {"new.py": ("renamed", "old.py"), "gone.py": ("deleted", None), "added.py": ("added", None), "src/app.py": ("modified", None)}
    assert t["id"] == "br" and t["title"] == "Harden the security of login"
    assert "Implementation plan of rev-reviewer" in t["goal"]
    assert t["non_goals"] == ["no new UI", "no schema change"]
    assert "keep Python 3.11" in t["constraints"]
    assert any(c.startswith("cmd: sh -c test ! -e \"$SPARK_TASK_WORKTREE/stop.flag\"") for c in t["acceptance_checks"]), t["acceptance_checks"]
    assert t["risk_flags"] == ["security"]
    assert str(p.root / "task.md") in t["context_files"] and str(p.root / f"br-{UP}-requirements.md") in t["context_files"]
    assert d["repo_state"]["branch"] == "br" and d["repo_state"]["head"] == p.head()
    assert d["repo_state"]["ci_status"] == "green" and d["repo_state"]["last_failed_step"] is None and d["agent"] == REV and d["role"] == "reviewer"
    # without --json: the Input JSON itself, to hand to a sub-agent as-is
    bare = p.spark("brief", p.task, "--agent", REV)
    assert bare.returncode == 0 and json.loads(bare.stdout) == d


def test_brief_red_gate_and_unknown_agent(tmp_path: Path) -> None:
    p = implemented(tmp_path)
    (p.wt() / "stop.flag").write_text("x")  # the build gate fails (protokit's gate reads the flag in the task worktree)
    commit(p.wt(UP), {"more.py": "z = 3\n"}, f"[{UP}] more")
    assert p.spark("--json", "merge", p.task, "--agent", UP).returncode != 0
    rs = p.ok("brief", p.task, "--agent", UP)["data"]["repo_state"]
    assert rs["ci_status"] == "red" and rs["last_failed_step"].startswith("gates.build")
    r = p.spark("--json", "brief", p.task, "--agent", "nobody")
    assert r.returncode == 2 and "has no agent" in r.json["summary"]
