#!/usr/bin/env bash
# Runs the whole test suite, installing what it needs into .venv. Extra arguments go to pytest.
set -euo pipefail
source "$(dirname "$0")/_venv.sh"
cd "$ROOT"
set +e
# One worker per CPU (SPARK_TEST_WORKERS=0 runs in this process, e.g. for pdb).
python -m pytest -n "${SPARK_TEST_WORKERS:-auto}" "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests; that is a failure here" >&2
  exit 1
fi
exit "$rc"
