#!/usr/bin/env bash
# The RLlib rung: RLlib's PPO with the GAE core as its advantage step, in a venv of its own.
#
# Usage: tools/rllib_check.sh [venv|tests]      venv: build the venv only; tests: run the tests in the venv built
#                                              before; default both (.ci/run builds the venv in the background
#                                              beside the report rung, where pip's downloads cost little, and runs
#                                              the tests in front once that rung is done: Ray's start-up is the
#                                              kind of timing a busy machine upsets)
#
# RLlib 2.60.0 pins gymnasium 1.2.2 while the project's other extras resolve to a newer one, so RLlib cannot share
# the test venv. This script gives it what a user gets from `pip install "pynq-rl[rllib]"`: a fresh venv
# (.cache/rllib/venv, gitignored) with the local torch wheel first (torch==2.13.0, so that nothing pulls another),
# then pynq-rl's *built wheel* with the rllib extra, then pytest. tests/agents/test_rllib.py runs from a copy of
# tests/ outside the repository, so the installed package is the one under test: the connector against RLlib's own
# value targets (raw and q8), a PPO iteration with the core in RLlib's learner pipeline, and a CartPole solve.
#
# Environment: RLLIB_CHECK_DIR (default <repo>/.cache/rllib), PYTHON (default python3).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${RLLIB_CHECK_DIR:-$repo/.cache/rllib}
python=${PYTHON:-python3}
venv=$cache/venv
stage=${1:-all}
case $stage in
    venv|tests|all) ;;
    *) echo "error: unknown stage '$stage' (expected venv, tests or nothing for both)" >&2; exit 2 ;;
esac

phase_start=$SECONDS
phase() {  # phase NAME: print the time the previous phase took, then announce NAME
    [ -z "${phase_name:-}" ] || echo "[rllib] $phase_name took $((SECONDS - phase_start)) s"
    phase_name=$1 phase_start=$SECONDS
    echo "[rllib] == $1"
}

build_venv() {
    phase "build the wheel"
    local wheel
    wheel=$("$repo/tools/build_wheel.sh" "$cache/dist" "$python")

    phase "venv: torch, then the wheel with the rllib extra"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    # --no-compile: pip would byte-compile every module of torch and Ray ahead, CPU taken from the report rung beside
    # it; the tests' imports compile the modules they use
    "$venv/bin/pip" install -q --no-compile "torch==2.13.0" >"$cache/pip.log" 2>&1 \
        && "$venv/bin/pip" install -q --no-compile "${wheel}[rllib]" pytest >>"$cache/pip.log" 2>&1 || {
        tail -20 "$cache/pip.log" >&2; echo "error: pynq-rl[rllib] does not install (log: $cache/pip.log)" >&2; exit 1; }
    "$venv/bin/python" -c "import ray, gymnasium, torch; print('[rllib] ray', ray.__version__, '| gymnasium',
        gymnasium.__version__, '| torch', torch.__version__)"
}

run_tests() {
    [ -x "$venv/bin/python" ] || { echo "error: no venv at $venv (run tools/rllib_check.sh venv first)" >&2; exit 1; }
    phase "copy tests/ out of the source tree"
    rm -rf "$cache/suite" && mkdir -p "$cache/suite"
    cp -r "$repo/tests" "$repo/pytest.ini" "$cache/suite/"
    find "$cache/suite" -name __pycache__ -prune -exec rm -rf {} +

    phase "tests/agents/test_rllib.py (slow runs included)"
    # -rs: a skip here means RLlib did not import, which is this rung's failure, so the run must not count as passed
    (cd "$cache/suite" && "$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts=-rs tests/agents/test_rllib.py \
        | tee "$cache/pytest.log")
    if grep -qE "[0-9]+ skipped" "$cache/pytest.log"; then
        echo "error: RLlib tests skipped in the rllib venv (see above)" >&2
        exit 1
    fi
}

mkdir -p "$cache"
case $stage in
    venv) build_venv ;;
    tests) run_tests ;;
    all) build_venv; run_tests ;;
esac
phase "done"
