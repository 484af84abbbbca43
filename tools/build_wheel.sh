#!/usr/bin/env bash
# Build pynq-rl's wheel from a snapshot of the working tree and print the wheel's path.
#
# Usage: tools/build_wheel.sh OUTDIR [PYTHON]
#
# The snapshot (every file but caches, venvs and build output) is built in a temporary directory, so nothing is
# written into the source tree (several people build from it at once) and the wheel is what `python -m build
# --wheel` makes of the checkout as it stands, uncommitted edits included. PYTHON (default: python3) needs the
# `build` module or network access to PyPI for a throwaway venv that gets it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
outdir=${1:?usage: tools/build_wheel.sh OUTDIR [PYTHON]}
python=${2:-python3}
case $python in */*) python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")" ;; esac
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/pynq-rl-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -C "$repo" -cf - --exclude='./.git' --exclude='./.venv*' --exclude='./.cache' --exclude='./build' \
    --exclude='./dist' --exclude='./docs/_build' --exclude='*.egg-info' --exclude='__pycache__' --exclude='./runs' \
    --exclude='.pytest_cache' --exclude='.hypothesis' . | tar -C "$work" -xf -
if ! "$python" -I -c "import build" 2>/dev/null; then  # -I: a build/ directory here must not count
    "$python" -m venv "$work/.build-venv"
    "$work/.build-venv/bin/pip" install -q build
    python="$work/.build-venv/bin/python"
fi
rm -f "$outdir"/pynq_rl-*.whl
(cd "$work" && "$python" -I -m build --wheel --outdir "$outdir" >"$work/build.log" 2>&1) || {
    cat "$work/build.log" >&2; echo "error: python -m build --wheel failed (log above)" >&2; exit 1; }
ls "$outdir"/pynq_rl-*.whl
