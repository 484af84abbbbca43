"""The replay server's gRPC face against hostile bytes: random bytes and malformed protobufs sent raw to every method
of a running server get a clean error status (``INVALID_ARGUMENT`` and friends) within a bounded deadline, never an
``UNKNOWN``/``INTERNAL`` from an exception the server did not expect, and the server still acknowledges a valid push
afterwards.

The gRPC part of the hypothesis fuzz suite (:mod:`tests.test_bad_input` fuzzes the drivers' and the replay server's
Python APIs): requests go through a channel's ``unary_unary`` with raw ``bytes`` (de)serializers, so nothing on the
client side cleans them up first.
"""

import grpc
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pynq_rl.host.agents.distributed import codec
from pynq_rl.host.agents.distributed import replay_pb2 as pb
from pynq_rl.host.agents.distributed.server import ReplayServer
from pynq_rl.host.agents.distributed.service import serve
from tests.agents.distributed.replay_testing import OBS, make_batch, push_request

SERVICE = "/pynq_rl.replay.Replay/"
METHODS = ["Push", "Sample", "UpdatePriorities", "Stats", "Checkpoint", "OpenSession"]
CLEAN = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,  # a push under an actor id the server did not issue
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.OUT_OF_RANGE,
}
"""the statuses a refused request may get: the server saw what was wrong and said so"""
DEADLINE_S = 5.0
"""every call's deadline: a request that hangs the server fails with DEADLINE_EXCEEDED, never blocks the test"""


def _valid_push(first: int) -> bytes:
    return push_request(make_batch(first, 4), np.ones(4)).SerializeToString()


def _tensor(dtype, shape, data) -> pb.Tensor:
    return pb.Tensor(dtype=dtype, shape=shape, data=data)


tensors = st.builds(
    _tensor,
    st.sampled_from(sorted(codec.ALLOWED_DTYPES) + ["", "object", "float16", "U8"]),
    st.lists(st.sampled_from([0, 1, 4, -1, 2**31, 2**32, 2**62, 2**63 - 1, -(2**63)]), max_size=10),
    st.binary(max_size=64),
)
"""Tensors whose dtype, shape and bytes disagree in every way (huge, negative, wrapping shapes)"""


@st.composite
def malformed_pushes(draw) -> bytes:
    """A valid push with one field replaced by a random tensor, frames, or a field removed."""
    request = pb.PushRequest.FromString(_valid_push(1000))
    field = draw(st.sampled_from(list(codec.TRANSITION_FIELDS) + ["priorities", "frames", "drop"]))
    if field == "priorities":
        request.priorities.CopyFrom(draw(tensors))
    elif field == "frames":
        request.transitions.frames.obs_shape[:] = draw(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=9))
        request.transitions.frames.rows.extend(draw(st.lists(st.binary(max_size=32), max_size=4)))
    elif field == "drop":
        request.transitions.ClearField(draw(st.sampled_from(codec.TRANSITION_FIELDS)))
    else:
        getattr(request.transitions, field).CopyFrom(draw(tensors))
    request.actor_id = draw(st.text(max_size=8))
    request.sequence = draw(st.integers(0, 2**64 - 1))
    return request.SerializeToString()


@st.composite
def malformed_updates(draw) -> bytes:
    request = pb.UpdateRequest(indices=draw(tensors), priorities=draw(tensors))
    if draw(st.booleans()):
        request.versions.CopyFrom(draw(tensors))
    return request.SerializeToString()


@st.composite
def samples(draw) -> bytes:
    beta = draw(st.floats(allow_nan=True, allow_infinity=True))
    return pb.SampleRequest(batch_size=draw(st.integers(0, 2**32 - 1)), beta=beta).SerializeToString()


@st.composite
def truncated_or_flipped(draw) -> bytes:
    """A valid push cut short, or with one byte changed: mostly undecodable protobuf."""
    data = bytearray(_valid_push(2000))
    if draw(st.booleans()):
        return bytes(data[: draw(st.integers(1, len(data) - 1))])
    data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


payloads = st.one_of(
    st.binary(max_size=256), truncated_or_flipped(), malformed_pushes(), malformed_updates(), samples()
)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    replay = ReplayServer(64, OBS, "host", seed=0, checkpoint_dir=str(tmp_path_factory.mktemp("ckpt")))
    server, port = serve(replay, "127.0.0.1:0", token="")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=codec.GRPC_OPTIONS)
    raw = {
        name: channel.unary_unary(SERVICE + name, request_serializer=None, response_deserializer=None)
        for name in METHODS
    }
    assert raw["Push"](_valid_push(0), timeout=DEADLINE_S)  # a valid call through the raw path works
    yield replay, raw
    channel.close()
    server.stop(0).wait()
    replay.close()


def test_raw_bytes_to_every_method_get_a_clean_status_and_the_server_keeps_serving(served):
    replay, raw = served
    seen: dict = {}

    @settings(
        max_examples=300,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(method=st.sampled_from(METHODS), payload=payloads)
    def check(method, payload):
        try:
            raw[method](payload, timeout=DEADLINE_S)
        except grpc.RpcError as error:
            assert error.code() in CLEAN, (method, payload, error.code(), error.details())
            assert error.details(), "a refusal without a message"
            seen[error.code()] = seen.get(error.code(), 0) + 1

    check()
    assert seen.get(grpc.StatusCode.INVALID_ARGUMENT, 0) > 0
    ack = pb.PushReply.FromString(raw["Push"](_valid_push(3000), timeout=DEADLINE_S))
    assert ack.accepted == 4 and not ack.duplicate
    replay.flush()
    assert replay.size() >= 8


def test_undecodable_bytes_are_invalid_argument_naming_the_message(served):
    _, raw = served
    for method, message in zip(METHODS, ["PushRequest", "SampleRequest", "UpdateRequest"]):
        with pytest.raises(grpc.RpcError) as info:
            raw[method](b"\xff\xff\xff", timeout=DEADLINE_S)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert info.value.details().startswith(f"malformed {message}: "), info.value.details()
