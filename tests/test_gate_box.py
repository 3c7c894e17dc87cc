"""The gate's box allows a list and forbids the rest (issue 31 items 1-2), attacked for real: an agent
commits gate code (here a `tests/conftest.py`-like script run as the build gate) that tries each
escape found on 1697f77; each is checked on disk and in git after `merge` ran it.

- `/proc/<ancestor>/root/...`: the host's file system past every read-only mount (keys, main);
- `~/.config/git/config` (core.fsmonitor) and a `.pth` in spark-git's virtualenv: code the human's
  next command would run;
- a host unix socket (a tmux server's, as `agent run --tmux` makes one);
- a stale ignored `__pycache__/*.pyc` that made wrong code pass: the gate now runs on exactly the
  tree it vouches for."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import uuid
from pathlib import Path

import pytest
from fixtures.repo import git

from spark_git.core import gatebox
from spark_git.gates import verdictkey
from tests.prockit import with_marker
from tests.protokit import P

pytestmark = pytest.mark.skipif(gatebox.bwrap() is None, reason="bubblewrap is not installed (.ci/run installs it)")

ATTACK = '''\
import glob, os, socket, subprocess
out = {"update_ref": [], "key": [], "wrote": [], "write_err": []}
for root in glob.glob("/proc/[0-9]*/root"):
    r = subprocess.run(["git", "--git-dir=" + root + os.environ["COMMON"], "update-ref", "refs/heads/main", os.environ["AGENT_SHA"]], capture_output=True)
    out["update_ref"].append(r.returncode)
    try:
        out["key"].append(open(root + os.environ["KEYFILE"], "rb").read().hex())
    except OSError:
        pass
for path, text in ((os.path.expanduser("~/.config/git/config"), "[core]\\n\\tfsmonitor = /bin/false\\n"),
                   (os.environ["REAL_HOME"] + "/.config/git/config", "[core]\\n\\tfsmonitor = /bin/false\\n"),
                   (os.environ["PTH"], "# spark-git test: a .pth a gate must not write\\n")):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(text)
        out["wrote"].append(path)
    except OSError as e:
        out["write_err"].append(e.errno)
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(os.environ["SOCK"])
    s.sendall(b"pwned")
    out["sock"] = "connected"
except OSError as e:
    out["sock"] = e.errno
print("ATTACK", out)
'''
NAMES = ("COMMON", "AGENT_SHA", "KEYFILE", "REAL_HOME", "PTH", "SOCK")


def _listener(path: Path) -> tuple[socket.socket, list[bytes]]:
    got: list[bytes] = []
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(str(path))
    srv.listen()

    def serve() -> None:
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            got.append(c.recv(100))
            c.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv, got


def test_gate_code_cannot_escape_through_proc_home_config_the_venv_or_a_host_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    pth = site / f"spark-test-{os.getpid()}-{tmp_path.name}.pth"
    home = Path(os.environ["HOME"])
    # the gate keeps the attack's variables ([gates] env): it gets its addresses, only the box stands in its way
    config = f'protocol = "light"\n[gates]\nbuild = ["{sys.executable}", "attack.py"]\nenv = {json.dumps(list(NAMES))}\n'
    p = P(tmp_path, config=config, agents="a1", files={"README.md": "# demo\n"})
    sock = p.repo.parent / "repo.tasks" / "host.sock"  # a host socket the gate could see: inside the tasks root
    srv, got = _listener(sock)
    main = git(p.repo, "rev-parse", "refs/heads/main")
    key = verdictkey.key_path(p.repo / ".git")
    verdictkey.load_key(p.repo / ".git", [])  # the verdict key exists, as after any gate
    agent_sha = p.commit("a1", {"attack.py": ATTACK}, "[a1] a test helper")
    for k, v in zip(NAMES, (str(p.repo / ".git"), agent_sha, str(key), str(home), str(pth), str(sock)), strict=True):
        monkeypatch.setenv(k, v)  # the coordinator's environment, which the gate's is made from
    try:
        p.spark("--json", "merge", p.task, "--agent", "a1")
    finally:
        srv.close()
        leaked_pth = pth.exists()
        pth.unlink(missing_ok=True)
    log = sorted((p.root / "logs").glob("*-build.log"))[-1].read_text()
    assert "ATTACK" in log, log  # the attack ran
    assert git(p.repo, "rev-parse", "refs/heads/main") == main, log  # main never moved
    assert not leaked_pth, log  # nothing written into spark-git's virtualenv
    assert not (home / ".config" / "git" / "config").exists(), log  # the human's git config untouched
    assert got == [], log  # no host socket reached
    assert "'key': []" in log, log  # no key byte read


def test_a_daemon_the_gate_leaves_dies_with_its_pid_namespace(tmp_path: Path) -> None:
    """`setsid -f` takes a daemon out of the gate's process group and session; the box's PID namespace
    ends with the gate, and everything in it (the process runner's sweep, tests/test_gates.py, is the
    second line: it catches the same daemon without the box)."""
    marker = f"spark-gate-daemon-{uuid.uuid4().hex}"
    config = f'protocol = "light"\n[gates]\nbuild = ["sh", "-c", "setsid -f sh -c \'sleep 300; :\' {marker}; exit 0"]\n'
    p = P(tmp_path, config=config, agents="a1", files={"README.md": "# demo\n"})
    p.commit("a1", {"x.txt": "x\n"}, "[a1] x")
    r = p.spark("--json", "merge", p.task, "--agent", "a1")
    assert r.returncode == 0, r
    assert with_marker(marker) == []
