#!/usr/bin/env bash
# Runs the whole test suite, installing what it needs into .venv. Extra arguments go to pytest.
#   SPARK_TEST_WORKERS=0        one process (e.g. for pdb); default: one pytest-xdist worker per CPU
#   SPARK_TEST_SUBPROCESS=1     every CLI call a real process (checks the in-process runner, fixtures/repo.py)
#   SPARK_REGEN_GOLDEN=1        rewrite tests/golden/ from the current output (then review the diff)
#   TMPDIR=DIR                  where the tests' repositories go (default: /dev/shm when it is a tmpfs)
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$ROOT"
# The suite writes thousands of small repositories and fsyncs every state file: on tmpfs that is memory
# work, not disk work (3:53 instead of 4:25 on 2 cores). An explicit TMPDIR wins.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
  export TMPDIR=/dev/shm
fi
set +e
# worksteal: an idle worker takes queued tests from a busy one, so a few long tests do not make a tail.
python -m pytest -n "${SPARK_TEST_WORKERS:-auto}" --dist worksteal "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests; that is a failure here" >&2
  exit 1
fi
exit "$rc"
