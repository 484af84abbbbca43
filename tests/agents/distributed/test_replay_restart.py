"""The replay server restarted from its checkpoint and log: a server process killed with SIGKILL loses no
acknowledged transition, a torn log tail is set aside, the learner's priority updates come back, and a checkpoint of
another layout or a corrupt one is refused."""

import signal
import struct
import zipfile

import numpy as np
import pytest

from pynq_rl.host.agents.distributed import codec
from pynq_rl.host.agents.distributed.client import ReplayClient
from pynq_rl.host.agents.distributed.server import ReplayServer
from tests.agents.distributed.replay_testing import OBS, check_rows, free_port, make_batch, start_service


def test_restart_from_checkpoint_loses_no_acknowledged_transition(tmp_path):
    port = free_port()
    process = start_service(port, directory=tmp_path)
    try:
        actor = ReplayClient(f"127.0.0.1:{port}", actor=True, retry_s=30.0)
        learner = ReplayClient(f"127.0.0.1:{port}", retry_s=30.0)
        acked = 0
        for k in range(6):
            acked += actor.push(make_batch(acked, 40), np.full(40, 1.0 + k))["accepted"]
        assert learner.checkpoint()["log_sequence"] == 6
        for _ in range(5):  # acknowledged after the checkpoint: only in the write-ahead log
            acked += actor.push(make_batch(acked, 40), np.full(40, 2.0))["accepted"]
        before = learner.sample(32, 0.4)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        process = start_service(port, directory=tmp_path)
        # the same client objects reconnect by themselves
        stats = learner.wait_ready(timeout_s=30, min_size=acked)
        assert stats["size"] == acked == 440
        assert stats["restored"] == {"checkpoint": True, "log_records": 5, "update_records": 0}
        check_rows(learner.sample(256, 0.4))
        assert learner.update_priorities(before["indices"], np.ones(32), before["versions"])["stale"] == 0
        # the actor continues its sequence; a retry of its last push is recognized as a duplicate
        assert actor.push(make_batch(acked, 40), np.ones(40))["accepted"] == 40
        process.send_signal(signal.SIGTERM)  # graceful: drains and checkpoints
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    # every acknowledged row is back in its slot, bit for bit
    restored = ReplayServer(4096, OBS, "emu", checkpoint_dir=tmp_path)
    try:
        assert restored.size() == 480
        assert restored.restored == {"checkpoint": True, "log_records": 0, "update_records": 0}
        expected = make_batch(0, 480)
        for name in codec.TRANSITION_FIELDS:
            np.testing.assert_array_equal(getattr(restored, name)[:480], expected[name], err_msg=name)
    finally:
        restored.close()


@pytest.mark.parametrize(
    "sync_wal, what",
    [
        (
            True,
            "every record of this log was fsynced before its acknowledgement \\(sync_wal\\), so it was never "
            "acknowledged",
        ),
        (
            False,
            "it may include acknowledged records \\(not fsynced: the log was written without sync_wal\\), 1 "
            "incomplete record here and, after a power cut, any the OS had not yet written back, which cannot be "
            "counted",
        ),
    ],
    ids=["sync_wal", "default"],
)
def test_torn_log_tail_is_set_aside_and_earlier_records_kept(tmp_path, sync_wal, what):
    """A crash or a power cut in the middle of writing a record leaves a prefix of it ending on a page boundary: it is
    moved to a side file with a warning and the server starts. Only a log written with ``sync_wal`` lets the warning
    say the record was never acknowledged (its fsync had not returned); without it the record, and records the OS
    never wrote back, may have been acknowledged, and the warning says so."""
    replay = ReplayServer(128, OBS, "host", checkpoint_dir=tmp_path, sync_wal=sync_wal)
    replay.push(make_batch(0, 10), np.ones(10))
    replay.push(make_batch(10, 10), np.ones(10))
    replay.flush()
    replay.close()
    log = tmp_path / "replay.wal"
    size = log.stat().st_size
    torn = struct.pack("<4sIQ", b"PRWL", 9000, 3).ljust(4096 - size % 4096, b"\x07")  # 9000 bytes announced
    with open(log, "ab") as f:
        f.write(torn)
    with pytest.warns(
        RuntimeWarning,
        match=rf"{len(torn)} bytes from offset {size} start with an incomplete record "
        rf"\({len(torn)} of 9020 bytes\), ending on a page boundary: a write cut "
        rf"by a crash or a power cut; {what}; moved to .*replay\.wal\.bad-",
    ):
        again = ReplayServer(128, OBS, "host", checkpoint_dir=tmp_path, sync_wal=sync_wal)
    try:
        assert again.size() == 20 and again.restored == {"checkpoint": False, "log_records": 2, "update_records": 0}
        check_rows(again.sample(20, 0.4))
        side = again.recovery["set_aside"]
        told = {} if sync_wal else {"may_include_acknowledged": True}
        assert again.recovery == {"set_aside": side, "torn_bytes": len(torn), "torn_records": 1, **told}
        assert open(side, "rb").read() == torn and log.stat().st_size == size
        again.push(make_batch(20, 5), np.ones(5))  # the log goes on after its intact part
    finally:
        again.close()
    third = ReplayServer(128, OBS, "host", checkpoint_dir=tmp_path)
    try:
        assert third.restored["log_records"] == 3 and third.recovery == {}
    finally:
        third.close()


