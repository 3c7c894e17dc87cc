"""The hook's shell reader against real bash: generated command lines run under bash with logging
shims in place of the commands that matter; every command that really ran must be one the reader
saw (same words, same directory), unless the reader refused the line. The reader may see more (both
branches of an `if`, a loop body that never runs): it judges what may run. Where the directory
depends on whether a step failed (`a || cd x && b`) it reads the command as run from a place it
cannot know, which the hook judges strictly."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from spark_git.guard import walk
from spark_git.guard.gitcmd import UNKNOWN_DIR

SHIMMED = ("git", "spark-git", "touch", "rm", "cp", "mkdir")
# One record per process (its own file: pipelines run side by side): name, directory, arguments.
SHIM = '#!/bin/bash\n{ printf \'%s\\0\' "${0##*/}" "$(pwd -P)" "$@"; } > "$SHIM_LOG/$$.rec"\n'

SIMPLE = [
    "git status", "git log --oneline -1", "git commit -m 'a # not a comment'", "git commit -m \"two words $V\"",
    "git commit -m $'it\\'s\\tdone'", "touch a#b", "touch 'x y'", "touch \"q\"uo'te'd", "rm -f *.txt", "cp {a,b}.txt sub",
    "mkdir -p sub/{one,two}", "spark-git status", "git -C sub status", "touch esc\\ aped", "git show HEAD~1",
    "'git' status", "\"git\" log", "git show >/dev/null HEAD", "git 2>/dev/null log -1", "touch <<EOF here\nbody\nEOF", "g\\it status", "$'git' diff", "touch ~/x", "git update-ref refs/heads/x HEAD",
]
WRAP = ["nice -n 5 {}", "env FOO=1 {}", "bash -c '{}'", "FOO=1 {}", "command {}", "nohup {} >/dev/null", "time {}"]
COMPOSE = [
    "{a}; {b}", "{a} && {b}", "{a} || {b}", "{a} | {b}", "{{ {a}; {b}; }}", "({a}; {b})", "{a}\n{b}",
    "if {a}; then {b}; else {a}; fi", "for x in p q; do {a}; done", "while false; do {a}; done",
    "f{d}() {{ {a}; }}; f{d}", "G=git; $G status; {a}", "{a} # note {b}", "{a} \\\n  --version", "cd sub && {a}",
    "echo $({a}) > /dev/null", "{a} & wait", "case x in x) {a};; *) {b};; esac", "! {a}", "{a} 2>&1 | {b}",
    "! {{ {a}; {b}; }}", "cd sub && {a} 2>&1 | {b}", "{a} || {b} > /dev/null | {a}",
]


def _line(rng: random.Random, depth: int = 0) -> str:
    def part() -> str:
        if depth < 2 and rng.random() < 0.3:
            return _line(rng, depth + 1)
        s = rng.choice(SIMPLE)
        return rng.choice(WRAP).format(s) if rng.random() < 0.25 and "'" not in s else s

    return rng.choice(COMPOSE).format(a=part(), b=part(), d=depth)  # a function per depth: none calls itself


@pytest.fixture
def bench(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    shims, log, work = tmp_path / "shims", tmp_path / "log", tmp_path / "w"
    for d in (shims, log, work / "sub"):
        d.mkdir(parents=True)
    for name in SHIMMED:
        (shims / name).write_text(SHIM)
        (shims / name).chmod(0o755)
    (work / "a.txt").write_text("a")
    (work / "b.txt").write_text("b")
    env = {"PATH": f"{shims}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "SHIM_LOG": str(log), "V": "vee", "LC_ALL": "C"}
    return shims, log, work, env


def _ran(line: str, log: Path, work: Path, env: dict[str, str]) -> list[tuple[str, str, tuple[str, ...]]]:
    for f in log.iterdir():
        f.unlink()
    subprocess.run(["bash", "--noprofile", "--norc", "-c", line], cwd=work, env=env, capture_output=True, timeout=30)
    out = []
    for f in log.iterdir():
        name, cwd, *args = f.read_bytes().decode().split("\0")[:-1]
        out.append((name, cwd, tuple(args)))
    return out


def test_every_command_bash_runs_is_one_the_reader_saw(bench: tuple[Path, Path, Path, dict[str, str]]) -> None:
    _, log, work, env = bench
    rng = random.Random(int(os.environ.get("SPARK_DIFF_SEED", "1101")))
    read = missed = ran_total = 0
    misses = []
    for _ in range(300):
        line = _line(rng)
        segs = walk.commands(line, work, dict(env))
        ran = _ran(line, log, work, env)
        ran_total += len(ran)
        if any(s.refuse for s in segs):
            continue  # refused: nothing of it runs as the agent's call
        read += 1
        seen = {(os.path.basename(s.words[0]), os.path.realpath(s.here), tuple(s.words[1:])) for s in segs if s.words}
        # run from a place the reader cannot know (judged so); a glob it could not expand there stands for any words
        anywhere = [(n, a) for n, d, a in seen if d.startswith(str(UNKNOWN_DIR))]
        for r in ran:
            if r not in seen and not any(n == r[0] and (a == r[2] or any(c in w for w in a for c in "*?[")) for n, a in anywhere):
                missed += 1
                misses.append(f"{line!r}: ran {r}, reader saw {sorted(seen)}")
    assert not misses, f"{missed} commands ran that the reader did not see:\n" + "\n".join(misses[:10])
    assert read >= 240 and ran_total >= 400, (read, ran_total)  # the comparison covered real runs, not refusals


@pytest.mark.parametrize("line", [
    "echo hi # note\ngit update-ref refs/heads/main HEAD",
    "echo a#b; git update-ref refs/heads/main HEAD",
    "f() { git update-ref refs/heads/main HEAD; }; f",
    "G=git; $G update-ref refs/heads/main HEAD",
    "true \\\n&& git update-ref refs/heads/main HEAD",
])
def test_the_comment_bypasses_are_seen_as_bash_runs_them(bench: tuple[Path, Path, Path, dict[str, str]], line: str) -> None:
    _, log, work, env = bench
    ran = _ran(line, log, work, env)
    seen = {(os.path.basename(s.words[0]), tuple(s.words[1:])) for s in walk.commands(line, work, dict(env)) if s.words}
    assert ("git", ("update-ref", "refs/heads/main", "HEAD")) in {(n, a) for n, _, a in ran}
    assert ("git", ("update-ref", "refs/heads/main", "HEAD")) in seen
