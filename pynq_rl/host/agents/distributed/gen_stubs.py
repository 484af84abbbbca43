"""Regenerate ``replay_pb2.py``, its type stub ``replay_pb2.pyi`` and ``replay_pb2_grpc.py`` from ``replay.proto``
(needs grpcio-tools).

The generated modules are committed: a PYNQ image ships grpcio and protobuf but not necessarily grpcio-tools, and the
replay server must start on the board without a code generator. Run this after editing ``replay.proto``::

    python -m pynq_rl.host.agents.distributed.gen_stubs

The generated ``replay_pb2_grpc.py`` imports ``replay_pb2`` as a top-level module; it is rewritten to a relative
import so the stubs work inside the package. ``replay_pb2.pyi`` declares the message classes protoc builds at import
time, so mypy checks the code that uses them; it is passed through ``ruff check --fix`` and ``ruff format`` (when
ruff is installed) so it meets the project's lint like the hand-written modules.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    """Run protoc (from grpcio-tools) on ``replay.proto`` next to this file; returns protoc's exit code."""
    from grpc_tools import protoc  # imported here: only this script needs grpcio-tools

    code = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{HERE}",
            f"--python_out={HERE}",
            f"--pyi_out={HERE}",
            f"--grpc_python_out={HERE}",
            str(HERE / "replay.proto"),
        ]
    )
    if code:
        return code
    stub = HERE / "replay_pb2_grpc.py"
    stub.write_text(re.sub(r"^import replay_pb2 as", "from . import replay_pb2 as", stub.read_text(), flags=re.M))
    if importlib.util.find_spec("ruff") is not None:
        pyi = str(HERE / "replay_pb2.pyi")
        # its long lines are left to the formatter: the check's report of them is noise here
        subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--fix", "--quiet", pyi], check=False, stdout=subprocess.DEVNULL
        )
        subprocess.run([sys.executable, "-m", "ruff", "format", "--quiet", pyi], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
