"""Packed frames (``obs_dtype="zlib"``): the actor compresses each transition's frames once, the replay server stores
and forwards the rows as opaque bytes, the learner unpacks them; bad packed input gets clear errors."""

import zlib

import numpy as np
import pytest

from pynq_rl.host.agents.distributed import codec
from pynq_rl.host.agents.distributed.client import ReplayClient
from pynq_rl.host.agents.distributed.server import ReplayServer
from pynq_rl.host.agents.distributed.service import serve

SHAPE = (4, 84, 84)


def frame_batch(start: int, n: int, seed: int = 0) -> dict:
    """n transitions with random frames (row i's reward is start + i) whose next observation shifts the stack by one
    screen, as frame stacking does."""
    rng = np.random.default_rng(seed + start)
    screens = rng.integers(0, 4, (n, 5) + SHAPE[1:], dtype=np.uint8) * 60  # a few gray levels: compressible
    return {
        "observations": screens[:, :4].copy(),
        "next_observations": screens[:, 1:].copy(),
        "actions": np.arange(n, dtype=np.int64) % 4,
        "rewards": np.arange(start, start + n, dtype=np.float32),
        "discounts": np.full(n, 0.97, np.float32),
    }


def test_pack_and_unpack_round_trip_and_the_stack_overlap_is_found():
    batch = frame_batch(0, 6)
    packed = codec.pack_batch(batch)
    assert "observations" not in packed and packed["frames_shape"] == SHAPE and len(packed["frames"]) == 6
    unpacked = codec.unpack_batch(packed)
    for name in codec.TRANSITION_FIELDS:
        np.testing.assert_array_equal(unpacked[name], batch[name], err_msg=name)
    # the three screens next_observations shares with observations are stored once: 5 screens, not 8
    screens = batch["observations"][0].tobytes() + batch["next_observations"][0][3:].tobytes()
    assert zlib.decompress(packed["frames"][0]) == bytes([1]) + screens


@pytest.mark.parametrize("shift", [0, 2, 3, 4])
def test_any_stack_shift_round_trips(shift):
    """n-step transitions move the stack on by n screens; a terminal next observation may share nothing."""
    rng = np.random.default_rng(shift)
    screens = rng.integers(0, 255, (3, 8) + SHAPE[1:], dtype=np.uint8)
    batch = {
        **frame_batch(0, 3),
        "observations": screens[:, :4].copy(),
        "next_observations": screens[:, shift : shift + 4].copy(),
    }
    unpacked = codec.unpack_batch(codec.pack_batch(batch, 1))
    np.testing.assert_array_equal(unpacked["observations"], batch["observations"])
    np.testing.assert_array_equal(unpacked["next_observations"], batch["next_observations"])
    assert zlib.decompress(codec.pack_batch(batch, 1)["frames"][0])[0] == shift


def test_pack_refuses_what_it_cannot_pack():
    batch = frame_batch(0, 2)
    with pytest.raises(
        ValueError,
        match=r"^observations must be uint8 frames shaped \(n, \*obs_shape\) to pack, "
        r"not float32 of shape \(2, 4, 84, 84\)$",
    ):
        codec.pack_batch({**batch, "observations": batch["observations"].astype(np.float32)})
    with pytest.raises(ValueError, match=r"^level must be an integer zlib level 0-9, not 10$"):
        codec.pack_batch(batch, 10)
    with pytest.raises(ValueError, match=r"must have one shape and at least one row$"):
        codec.pack_batch({**batch, "next_observations": batch["next_observations"][:1]})
    with pytest.raises(ValueError, match=r"^pack_frames must be None or a zlib level 0-9, not 'fast'$"):
        ReplayClient("127.0.0.1:1", pack_frames="fast")


def test_unpack_names_a_damaged_row():
    packed = codec.pack_batch(frame_batch(0, 3))
    short = {**packed, "frames": [packed["frames"][0], zlib.compress(b"\0" * 100), packed["frames"][2]]}
    with pytest.raises(
        ValueError,
        match=r"^frames row 1 does not hold a shift and the screens of two uint8 "
        r"observations of shape \(4, 84, 84\)$",
    ):
        codec.unpack_batch(short)
    garbled = {**packed, "frames": [packed["frames"][0], b"\x78\x9c" + bytes(40)]}
    with pytest.raises(ValueError, match=r"^frames row 1 is not a zlib stream"):
        codec.unpack_batch(garbled)
    bad_shift = {**packed, "frames": [zlib.compress(bytes([5]) + bytes(9 * 84 * 84))]}
    with pytest.raises(ValueError, match=r"^frames row 0 does not hold a shift"):
        codec.unpack_batch(bad_shift)
    trailing = {**packed, "frames": [packed["frames"][0] + b"x"]}
    with pytest.raises(ValueError, match=r"^frames row 0 does not hold a shift"):
        codec.unpack_batch(trailing)


