#!/usr/bin/env bash
# Text captures of `spark-git status` for docs/screens/: 5 live tasks x 4 agents (and one ended task),
# at 80 and 160 columns (COLUMNS, as a terminal of that width would set it), the one-line view and the
# full view with the conflict radar. Regenerate with: scripts/screens.sh [OUT_DIR]  (default docs/screens)
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
OUT="$(cd "${1:-$ROOT/docs/screens}" && pwd)"
TMP="$(mktemp -d /tmp/spark-screens.XXXXXX)"
trap 'rm -rf "$TMP"' EXIT
export GIT_CONFIG_NOSYSTEM=1 HOME="$TMP" GIT_AUTHOR_NAME=dev GIT_AUTHOR_EMAIL=dev@example.com GIT_COMMITTER_NAME=dev GIT_COMMITTER_EMAIL=dev@example.com
SG=(spark-git)
R="$TMP/shop"
git init -q -b main "$R"
cd "$R"
mkdir -p src/api src/billing tests
for f in src/api/routes.py src/api/auth.py src/billing/invoice.py tests/test_api.py; do printf 'line 1\nline 2\nline 3\n' > "$f"; done
printf 'protocol = "light"\n[approval]\nallow_non_interactive = true\nunprotected_key = true\n' > .spark-git.toml
git add -A && git commit -qm "initial commit"

AG=architecture-reviewer,api-implementation-updater,test-writer,security-reviewer
export SPARK_SESSION_ID=7f3c9a2e-coordinator-alice
"${SG[@]}" start add-oauth-login-with-refresh-tokens --agents "$AG" >/dev/null
"${SG[@]}" start fix-invoice-rounding --agents "$AG" >/dev/null
SPARK_SESSION_ID=b41d07c6-coordinator-bob "${SG[@]}" start rename-config-keys-everywhere --agents "$AG" >/dev/null
SPARK_SESSION_ID=b41d07c6-coordinator-bob "${SG[@]}" start t4 --agents "$AG" >/dev/null
"${SG[@]}" start upgrade-http-client --agents "$AG" >/dev/null
"${SG[@]}" start spike-graphql --agents "" >/dev/null
"${SG[@]}" abandon spike-graphql --why "not now" >/dev/null

T="$TMP/shop.tasks"
edit() {  # edit TASK AGENT FILE TEXT: one commit in that agent's worktree
  local wt="$T/$1/agents/$2/code"
  printf 'line 1\n%s\nline 3\n' "$4" > "$wt/$3"
  git -C "$wt" commit -qam "[$2] $4"
}
# add-oauth: two agents change the same line of routes.py -> the radar names the pair and the file
edit add-oauth-login-with-refresh-tokens api-implementation-updater src/api/routes.py "oauth routes"
edit add-oauth-login-with-refresh-tokens test-writer src/api/routes.py "route used by the tests"
edit add-oauth-login-with-refresh-tokens test-writer tests/test_api.py "oauth tests"
"${SG[@]}" report add-oauth-login-with-refresh-tokens --agent architecture-reviewer --status WORKING >/dev/null
# fix-invoice-rounding: one agent merged, one blocked, one with uncommitted work
edit fix-invoice-rounding api-implementation-updater src/billing/invoice.py "round half even"
"${SG[@]}" merge fix-invoice-rounding --agent api-implementation-updater >/dev/null 2>&1
"${SG[@]}" report fix-invoice-rounding --agent security-reviewer --status BLOCKED --feedback "needs the currency table" >/dev/null
echo "wip" > "$T/fix-invoice-rounding/agents/test-writer/code/tests/test_rounding.py"
# rename-config-keys: the task head moved under an agent that changed the same file
edit rename-config-keys-everywhere api-implementation-updater src/api/auth.py "renamed keys"
printf 'line 1\ncoordinator edit\nline 3\n' > "$T/rename-config-keys-everywhere/code/src/api/auth.py"
git -C "$T/rename-config-keys-everywhere/code" commit -qam "coordinator edit"
for a in architecture-reviewer api-implementation-updater test-writer security-reviewer; do
  SPARK_SESSION_ID=b41d07c6-coordinator-bob "${SG[@]}" report rename-config-keys-everywhere --agent "$a" --status WORKING >/dev/null
done

# upgrade-http-client and t4: approved and in the landing queue (complete --no-wait enqueues only)
for t in upgrade-http-client t4; do
  sess=7f3c9a2e-coordinator-alice; [ "$t" = t4 ] && sess=b41d07c6-coordinator-bob
  printf 'line 1\n%s\nline 3\n' "$t" > "$T/$t/code/src/api/auth.py"
  git -C "$T/$t/code" commit -qam "$t work"
  SPARK_SESSION_ID=$sess "${SG[@]}" approve "$t" --changes >/dev/null
  SPARK_SESSION_ID=$sess "${SG[@]}" complete "$t" --no-wait >/dev/null
done

capture() {  # capture COLUMNS FILE ARGS...: the command line and what it printed
  local cols="$1" file="$2"
  shift 2
  { echo "\$ COLUMNS=$cols spark-git $*"; COLUMNS="$cols" "${SG[@]}" "$@" | sed "s|$TMP|/home/dev|g"; echo; } >> "$file"
}
: > "$OUT/status-80.txt"
: > "$OUT/status-160.txt"
capture 80 "$OUT/status-80.txt" status
capture 80 "$OUT/status-80.txt" status add-oauth-login-with-refresh-tokens
capture 80 "$OUT/status-80.txt" status --all
capture 160 "$OUT/status-160.txt" status
capture 160 "$OUT/status-160.txt" status --agents
echo "wrote $OUT/status-80.txt $OUT/status-160.txt"
