#!/usr/bin/env bash
# Refresh requirements.lock: one resolution of requirements.txt (and ctxlib's pyproject.toml),
# every package pinned, written by pip-tools' pip-compile. Run it after editing requirements.txt,
# then commit requirements.lock. tools/setup.sh, .ci/run and binder/ all install from the lock.
#
#   bash tools/lock.sh                          # add what is new; keep every pin that still fits
#   bash tools/lock.sh --upgrade                # move every package to the newest version allowed
#   bash tools/lock.sh --upgrade-package NAME   # move one package (and what it needs)
#
# Any other option goes to pip-compile (e.g. --find-links DIR where torch's CPU wheel lies).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
cd "$ROOT"

# The lock is resolved for one Python: the one Binder runs (binder/runtime.txt).
want="$(sed -n 's/^python-\([0-9.]*\).*/\1/p' binder/runtime.txt)"
have="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [ "$want" != "$have" ]; then
  echo "!! $PYTHON is Python $have; the lock is for Python $want (binder/runtime.txt): set PYTHON" >&2
  exit 1
fi

# The lock tool itself, pinned, in a throwaway venv (pip-tools 7.7 needs pip >= 26.2.2).
TOOLS="$(mktemp -d)"
trap 'rm -rf "$TOOLS"' EXIT
"$PYTHON" -m venv "$TOOLS/venv"
# pip warns about every local index folder (this machine's pip configuration) that lacks a
# package; those lines say nothing about the lock.
quiet() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
quiet "$TOOLS/venv/bin/python" -m pip install --quiet --disable-pip-version-check "pip==26.3" "pip-tools==7.7.0"

echo "== resolving requirements.txt into requirements.lock (pip-compile $("$TOOLS/venv/bin/pip-compile" --version | awk '{print $NF}'))"
# --allow-unsafe pins setuptools too (torch needs it at run time); --strip-extras keeps the
# file valid as a pip constraints file; no index or find-links lines, so the lock does not
# depend on where this machine found its wheels.
CUSTOM_COMPILE_COMMAND="bash tools/lock.sh" quiet "$TOOLS/venv/bin/pip-compile" \
  --quiet --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links \
  --output-file requirements.lock "$@" requirements.txt

# Two edits make the resolution a constraints file that installs anywhere:
# - ctxlib itself ("-e file:///this/checkout") is dropped: it is the working tree, not a
#   package to pin, and pip refuses editable constraints;
# - torch==2.13.0+cpu (the CPU wheel pip found) becomes torch==2.13.0, which that same wheel
#   satisfies here and the CPU wheel index satisfies on Binder.
"$PYTHON" - requirements.lock <<'EOF'
import re, sys
path = sys.argv[1]
lines = open(path, encoding="utf-8").read().splitlines()
out, skipping = [], False
for line in lines:
    if line.startswith("-e "):
        skipping = True
        continue
    if skipping and line.startswith("    #"):
        continue
    skipping = False
    out.append(re.sub(r"^torch==2\.13\.0\+cpu$", "torch==2.13.0", line))
open(path, "w", encoding="utf-8").write("\n".join(out) + "\n")
EOF

if ! "$PYTHON" tools/check_lock.py; then
  echo "!! the new lock is wrong (see above). If it pins nvidia-* packages, pip did not find torch's" >&2
  echo "!! CPU wheel: pass --find-links DIR (the folder holding it) to this script." >&2
  exit 1
fi
echo "== requirements.lock: $(grep -c '==' requirements.lock) packages pinned"
git --no-pager diff --stat -- requirements.lock || true