def test_packed_frames_cross_grpc_once_compressed_and_are_stored_as_sent():
    replay = ReplayServer(128, SHAPE, "emu", seed=3, obs_dtype="zlib")
    server, port = serve(replay, "127.0.0.1:0")
    try:
        actor = ReplayClient(f"127.0.0.1:{port}", actor=True, pack_frames=codec.FRAME_LEVEL)
        learner = ReplayClient(f"127.0.0.1:{port}")
        batch = frame_batch(0, 40)
        actor.push(batch, np.linspace(0.1, 2.0, 40))
        replay.flush()
        assert replay.frames[:40] == codec.pack_batch(batch)["frames"]  # the actor's bytes, not re-encoded
        sampled = learner.sample(16)
        rows = sampled["rewards"].astype(np.int64)
        for name in codec.TRANSITION_FIELDS:
            np.testing.assert_array_equal(sampled[name], batch[name][rows], err_msg=name)
        assert sampled["observations"].dtype == np.uint8
        assert replay.stats()["obs_dtype"] == "zlib" and replay.max_sample == 128
        with pytest.raises(
            ValueError,
            match=r"this server stores packed frames \(obs_dtype zlib\): push frames "
            r"\(codec\.pack_batch\), not observations$",
        ):
            learner.push(frame_batch(40, 2), np.ones(2))
        too_long = codec.pack_batch(frame_batch(40, 2), 0)
        too_long["frames"][1] += bytes(30_000)  # past two whole observations stored uncompressed
        with pytest.raises(
            ValueError,
            match=r"transitions\.frames row 1 has \d+ bytes: a packed row of two "
            r"observations has 1 to 57472$",
        ):
            learner.push(too_long, np.ones(2))
        wrong_shape = {**codec.pack_batch(frame_batch(40, 2)), "frames_shape": (4, 84, 83)}
        with pytest.raises(
            ValueError,
            match=r"transitions\.frames hold observations of shape \(4, 84, 83\), this "
            r"server stores \(4, 84, 84\)$",
        ):
            learner.push(wrong_shape, np.ones(2))
        actor.close()
        learner.close()
    finally:
        server.stop(0).wait()
        replay.close()


def test_a_frame_server_refuses_packed_frames():
    replay = ReplayServer(16, SHAPE, "host", obs_dtype="uint8")
    with pytest.raises(
        ValueError,
        match=r"^this server stores uint8 observations: push observations, not packed "
        r"frames$",
    ):
        replay.push(codec.pack_batch(frame_batch(0, 2)), np.ones(2))
    replay.close()


def test_packed_storage_restores_from_checkpoint_and_log(tmp_path):
    replay = ReplayServer(64, SHAPE, "host", seed=1, obs_dtype="zlib", checkpoint_dir=tmp_path)
    actor = replay.open_session()
    replay.push(codec.pack_batch(frame_batch(0, 20)), np.ones(20), actor_id=actor, sequence=1)
    replay.checkpoint()
    replay.push(codec.pack_batch(frame_batch(20, 50)), np.ones(50), actor_id=actor, sequence=2)  # wraps: in the log
    replay.flush()
    stored = list(replay.frames)
    replay.close()
    restored = ReplayServer(64, SHAPE, "host", seed=1, obs_dtype="zlib", checkpoint_dir=tmp_path)
    assert restored.restored == {"checkpoint": True, "log_records": 1, "update_records": 0}
    assert restored.frames == stored and restored.size() == 64
    sampled = codec.unpack_batch(restored.sample(8))
    expected = {
        name: np.concatenate([frame_batch(0, 20)[name], frame_batch(20, 50)[name]]) for name in codec.TRANSITION_FIELDS
    }
    rows = sampled["rewards"].astype(np.int64)
    for name in codec.TRANSITION_FIELDS:
        np.testing.assert_array_equal(sampled[name], expected[name][rows], err_msg=name)
    restored.checkpoint()  # a checkpoint of a full ring of packed rows loads back too
    restored.close()
    again = ReplayServer(64, SHAPE, "host", seed=1, obs_dtype="zlib", checkpoint_dir=tmp_path)
    assert again.frames == stored
    again.close()
