#!/usr/bin/env bash
# The 32-bit ARM rung of the verification ladder (docs/design.md, Verification ladder): pynq-rl's built wheel
# installed in a Debian bookworm armhf userland (mmdebstrap + qemu-user-static), with pynq 3.1 as on the PYNQ-Z2's
# v3.1 image, and a board-smoke run.
#
# Usage (as root): tools/armhf_check.sh [userland|checks]
#                  userland: phases 1-2 only (.ci/run builds it in the background while the test venv installs, when
#                  one core is idle); checks: phases 3-8 in the userland built before; default both
#
# Phases (each prints its time):
#   1. host tools      apt-get install mmdebstrap qemu-user-static binfmt-support; binfmt_misc mounted, qemu-arm on
#   2. userland        mmdebstrap --arch=armhf --variant=essential with Debian's compiled Python packages in the same
#                      apt pass (numpy, cffi, pydantic, IPython, ...: a PYNQ image brings its own); cached, rebuilt
#                      when the package list changes. Debian's py3compile is diverted while the packages install:
#                      byte-compiling every module of every package under qemu took about 105 of 362 s, and Python
#                      compiles what it imports anyway (the interpreter's own library is still compiled)
#   3. wheelhouse      on the host: the wheel (tools/build_wheel.sh) and the pure-Python requirements (pip download,
#                      pinned); the userland never touches the network again
#   4. venv            /opt/pynq-rl in the userland, --system-site-packages --without-pip, everything installed by
#                      Debian's pip with --no-deps --no-index --no-compile from the wheelhouse (pynq's sdist built with
#                      PYNQ_REMOTE=1: no board C libraries)
#   5. imports         tools/check_install.py: base requirements met, every module imported (or skipped: needs
#                      torch/Ray/gRPC/numba, extras a PYNQ-Z2 cannot install)
#   6. info, doctor    pynq-rl info --backend emu, pynq-rl doctor --backend emu and --backend rtl
#   7. board_smoke     pytest -m board_smoke on a copy of tests/ (the three cores' driver tests on emu, 32-bit checks)
#   8. ppo             pynq-rl train ppo --nn numpy, 5k steps on the emulated GAE core; its summary is checked
#
# Environment: ARMHF_CACHE (default <repo>/.cache/armhf, gitignored), DEBIAN_MIRROR (default deb.debian.org),
#              PYTHON (host Python for the wheel and pip download, default python3).
# Timing under qemu says nothing about the board; correctness does.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
stage=${1:-all}
case $stage in
    userland|checks|all) ;;
    *) echo "error: unknown stage '$stage' (expected userland, checks or nothing for both)" >&2; exit 2 ;;
esac
if [ "$(id -u)" != 0 ]; then
    echo "error: tools/armhf_check.sh must run as root (it installs Debian packages, builds a userland with" \
         "mmdebstrap and mounts /proc, /sys and /dev into it); try: sudo tools/armhf_check.sh" >&2
    exit 2
fi
cache=${ARMHF_CACHE:-$repo/.cache/armhf}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
python=${PYTHON:-python3}
suite=bookworm
root=$cache/rootfs
venv=/opt/pynq-rl
export DEBIAN_FRONTEND=noninteractive

# Debian's packages inside the userland: the interpreter and what PYNQ images ship compiled (numpy, cffi) or
# preinstalled (IPython, jsonschema, pydantic 1.x for pynqmetadata 0.1.9, python-magic), plus pytest.
DEB_PACKAGES=(python3 python3-venv python3-pip python3-setuptools python3-wheel python3-distutils python3-numpy
              python3-cffi python3-pycparser python3-ply python3-jsonschema python3-pydantic python3-magic
              python3-ipython python3-pytest python3-packaging ca-certificates)
# Pure-Python wheels and sdists, pinned: pynq 3.1 as on the Z2's v3.1 image with pynqmetadata 0.1.9 (the release for
# pydantic 1.x, which Debian has; pip on x86 takes 0.2.0 + pydantic 2, checked by tools/pynq_compat_check.sh), and
# pynq-rl's base requirements with theirs. Not installed: pynq's grpcio/grpcio-tools (compiled; pynq imports them
# only for remote devices, PYNQ_REMOTE_DEVICES) and torch, Ray, numba (extras: no armv7l wheels).
PIP_PACKAGES=(pynq==3.1.2 pynqmetadata==0.1.9 pynqutils==0.1.3 nest_asyncio==1.6.0 myhdl==0.11.52 gymnasium==1.4.0
              cloudpickle==3.1.2 farama-notifications==0.0.6 typing_extensions==4.16.0 tqdm==4.70.1)
USERLAND_STAMP="$suite armhf essential, py3compile diverted: ${DEB_PACKAGES[*]}"
SMOKE_TESTS=(tests/gae/test_driver.py tests/replay/test_driver.py tests/parsa/test_driver.py tests/test_32bit.py)

