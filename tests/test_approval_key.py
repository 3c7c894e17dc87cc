"""Issue 31 item 4: an approval needs a secret that no file on disk gives. A key without a passphrase
is refused (unless the committed config says `[approval] unprotected_key = true`, and then every
approval says so); the key spark-git creates gets the passphrase the human types; an ssh-agent key
held with `ssh-add -c` signs only when the human confirms. Real ssh-keygen, ssh-agent, pty, setsid."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import subprocess
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.repo import SEALED_ENV, git, spark_argv

from tests.mergekit import PY, Task, config

OK_GATE = [PY, "-c", "pass"]
STRICT = "[approval]\nunprotected_key = false\n"  # what a repo says by default; the fixtures' default is true
BOUND_S = 60.0
PASSPHRASE = b"correct horse battery\n"


def _state() -> Path:
    return Path(os.environ["XDG_STATE_HOME"]) / "spark-git"


def _ready(tmp_path: Path, approval: str = STRICT) -> Task:
    t = Task(tmp_path, ["a1"], config(build=OK_GATE, final=OK_GATE) + approval)
    t.commit("a1", {"feature.txt": "v1\n"}, "[a1] feature")
    assert t.merge("a1").returncode == 0
    return t


def _plain_key() -> Path:
    """The key an older spark-git created: in the state directory, no passphrase."""
    _state().mkdir(parents=True, exist_ok=True, mode=0o700)
    key = _state() / "approval_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return key


def _daemonized(t: Task, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`cd /tmp && env -i PATH=$PATH setsid …`: no terminal, no agent ancestor, the caller guard dodged
    (only the sealed test environment is kept, so that nothing reaches the machine's own state)."""
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", *SEALED_ENV) if k in os.environ}
    argv = ["setsid", "-w", *spark_argv("-C", str(t.repo), *args)]
    return subprocess.run(argv, cwd="/tmp", env={**keep, "SPARK_SESSION_ID": "s1", **(env or {})}, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=BOUND_S)


def _approval_notes(t: Task, sha: str) -> list[dict]:
    return [n for n in t.notes(sha) if n.get("kind") == "approval"]


def _unmoved(t: Task, main: str) -> None:
    assert t.task_json()["checkpoint"] is None
    assert git(t.repo, "rev-parse", "refs/heads/main") == main
    r = t.spark("--json", "complete", "t1")
    assert r.returncode == 3 and git(t.repo, "rev-parse", "refs/heads/main") == main, r


def test_a_daemonized_approval_with_a_plain_key_is_refused(tmp_path: Path) -> None:
    # fails before: the key in the state directory signed for any process of the user, and main moved
    t = _ready(tmp_path, STRICT.replace("[approval]\n", "[approval]\nallow_non_interactive = true\n"))
    key, main, head = _plain_key(), git(t.repo, "rev-parse", "refs/heads/main"), t.head()
    r = _daemonized(t, "approve", "t1", "--changes")
    assert r.returncode == 3, r
    assert f"the approval key {key} has no passphrase" in r.stderr and f"ssh-keygen -p -f {key}" in r.stderr, r.stderr
    assert _approval_notes(t, head) == [] and not (_state() / "allowed_signers").exists()
    _unmoved(t, main)
    r = _daemonized(t, "complete", "t1")
    assert r.returncode == 3 and git(t.repo, "rev-parse", "refs/heads/main") == main, r


def test_without_a_terminal_no_key_is_created(tmp_path: Path) -> None:
    t = _ready(tmp_path, STRICT.replace("[approval]\n", "[approval]\nallow_non_interactive = true\n"))
    main = git(t.repo, "rev-parse", "refs/heads/main")
    r = _daemonized(t, "approve", "t1", "--changes")
    assert r.returncode == 3 and "creates one only at a terminal, where you set its passphrase" in r.stderr, r
    assert not (_state() / "approval_ed25519").exists()
    _unmoved(t, main)


def test_an_unprotected_key_the_config_accepts_is_named_in_every_approval(tmp_path: Path) -> None:
    t = _ready(tmp_path, "[approval]\nallow_non_interactive = true\nunprotected_key = true\n")
    _plain_key()
    r = t.spark("--json", "approve", "t1", "--changes")
    assert r.returncode == 0, r
    assert r.json["data"]["unprotected_key"] and r.json["data"]["key_protection"] == "unprotected"
    assert "UNPROTECTED KEY" in r.json["summary"], r.json["summary"]
    rec = json.loads(t.task_json()["checkpoint"]["signed"])
    assert rec["unprotected_key"] is True and rec["key"] == "unprotected"  # signed: verify and audit read it
    [note] = _approval_notes(t, t.head())
    assert note["unprotected_key"] is True and note["key"] == "unprotected", note


