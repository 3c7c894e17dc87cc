#!/usr/bin/env bash
# Runs the whole test suite, installing what it needs into .venv. Extra arguments go to pytest.
#   SPARK_TEST_WORKERS=0        one process (e.g. for pdb); default: one pytest-xdist worker per CPU
#   SPARK_TEST_SUBPROCESS=1     every CLI call a real process (checks the in-process runner, fixtures/repo.py)
#   SPARK_REGEN_GOLDEN=1        rewrite tests/golden/ from the current output (then review the diff)
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$ROOT"
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
