"""What the replay server's tests share: transitions that can be told apart after a round trip, a raw Push
request, a free loopback port and the server started as its own process (``python -m ...service``), which a test can
SIGKILL."""

import socket
import subprocess
import sys

import numpy as np

from pynq_rl.host.agents.distributed import codec
from pynq_rl.host.agents.distributed import replay_pb2 as pb

OBS = (4,)


def make_batch(start: int, n: int) -> dict:
    """n transitions whose reward is their global number: rows can be identified after a round trip."""
    ids = np.arange(start, start + n)
    return {
        "observations": np.stack([ids, -ids, 2 * ids, ids + 0.5], 1).astype(np.float32),
        "actions": (ids % 2).astype(np.int64),
        "rewards": ids.astype(np.float32),
        "next_observations": np.stack([ids + 1, -ids, 2 * ids, ids], 1).astype(np.float32),
        "discounts": np.full(n, 0.97, dtype=np.float32),
    }


def check_rows(batch: dict) -> None:
    """Every row of a sampled batch is the transition its reward names (no field got mixed up)."""
    ids = batch["rewards"].astype(np.int64)
    expected = make_batch(0, int(ids.max()) + 1)
    for name in codec.TRANSITION_FIELDS:
        np.testing.assert_array_equal(batch[name], expected[name][ids], err_msg=name)


def push_request(batch: dict, priorities) -> pb.PushRequest:
    """A Push request built by hand (no client-side checks), to be sent with a raw stub."""
    request = pb.PushRequest()
    codec.encode_transitions(batch, request.transitions)
    codec.to_tensor(np.asarray(priorities), request.priorities)
    return request


def start_service(port: int, directory, backend: str = "emu") -> subprocess.Popen:
    """The replay server as its own process (capacity 4,096, seed 5) on ``port``, checkpointing to ``directory``;
    returns once it says it listens."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pynq_rl.host.agents.distributed.service",
            "--address",
            f"127.0.0.1:{port}",
            "--capacity",
            "4096",
            "--backend",
            backend,
            "--checkpoint-dir",
            str(directory),
            "--seed",
            "5",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    assert line.startswith(f"listening on 127.0.0.1:{port}"), line
    return process


def free_port() -> int:
    """A TCP port free on the loopback interface (the OS's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
