"""Distribution ``pynq-rl``: one import namespace, three source trees.

The design card lays the repository out by layer (``overlay/`` for the hardware side, ``host/`` for the
runtime on the ARM cores), while users import everything from ``pynq_rl``. ``package_dir`` maps the two
trees under the one namespace: ``overlay/`` becomes ``pynq_rl.overlay`` and ``host/`` becomes ``pynq_rl.host``.
"""
from setuptools import setup

PACKAGES = {
    "pynq_rl": "pynq_rl",
    "pynq_rl.overlay": "overlay",
    "pynq_rl.overlay.models": "overlay/models",
    "pynq_rl.overlay.build": "overlay/build",
    "pynq_rl.overlay.bitstreams": "overlay/bitstreams",
    "pynq_rl.overlay.hdl": "overlay/hdl",
    "pynq_rl.overlay.hdl.common": "overlay/hdl/common",
    "pynq_rl.overlay.hdl.gae": "overlay/hdl/gae",
    "pynq_rl.host": "host",
    "pynq_rl.host.drivers": "host/drivers",
    "pynq_rl.host.backends": "host/backends",
    "pynq_rl.host.agents": "host/agents",
    "pynq_rl.host.agents.distributed": "host/agents/distributed",
    "pynq_rl.notebooks": "notebooks",
}

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
    package_data={"pynq_rl.overlay.bitstreams": ["*.md", "*/*.bit", "*/*.hwh", "*/*.link"],
                  "pynq_rl.overlay.build": ["tcl/*.tcl", "Makefile"],
                  "pynq_rl.notebooks": ["*.ipynb"],
                  "pynq_rl.host.agents.distributed": ["*.proto"]},
    include_package_data=True,
    install_requires=[
        "pynq>=3.0.1",
        "pycparser<3",
        "myhdl>=0.11",
        "numpy>=1.22,<2",
        "gymnasium>=0.29",
        "torch==2.13.0",
        "tqdm",
    ],
    extras_require={
        "fast": ["numba>=0.58"],
        "test": [
            "pytest>=7",
            "hypothesis>=6",
            "nbmake>=1.4",
            "ipykernel",
            "matplotlib",
            "numba>=0.58",
            "scipy>=1.10",
            "cocotb>=2.0",
            "cocotbext-axi>=0.1.24",
            # distributed Ape-X (same pins as the "distributed" extra)
            "ray==2.60.0",
            "grpcio==1.64.0",
            "protobuf==5.29.6",
            "redis==8.1.0",
        ],
        # distributed Ape-X: Ray for actors/learner, gRPC for the replay server (grpcio + protobuf suffice on a board:
        # the generated stubs are committed), the redis client for the baseline, grpcio-tools to regenerate stubs
        "distributed": ["ray==2.60.0", "grpcio==1.64.0", "grpcio-tools==1.64.0", "protobuf==5.29.6", "redis==8.1.0",
                        "torch==2.13.0"],
        "bench": ["torchrl==0.14.1", "torch==2.13.0", "cpprb==11.0.0", "numba>=0.58"],
    },
    entry_points={
        "console_scripts": ["pynq-rl = pynq_rl.cli:main"],
        "pynq.overlays": ["pynq_rl = pynq_rl.overlay.bitstreams"],
        "pynq.notebooks": ["pynq-rl = pynq_rl.notebooks"],
        "pynq.lib": ["pynq_rl = pynq_rl.host.drivers"],
    },
)
