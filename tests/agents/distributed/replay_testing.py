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


def service_command(port: int, *flags: str, capacity: int = 4096, backend: str = "emu") -> list[str]:
    """The replay server's command line on ``127.0.0.1:port`` (0: the OS picks), ``flags`` after the common ones."""
    return [
        sys.executable,
        "-m",
        "pynq_rl.host.agents.distributed.service",
        "--address",
        f"127.0.0.1:{port}",
        "--capacity",
        str(capacity),
        "--backend",
        backend,
        *flags,
    ]


def start_service(
    port: int,
    *flags: str,
    directory=None,
    seed: int | None = 5,
    capacity: int = 4096,
    backend: str = "emu",
    env: dict | None = None,
    stderr=None,
) -> subprocess.Popen:
    """The replay server as its own process on ``port``, checkpointing to ``directory`` if given; returns once it
    says it listens. A server that does not start is killed and fails the test with what it printed (its stderr
    too if ``stderr=subprocess.PIPE``)."""
    if directory is not None:
        flags = ("--checkpoint-dir", str(directory), *flags)
    if seed is not None:
        flags = (*flags, "--seed", str(seed))
    command = service_command(port, *flags, capacity=capacity, backend=backend)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    line = process.stdout.readline()
    if not line.startswith(f"listening on 127.0.0.1:{port}"):
        process.kill()
        _, err = process.communicate(timeout=10)
        raise AssertionError(f"the replay server did not start: {line!r} {err or ''}")
    return process


def free_port() -> int:
    """A TCP port free on the loopback interface (the OS's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