# -- a pseudo-terminal that answers several prompts ---------------------------------------------------


def _converse(cwd: Path, args: list[str], script: list[tuple[bytes, bytes]]) -> tuple[int, str]:
    """Runs spark-git on a new pseudo-terminal (its controlling terminal: ssh-keygen asks there) and
    answers each prompt of `script` in order: (what appears, what is typed)."""
    master, slave = pty.openpty()
    env = dict(os.environ, SPARK_SESSION_ID="s1")
    proc = subprocess.Popen(spark_argv(*args), cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True, start_new_session=True,
                            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))  # its controlling terminal: ssh-keygen asks there
    os.close(slave)
    deadline, seen, at = time.monotonic() + BOUND_S, b"", 0
    try:
        for chunk in _chunks(master, deadline):
            seen += chunk
            if at < len(script) and re.search(script[at][0], seen[-2000:]):
                os.write(master, script[at][1])
                seen += b"\n<typed>\n"
                at += 1
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return proc.wait(timeout=BOUND_S), seen.decode(errors="replace")


def _chunks(master: int, deadline: float) -> Iterator[bytes]:
    while True:
        ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, "no output from the command on its terminal in time"
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            return
        if not chunk:
            return
        yield chunk


NEW_KEY = [(rb"Enter passphrase \(empty", PASSPHRASE), (rb"Enter same passphrase", PASSPHRASE)]
CONFIRM = (rb"Type the task name", b"t1\n")
SIGN = rb"Enter passphrase: "


def test_a_passphrase_key_is_created_on_a_terminal_and_approves_with_the_passphrase(tmp_path: Path) -> None:
    t = _ready(tmp_path)
    head = t.head()
    rc, out = _converse(t.repo, ["approve", "t1", "--changes"], [*NEW_KEY, CONFIRM, (SIGN, PASSPHRASE)])
    assert rc == 0, out
    key = _state() / "approval_ed25519"
    assert "protected by a passphrase" in out, out  # the approval screen names the key and how it is kept
    assert subprocess.run(["ssh-keygen", "-y", "-P", "", "-f", str(key)], capture_output=True).returncode != 0  # really protected
    cp = t.task_json()["checkpoint"]
    assert cp["via"] == "terminal" and json.loads(cp["signed"])["key"] == "passphrase"
    [note] = _approval_notes(t, head)
    assert note["key"] == "passphrase" and note["unprotected_key"] is False
    assert t.spark("--json", "complete", "t1").returncode == 0
    assert git(t.repo, "rev-parse", "refs/heads/main^2") == head


def test_without_the_passphrase_nothing_is_approved(tmp_path: Path) -> None:
    t = _ready(tmp_path)
    main, head = git(t.repo, "rev-parse", "refs/heads/main"), t.head()
    rc, out = _converse(t.repo, ["approve", "t1", "--changes"], [*NEW_KEY, CONFIRM, (SIGN, b"a guess\n")])
    assert rc == 3 and "could not sign the approval" in out, out
    assert (_state() / "approval_ed25519").is_file()  # the key was made; the approval was not
    assert _approval_notes(t, head) == []
    _unmoved(t, main)
    # the protected key from a process with no terminal (the daemonized attacker), told to approve non-interactively
    (t.repo / ".spark-git.toml").write_text((t.repo / ".spark-git.toml").read_text().replace("[approval]\n", "[approval]\nallow_non_interactive = true\n"))
    git(t.repo, "commit", "-qam", "approvals without a terminal")
    r = _daemonized(t, "approve", "t1", "--changes")
    assert r.returncode == 3 and "could not sign the approval" in r.stderr, r
    assert _approval_notes(t, head) == [] and t.task_json()["checkpoint"] is None


def test_an_empty_passphrase_keeps_no_key(tmp_path: Path) -> None:
    t = _ready(tmp_path)
    rc, out = _converse(t.repo, ["approve", "t1", "--changes"], [(rb"Enter passphrase \(empty", b"\n"), (rb"Enter same passphrase", b"\n")])
    assert rc == 3 and "got no passphrase" in out, out
    assert not (_state() / "approval_ed25519").exists() and t.task_json()["checkpoint"] is None


