"""Shapes on the wire are checked before any reshape: a declared shape whose product overflows 64 bits, or holds more
than one message can carry, is refused naming the field and the shape (``INVALID_ARGUMENT`` over gRPC), never a
numpy reshape error from a wrapped product.
"""

import re

import grpc
import numpy as np
import pytest

from pynq_rl.host.agents.distributed import codec
from pynq_rl.host.agents.distributed import replay_pb2 as pb
from pynq_rl.host.agents.distributed import replay_pb2_grpc as pb_grpc
from pynq_rl.host.agents.distributed.server import ReplayServer
from pynq_rl.host.agents.distributed.service import serve
from tests.agents.distributed.replay_testing import OBS, make_batch, push_request

HUGE = [[2**32, 2**32], [2**33, 2**31], [2**62, 4], [2**63 - 1, 2**63 - 1], [2**20] * 4]
"""declared shapes whose element count wraps to 0 (or past any message) in int64 arithmetic"""


@pytest.mark.parametrize("shape", HUGE)
def test_a_shape_past_any_message_is_refused_naming_the_field(shape):
    message = pb.Tensor(dtype="float32", shape=shape, data=b"")
    with pytest.raises(ValueError, match="^observations: shape " + re.escape(str(tuple(shape)))) as info:
        codec.from_tensor(message, "observations")
    assert str(info.value).endswith(f"than one message of {codec.MAX_MESSAGE_BYTES} bytes can carry")


def test_an_empty_shape_with_huge_dimensions_is_refused_too():
    """A zero dimension makes the product 0, but no single dimension may exceed what one message holds."""
    message = pb.Tensor(dtype="uint8", shape=[0, 2**62], data=b"")
    with pytest.raises(ValueError, match=r"^actions: shape \(0, 4611686018427387904\) has a dimension larger than"):
        codec.from_tensor(message, "actions")
    assert codec.from_tensor(pb.Tensor(dtype="uint8", shape=[0, 5], data=b""), "ok").shape == (0, 5)


@pytest.mark.parametrize("shape", [[2**32, 2**32], [0], [-1, 4], [4, 0, 2], list(range(1, 10))])
def test_packed_frames_obs_shape_is_checked_before_use(shape):
    batch = make_batch(0, 2)
    frames = np.zeros((2, 2, 3), np.uint8)
    packed = codec.pack_batch({**batch, "observations": frames, "next_observations": frames})
    message = codec.encode_transitions(packed)
    message.frames.obs_shape[:] = shape
    with pytest.raises(ValueError, match=r"^transitions\.frames\.obs_shape must be 1 to 8 dimensions >= 1 of at most "):
        codec.decode_transitions(message)


@pytest.fixture
def served():
    replay = ReplayServer(64, OBS, "host", seed=0)
    server, port = serve(replay, "127.0.0.1:0", token="")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield replay, pb_grpc.ReplayStub(channel)
    channel.close()
    server.stop(0).wait()
    replay.close()


@pytest.mark.parametrize("shape", HUGE[:2])
def test_a_push_with_an_overflowing_obs_shape_gets_invalid_argument_naming_it(served, shape):
    replay, stub = served
    request = push_request(make_batch(0, 4), np.ones(4))
    request.transitions.observations.shape[:] = shape
    request.transitions.observations.data = b""
    with pytest.raises(grpc.RpcError) as info:
        stub.Push(request, timeout=5)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details().startswith(f"transitions.observations: shape ({shape[0]}, {shape[1]}) has ")
    assert stub.Push(push_request(make_batch(0, 4), np.ones(4)), timeout=5).accepted == 4
    assert replay.stats()["log_sequence"] == 1
