# Sourced by scripts: creates .venv (once) and installs spark-git with its test extras into it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  "$PY" -m venv "$ROOT/.venv"
fi
stamp="$ROOT/.venv/.spark-installed"
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  "$ROOT/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$ROOT[test,lint]"
  touch "$stamp"
fi
export PATH="$ROOT/.venv/bin:$PATH"