# -- ssh-agent with confirmation -----------------------------------------------------------------------


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[dict[str, object]]:
    """A real ssh-agent whose confirmations (`ssh-add -c`) are answered by an askpass program: it logs
    each question and answers with the exit code in `answer`."""
    d = tmp_path / "agent"
    d.mkdir()
    log, answer, askpass = d / "asked.log", d / "answer", d / "askpass"
    answer.write_text("0")
    askpass.write_text(f"#!/bin/sh\necho \"$1\" >> {log}\nexit $(cat {answer})\n")
    askpass.chmod(0o755)
    env = dict(os.environ, SSH_ASKPASS=str(askpass), SSH_ASKPASS_REQUIRE="force", DISPLAY=":0")
    out = subprocess.run(["ssh-agent", "-s", "-a", str(d / "sock")], env=env, capture_output=True, text=True, check=True).stdout
    pid = int(re.search(r"SSH_AGENT_PID=(\d+)", out).group(1))  # type: ignore[union-attr]
    try:
        yield {"sock": str(d / "sock"), "log": log, "answer": answer}
    finally:
        os.kill(pid, 15)


def _agent_key(tmp_path: Path, sock: str) -> Path:
    """A key held by ssh-agent with confirmation; only its public half stays on disk (user.signingkey)."""
    (tmp_path / "k").mkdir()
    key = tmp_path / "k" / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    subprocess.run(["ssh-add", "-q", "-c", str(key)], env=dict(os.environ, SSH_AUTH_SOCK=sock), check=True, capture_output=True)
    key.unlink()
    git(tmp_path, "config", "--global", "gpg.format", "ssh")
    git(tmp_path, "config", "--global", "user.signingkey", str(key) + ".pub")
    return key.with_name(key.name + ".pub")


def test_an_ssh_agent_key_with_confirmation_approves_when_the_human_confirms(tmp_path: Path, agent: dict) -> None:
    t = _ready(tmp_path, STRICT.replace("[approval]\n", "[approval]\nallow_non_interactive = true\n"))
    pub, head = _agent_key(tmp_path, agent["sock"]), t.head()
    r = t.spark("--json", "approve", "t1", "--changes", env={"SSH_AUTH_SOCK": agent["sock"]})
    assert r.returncode == 0, r
    assert r.json["data"]["signed_with"] == str(pub) and r.json["data"]["key_protection"] == "ssh-agent"
    assert "Allow use of key" in agent["log"].read_text()  # ssh-agent asked the human
    assert json.loads(t.task_json()["checkpoint"]["signed"])["key"] == "ssh-agent"
    assert t.spark("--json", "complete", "t1").returncode == 0
    assert git(t.repo, "rev-parse", "refs/heads/main^2") == head


def test_an_ssh_agent_key_signs_nothing_the_human_refuses(tmp_path: Path, agent: dict) -> None:
    t = _ready(tmp_path, STRICT.replace("[approval]\n", "[approval]\nallow_non_interactive = true\n"))
    _agent_key(tmp_path, agent["sock"])
    agent["answer"].write_text("1")  # the human says no
    main, head = git(t.repo, "rev-parse", "refs/heads/main"), t.head()
    r = _daemonized(t, "approve", "t1", "--changes", env={"SSH_AUTH_SOCK": agent["sock"]})
    assert r.returncode == 3 and "could not sign the approval" in r.stderr, r
    assert "Allow use of key" in agent["log"].read_text()
    assert _approval_notes(t, head) == []
    _unmoved(t, main)


def _sk_public() -> str:
    """An ed25519-sk public key as ssh-keygen writes it (the private half would live on a FIDO2 token)."""
    import base64
    import struct

    def field(b: bytes) -> bytes:
        return struct.pack(">I", len(b)) + b

    blob = field(b"sk-ssh-ed25519@openssh.com") + field(bytes(range(32))) + field(b"ssh:")
    return "sk-ssh-ed25519@openssh.com " + base64.b64encode(blob).decode()


def test_a_fido2_key_is_not_refused_for_want_of_a_passphrase(tmp_path: Path) -> None:
    """No token here: the -sk key is shown as one that needs a touch (not refused as unprotected), and
    without the token ssh-keygen cannot sign, so nothing is recorded."""
    t = _ready(tmp_path)
    git(tmp_path, "config", "--global", "gpg.format", "ssh")
    git(tmp_path, "config", "--global", "user.signingkey", "key::" + _sk_public())
    main, head = git(t.repo, "rev-parse", "refs/heads/main"), t.head()
    rc, out = _converse(t.repo, ["approve", "t1", "--changes"], [CONFIRM])
    assert rc == 3 and "a FIDO2 key: touch it" in out and "could not sign the approval" in out and "no passphrase" not in out, out
    assert _approval_notes(t, head) == []
    _unmoved(t, main)
