#!/usr/bin/env bash
# Runs spark-git's main job end to end on a throwaway repository, printing what happens, then removes it.
set -euo pipefail
# SPARK_DEMO_USE_PATH=1: run the spark-git found on PATH (CI: the installed wheel) instead of .venv's.
HERE="$(cd "$(dirname "$0")" && pwd)"
if [ "${SPARK_DEMO_USE_PATH:-}" != "1" ]; then source "$HERE/_venv.sh"; fi
command -v spark-git >/dev/null || { echo "demo: spark-git is not on PATH" >&2; exit 2; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/spark-demo.XXXXXX")"
# The throwaway repository goes at the end, also when a step fails or on Ctrl-C (SPARK_DEMO_KEEP=1 keeps it).
cleanup_demo() { cd /; if [ "${SPARK_DEMO_KEEP:-}" = "1" ]; then echo "demo repository kept: $WORK"; else rm -rf "$WORK"; fi; }
trap cleanup_demo EXIT
export HOME="$WORK/home"; mkdir -p "$HOME"
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME="Demo" GIT_AUTHOR_EMAIL="demo@example.invalid"
export GIT_COMMITTER_NAME="Demo" GIT_COMMITTER_EMAIL="demo@example.invalid"
unset SPARK_SESSION_ID GIT_DIR GIT_WORK_TREE CLAUDE_PROJECT_DIR || true
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

REPO="$WORK/app"
mkdir -p "$REPO" && cd "$REPO"
git init -q -b main
printf '# app\n' > README.md
printf 'def add(a, b):\n    return a + b\n' > calc.py
printf '__pycache__/\n' > .gitignore  # the gates import calc.py; their bytecode must not dirty the worktrees
git add -A && git commit -q -m "initial commit"
echo "demo repository: $REPO"

export SPARK_SESSION_ID=demo-session
say spark-git start add-docs --agents docs-updater,docs-reviewer --title "Add usage docs"
say spark-git status
echo "(--dry-run says what abandon would archive, remove and delete, and changes nothing)"
say spark-git abandon add-docs --why "demo: nothing was done" --dry-run
say spark-git abandon add-docs --why "demo: nothing was done"
say spark-git status

# -- gated merges: agents commit, merge through the build gate, human approval, complete ----------
# The demo's config: the light protocol (no state machine) and a build gate that runs the tests.
# Approval stays terminal-only (the default): the demo types the task name through a pseudo-terminal.
# A demo has no human to set a passphrase: its approval key has none, which the config says (and every approval shows).
cat > .spark-git.toml <<'TOML'
protocol = "light"
[gates]
build = "python3 -c 'import calc; assert calc.add(2, 3) == 5, calc.add(2, 3); print(\"tests ok\")'"
final = "python3 -c 'import calc; assert calc.add(2, 3) == 5; print(\"final ok\")'"
timeout_s = 60
[approval]
unprotected_key = true
TOML
git add .spark-git.toml && git commit -q -m "spark-git config: build gate, light protocol"
say spark-git start add-mul --agents coder,docs --title "Add multiplication"
T="$WORK/app.tasks/add-mul"
# The Claude Code hook (`spark-git hooks install` puts it in .claude/settings.json) is fed the event
# Claude Code would send when agent coder, launched in its own worktree, writes a file.
claude_write() {  # $1: the file coder writes
  printf '{"session_id": "coder-session", "cwd": "%s", "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"file_path": "%s", "content": "x"}}' \
    "$T/agents/coder/code" "$1" | CLAUDE_PROJECT_DIR="$T/agents/coder/code" spark-git hook pre-tool-use
}
echo "(agent coder writes into docs's worktree: the hook blocks it, exit 2, the reason goes back to the model)"
say claude_write "$T/agents/docs/code/README.md" || echo "exit code $?"
echo "(the same agent writing in its own worktree is allowed: exit 0)"
say claude_write "$T/agents/coder/code/calc.py"
say bash -c "cd $T/agents/docs/code && printf '# app\n\nadd(a, b) and mul(a, b).\n' > README.md && git commit -qam 'document mul' && git log --oneline -1"
say bash -c "cd $T/agents/coder/code && printf 'def add(a, b):\n    return a - b  # oops\n\ndef mul(a, b):\n    return a * b\n' > calc.py && git commit -qam 'add mul' && git log --oneline -1"
say spark-git merge add-mul --agent docs
echo "(the next merge is refused by the build gate: exit 1, the task branch does not move)"
say spark-git merge add-mul --agent coder || echo "exit code $?"
say bash -c "cat \$(ls -t $T/logs/*-build.log | head -1)"
say bash -c "cd $T/agents/coder/code && sed -i 's/return a - b  # oops/return a + b/' calc.py && git commit -qam 'fix add' && git log --oneline -2"
say spark-git merge add-mul --agent coder
say spark-git who add-mul
say spark-git log add-mul
echo "(the human approves at a terminal: approve shows the commits, diffstat, gates, reviewers and flags,"
echo " then asks for the task name; scripts/on_pty types it through a pseudo-terminal)"
say python3 "$HERE/on_pty" --cols 100 --wait "Type the task name" --type add-mul -- spark-git approve add-mul --changes
say spark-git complete add-mul
say git log --oneline -5 main
say spark-git status add-mul
echo "(cleanup runs from inside the task worktree it removes, and says where to go)"
say bash -c "cd $T/code && spark-git cleanup add-mul"
say git worktree list
say git branch
say ls "$T"
say spark-git doctor
say spark-git audit add-mul
echo
echo "(the same repository under the default protocol = \"full\": every state change is checked)"
sed -i 's/^protocol = "light"/protocol = "full"/' .spark-git.toml && git commit -qam "spark-git config: full protocol"
say spark-git start fix-typo --title "Fix a typo in the README"
say spark-git advance fix-typo || echo "exit code $?"
say spark-git classify fix-typo --files README.md
say spark-git advance fix-typo
say spark-git status fix-typo
echo
echo "demo finished (its repository $WORK is removed now; SPARK_DEMO_KEEP=1 keeps it)"
