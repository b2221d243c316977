#!/usr/bin/env bash
# Set up (or update) the project's virtual environment; sourced by book.sh and test.sh.
# CTXBOOK_VENV chooses where it lives (default: .venv in the repository).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${CTXBOOK_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
# book.sh and test.sh both source this; install once per run.
if [ "${CTXBOOK_READY:-}" = "$VENV" ]; then return 0; fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating virtual environment $VENV"
  "$PYTHON" -m venv "$VENV"
fi
# requirements.txt says what the book needs; requirements.lock pins every package of one
# resolution of it (tools/lock.sh). Refuse to install if the two disagree, rather than let pip
# pick today's version of an unpinned package.
"$VENV/bin/python" "$ROOT/tools/check_lock.py"
echo "== installing requirements.txt at the versions of requirements.lock into $VENV"
(cd "$ROOT" && "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c requirements.lock pip \
  && "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c requirements.lock -r requirements.txt \
  && "$VENV/bin/python" -m pip check)
export PATH="$VENV/bin:$PATH"
# Nothing may reach a model hub at run time; make any accidental attempt fail loudly.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export CTXBOOK_READY="$VENV"
