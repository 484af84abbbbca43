"""Regenerate ``replay_pb2.py`` and ``replay_pb2_grpc.py`` from ``replay.proto`` (needs grpcio-tools).

The generated modules are committed: a PYNQ image ships grpcio and protobuf but not necessarily grpcio-tools, and the
replay server must start on the board without a code generator. Run this after editing ``replay.proto``::

    python -m pynq_rl.host.agents.distributed.gen_stubs

The generated ``replay_pb2_grpc.py`` imports ``replay_pb2`` as a top-level module; it is rewritten to a relative
import so the stubs work inside the package.
"""

from __future__ import annotations

import re
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
            f"--grpc_python_out={HERE}",
            str(HERE / "replay.proto"),
        ]
    )
    if code:
        return code
    stub = HERE / "replay_pb2_grpc.py"
    stub.write_text(re.sub(r"^import replay_pb2 as", "from . import replay_pb2 as", stub.read_text(), flags=re.M))
    return 0


if __name__ == "__main__":
    sys.exit(main())
