#!/usr/bin/env bash
# Runs spark-git's main job end to end on a throwaway repository, printing what happens.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/spark-demo.XXXXXX")"
export HOME="$WORK/home"; mkdir -p "$HOME"
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME="Demo" GIT_AUTHOR_EMAIL="demo@example.invalid"
export GIT_COMMITTER_NAME="Demo" GIT_COMMITTER_EMAIL="demo@example.invalid"
unset SPARK_SESSION_ID GIT_DIR GIT_WORK_TREE || true
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

REPO="$WORK/app"
mkdir -p "$REPO" && cd "$REPO"
git init -q -b main
printf '# app\n' > README.md
printf 'def add(a, b):\n    return a + b\n' > calc.py
git add -A && git commit -q -m "initial commit"
echo "demo repository: $REPO"

export SPARK_SESSION_ID=demo-session
say spark-git start add-docs --agents docs-updater,docs-reviewer --title "Add usage docs"
say spark-git status
say spark-git abandon add-docs --why "demo: nothing was done"
say spark-git status
echo
echo "demo finished in $WORK"