@pytest.mark.parametrize("backend", ["host", "emu"])
def test_priority_updates_after_a_checkpoint_survive_a_crash(tmp_path, backend):
    """The learner's priorities, not only the actors' initial ones, come back after a restart: updates are logged
    (in order, with the versions they applied to) and re-applied; ones already in a checkpoint are not re-applied."""
    replay = ReplayServer(64, OBS, backend, alpha=1.0, checkpoint_dir=tmp_path, seed=1)
    replay.push(make_batch(0, 30), np.ones(30))
    replay.flush()
    replay.update_priorities(np.array([3]), np.array([5.0]))  # in the checkpoint below
    replay.checkpoint()
    replay.update_priorities(np.array([3]), np.array([7.0]))  # after it: only in the log
    replay.push(make_batch(30, 10), np.full(10, 2.0))
    sampled = replay.sample(16, 0.4)
    replay.update_priorities(sampled["indices"], np.linspace(0.5, 4.0, 16), sampled["versions"])
    replay.push(make_batch(40, 30), np.full(30, 3.0))  # wraps the ring: overwrites slots 0..5 after the update
    replay.flush()
    replay.update_priorities(np.array([1, 2]), np.array([9.0, 0.0]), replay.versions[[1, 2]])
    expected = replay.priorities.priorities()
    versions = replay.versions.copy()
    # a crash: the object is abandoned without close() or a checkpoint
    again = ReplayServer(64, OBS, backend, alpha=1.0, checkpoint_dir=tmp_path, seed=1)
    try:
        assert again.restored == {"checkpoint": True, "log_records": 2, "update_records": 3}
        np.testing.assert_array_equal(again.priorities.priorities(), expected)
        np.testing.assert_array_equal(again.versions, versions)
        assert again.priorities.priorities()[2] == 0.0
    finally:
        again.close()
        replay.close()


def test_slot_versions_do_not_depend_on_how_batches_are_grouped():
    """A batch longer than the ring writes some slots twice: each write counts, as if pushed one by one."""
    one = ReplayServer(8, OBS, "host")
    two = ReplayServer(8, OBS, "host")
    try:
        one.insert(make_batch(0, 12), np.ones(12))
        two.insert(make_batch(0, 6), np.ones(6))
        two.insert(make_batch(6, 6), np.ones(6))
        np.testing.assert_array_equal(one.versions, [2, 2, 2, 2, 1, 1, 1, 1])
        np.testing.assert_array_equal(one.versions, two.versions)
        np.testing.assert_array_equal(one.rewards, two.rewards)
    finally:
        one.close()
        two.close()


def test_checkpoint_for_another_layout_is_refused(tmp_path):
    replay = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path)
    replay.push(make_batch(0, 4), np.ones(4))
    replay.checkpoint()
    replay.close()
    with pytest.raises(
        ValueError,
        match=r"\(capacity, obs_shape, obs_dtype\) = \(64, \(4,\), 'float32'\), this "
        r"server is \(64, \(3,\), 'float32'\)",
    ):
        ReplayServer(64, (3,), "host", checkpoint_dir=tmp_path)


def test_checkpoint_is_no_pickle_and_a_corrupt_one_is_refused(tmp_path):
    """replay.ckpt is arrays + a JSON header (loading it runs no code); a flipped byte fails the zip's CRCs."""
    replay = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path)
    replay.push(make_batch(0, 4), np.ones(4))
    replay.checkpoint()
    replay.close()
    path = tmp_path / "replay.ckpt"
    with np.load(path, allow_pickle=False) as archive:
        assert "observations" in archive.files and "__header__" in archive.files
    with zipfile.ZipFile(path) as archive:
        member = archive.getinfo("observations.npy")
    data = bytearray(path.read_bytes())
    name_length, extra_length = struct.unpack_from("<HH", data, member.header_offset + 26)  # local file header
    payload = member.header_offset + 30 + name_length + extra_length
    data[payload + member.file_size - 1] ^= 0xFF  # the last byte of the stored array: data, not metadata
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"is not a pynq-rl replay_server checkpoint of format 2"):
        ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path)