t0=$SECONDS phase_start=$SECONDS phase_name=""
declare -a TIMINGS=()
phase() {  # phase NAME: close the running phase (record its time), announce NAME
    if [ -n "$phase_name" ]; then
        TIMINGS+=("$(printf '%-14s %4d s' "$phase_name" $((SECONDS - phase_start)))")
        echo "[armhf] $phase_name took $((SECONDS - phase_start)) s"
    fi
    phase_name=$1 phase_start=$SECONDS
    [ -z "$1" ] || echo "[armhf] == $1"
}

MOUNTS=(proc sys dev)
unmount_all() {
    local m
    for m in "${MOUNTS[@]}"; do
        if mountpoint -q "$root/$m" 2>/dev/null; then
            umount -R "$root/$m" 2>/dev/null || umount -lR "$root/$m" || true
        fi
    done
}
trap unmount_all EXIT
trap 'exit 130' INT TERM

mount_all() {
    mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
    mountpoint -q "$root/sys" || mount -t sysfs sysfs "$root/sys"
    mountpoint -q "$root/dev" || { mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"; }
}

in_root() {  # in_root CMD...: run CMD in the userland with a clean environment and the venv first on PATH
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH="$venv/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        DEBIAN_FRONTEND=noninteractive "$@"
}

# Debian's byte-compiler, diverted to a no-op while the userland's packages install (header, phase 2), then restored
DIVERT_PY3COMPILE='chroot "$1" dpkg-divert --quiet --local --rename --add /usr/bin/py3compile &&
    printf "#!/bin/sh\nexit 0\n" >"$1/usr/bin/py3compile" && chmod 755 "$1/usr/bin/py3compile"'
RESTORE_PY3COMPILE='rm "$1/usr/bin/py3compile" &&
    chroot "$1" dpkg-divert --quiet --local --rename --remove /usr/bin/py3compile'

finish() {  # finish WHAT: close the last phase, print WHAT with the total time and every phase's time
    phase ""
    echo "[armhf] $1 in $((SECONDS - t0)) s"
    printf '[armhf]   %s\n' "${TIMINGS[@]}"
}

userland_is_current() { [ "$(cat "$root/.pynq-rl-userland" 2>/dev/null)" = "$USERLAND_STAMP" ]; }

# --- 1. host tools (every stage: the checks run armhf binaries through binfmt_misc too) ------------------------------
phase "host tools"
if ! command -v mmdebstrap >/dev/null || ! [ -e /usr/bin/qemu-arm-static ] || ! command -v update-binfmts >/dev/null
then
    apt-get update -qq && apt-get install -y -qq mmdebstrap qemu-user-static binfmt-support >/dev/null
fi
mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
[ -e /proc/sys/fs/binfmt_misc/qemu-arm ] || update-binfmts --import qemu-arm >/dev/null 2>&1 || true
update-binfmts --enable qemu-arm >/dev/null 2>&1 || true
if ! grep -qx enabled /proc/sys/fs/binfmt_misc/qemu-arm 2>/dev/null; then
    echo "error: no binfmt_misc handler for 32-bit ARM binaries (/proc/sys/fs/binfmt_misc/qemu-arm); qemu-user-static" \
         "and binfmt-support are installed, but the kernel refused the registration" >&2
    exit 1
fi

# --- 2. userland ----------------------------------------------------------------------------------------------------
if [ "$stage" != checks ]; then
    phase "userland"
    if ! userland_is_current; then
        unmount_all  # never delete through a live bind mount of /dev
        rm -rf --one-file-system "$root"
        mkdir -p "$cache"
        # one apt pass on the host resolves everything (virtual packages such as python3-ply-lex-3.10 included);
        # dpkg runs in the userland under qemu, without fsync (force-unsafe-io: a throwaway tree)
        mmdebstrap --arch=armhf --variant=essential --dpkgopt=force-unsafe-io --include="${DEB_PACKAGES[*]}" \
            --essential-hook="$DIVERT_PY3COMPILE" --customize-hook="$RESTORE_PY3COMPILE" \
            "$suite" "$root" "$mirror" >"$cache/mmdebstrap.log" 2>&1 || {
            tail -20 "$cache/mmdebstrap.log" >&2; echo "error: mmdebstrap failed (log: $cache/mmdebstrap.log)" >&2
            exit 1; }
        echo "$USERLAND_STAMP" >"$root/.pynq-rl-userland"
    fi
fi
if [ "$stage" = userland ]; then
    finish "userland ready ($root)"
    exit 0
fi
if ! userland_is_current; then
    echo "error: no userland for this package list at $root (run tools/armhf_check.sh userland first)" >&2
    exit 1
fi
mount_all
arch=$(in_root uname -m)
intp=$(in_root python3 -c "import numpy; print(numpy.dtype(numpy.intp).itemsize * 8)")
echo "[armhf] userland: $arch, Python $(in_root python3 -c 'import sys; print(sys.version.split()[0])'), numpy intp $intp bits"
if [ "$arch" != armv7l ] || [ "$intp" != 32 ]; then
    echo "error: expected an armv7l userland with a 32-bit np.intp, got $arch with $intp bits" >&2
    exit 1
fi

# --- 3. wheelhouse (host side: the userland stays offline) ----------------------------------------------------------
phase "wheelhouse"
wheelhouse=$root/opt/wheelhouse
rm -rf "$wheelhouse" && mkdir -p "$wheelhouse"
"$repo/tools/build_wheel.sh" "$wheelhouse" "$python" >/dev/null
if ! "$python" -m pip --version >/dev/null 2>&1; then
    "$python" -m venv "$cache/host-venv"
    python=$cache/host-venv/bin/python
fi
"$python" -m pip download -q --no-deps --dest "$wheelhouse" "${PIP_PACKAGES[@]}" 2>&1 | grep -v "^WARNING: Location" || true
for package in "${PIP_PACKAGES[@]}"; do
    name=${package%%==*}
    ls "$wheelhouse" | grep -qi "^${name//[-_]/[-_]}-" || { echo "error: pip download did not fetch $package" >&2; exit 1; }
done
ls "$wheelhouse" | sed 's/^/    /'

# --- 4. venv --------------------------------------------------------------------------------------------------------
phase "venv"
in_root rm -rf "$venv"
# --without-pip and --no-compile: the venv's python runs Debian's pip (seen through the system site-packages, it
# installs into the venv), and nothing is byte-compiled ahead under qemu (Python compiles what it imports): without
# ensurepip's copy of pip and the compilation of every installed module this phase took 62 s instead of 103 s (idle)
in_root python3 -m venv --system-site-packages --without-pip "$venv"
# PYNQ_REMOTE=1: pynq's setup.py skips the board's C libraries (audio, IIC, video), which drivers here never use
in_root env PYNQ_REMOTE=1 sh -c \
    "python -m pip install -q --no-compile --no-index --no-deps --no-build-isolation /opt/wheelhouse/*" \
    >"$cache/pip.log" 2>&1 || {
    tail -30 "$cache/pip.log" >&2; echo "error: pip install in the userland failed (log: $cache/pip.log)" >&2; exit 1; }

# --- 5. imports -----------------------------------------------------------------------------------------------------
phase "imports"
cp "$repo/tools/check_install.py" "$root/tmp/check_install.py"
in_root sh -c "cd /tmp && python check_install.py"

# --- 6. info, doctor ------------------------------------------------------------------------------------------------
phase "info, doctor"
in_root sh -c "cd /tmp && pynq-rl info --backend emu" >"$cache/info.json"
head -12 "$cache/info.json"  # (a pipe into head could SIGPIPE the CLI under pipefail)
in_root sh -c "cd /tmp && pynq-rl doctor --backend emu"
in_root sh -c "cd /tmp && pynq-rl doctor --backend rtl"  # the MyHDL cores (small builds) on 32 bits: about a minute

# --- 7. board_smoke -------------------------------------------------------------------------------------------------
phase "board_smoke"
rm -rf "$root/tmp/suite" && mkdir -p "$root/tmp/suite"
cp -r "$repo/tests" "$repo/pytest.ini" "$root/tmp/suite/"
find "$root/tmp/suite" -name __pycache__ -prune -exec rm -rf {} +
in_root sh -c "cd /tmp/suite && python -m pytest -q -p no:cacheprovider -o addopts=-ra -m board_smoke ${SMOKE_TESTS[*]}"

# --- 8. ppo ---------------------------------------------------------------------------------------------------------
phase "ppo"
rm -rf "$root/tmp/runs"
in_root sh -c "cd /tmp && pynq-rl train ppo --env CartPole-v1 --backend emu --nn numpy --steps 5000 --seed 0 \
    --out /tmp/runs" >"$cache/ppo.log" 2>&1 || {
    tail -30 "$cache/ppo.log" >&2; echo "error: numpy PPO failed in the armhf userland (log: $cache/ppo.log)" >&2; exit 1; }
summary=$(ls "$root"/tmp/runs/*/summary.json 2>/dev/null | head -1)
in_root python3 -c "
import json, math, sys
s = json.load(open('${summary#"$root"}'))
ok = s.get('nn') == 'numpy' and s.get('global_step', 0) > 0 and math.isfinite(s.get('mean_return_last20', math.nan))
print(f\"[armhf] ppo: {s.get('global_step')} steps, nn={s.get('nn')}, mean return (last 20) {s.get('mean_return_last20')}\")
sys.exit(0 if ok else 1)" || { echo "error: the PPO run's summary is incomplete: $summary" >&2; exit 1; }

finish PASS
