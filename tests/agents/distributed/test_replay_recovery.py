"""The replay server's files when something went wrong: a damaged checkpoint or log ends in a clear refusal or a
loud, counted loss, never a silent one; nothing in them is unpickled; acknowledgements are fsynced with ``sync_wal``.
"""

import os
import pickle
import re
import struct
import subprocess
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from pynq_rl.host.agents.distributed import codec
from pynq_rl.host.agents.distributed import replay_pb2 as pb
from pynq_rl.host.agents.distributed import wal as wal_module
from pynq_rl.host.agents.distributed.server import ReplayServer
from pynq_rl.host.agents.distributed.wal import LogFormatError, WriteAheadLog
from tests.agents.distributed.replay_testing import (
    OBS,
    check_rows,
    free_port,
    make_batch,
    service_command,
    start_service,
)


def _populated(directory: Path) -> list[tuple]:
    """3 pushes in a checkpoint, then pushes 4 and 5, a priority update, pushes 6 and 7 only in the log (a crash:
    no close). Returns the log's records ``(kind, sequence, payload, offset)``."""
    replay = ReplayServer(256, OBS, "host", checkpoint_dir=directory, seed=0)
    for k in range(3):
        replay.push(make_batch(10 * k, 10), np.ones(10))
    replay.checkpoint()
    replay.push(make_batch(30, 10), np.ones(10))
    replay.push(make_batch(40, 10), np.ones(10))
    replay.flush()
    replay.update_priorities(np.array([1, 2]), np.array([3.0, 4.0]))
    replay.push(make_batch(50, 10), np.ones(10))
    replay.push(make_batch(60, 10), np.ones(10))
    replay.flush()
    replay.close()
    log = WriteAheadLog(directory / "replay.wal")
    try:
        scan = log.scan()
    finally:
        log.close()
    assert scan.base == (3, 0) and [(r[0], r[1]) for r in scan.records] == [
        (b"PRWL", 4),
        (b"PRWL", 5),
        (b"PRUP", 1),
        (b"PRWL", 6),
        (b"PRWL", 7),
    ]
    return scan.records


def _flip(path: Path, offset: int) -> bytes:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))
    return bytes(data)


def _refused_then_accepted(directory: Path, refusal: str, warning: str) -> ReplayServer:
    """The server refuses to start on ``directory`` (a message matching ``refusal``) and leaves the log as it was;
    with accept_loss it starts, warning (matching ``warning``). Returns that server."""
    log = directory / "replay.wal"
    before = log.read_bytes() if log.exists() else None
    with pytest.raises(ValueError, match=refusal):
        ReplayServer(256, OBS, "host", checkpoint_dir=directory)
    assert (log.read_bytes() if log.exists() else None) == before  # a refusal touches nothing
    with pytest.warns(RuntimeWarning, match=warning):
        return ReplayServer(256, OBS, "host", checkpoint_dir=directory, accept_loss=True)


@pytest.mark.parametrize(
    "which, rows_kept, after, pushes, transitions, updates",
    [
        (0, 30, 4, 3, 30, 1),  # first record after the checkpoint
        (2, 50, 2, 2, 20, 0),  # the priority update in the middle
        (4, 60, 0, 0, 0, 0),  # the last record
    ],
)
def test_a_flipped_byte_in_a_log_record_refuses_or_loses_loudly(
    tmp_path, which, rows_kept, after, pushes, transitions, updates
):
    records = _populated(tmp_path)
    log = tmp_path / "replay.wal"
    offset = records[which][3]
    damaged = _flip(log, offset + 20 + len(records[which][2]) // 2)  # a payload byte
    counts = (
        rf"lost if dropped: that record and the {after} intact records after it \({pushes} pushes holding "
        rf"{transitions} transitions, {updates} priority updates\), all acknowledged"
    )
    replay = _refused_then_accepted(
        tmp_path,
        rf"^refusing to start: replay log .*replay\.wal: \d+ bytes from offset {offset} start with a record "
        rf"whose CRC-32 does not match; {counts}\. Restart with accept_loss=True \(--accept-loss\)",
        rf"^ACKNOWLEDGED DATA LOST: .*{counts}; moved to .*replay\.wal\.bad-",
    )
    try:
        assert replay.size() == rows_kept
        check_rows(replay.sample(64, 0.4))
        lost = replay.recovery["lost"]
        assert lost == {
            "damaged_records": 1,
            "intact_records_after": after,
            "pushes_after": pushes,
            "transitions_after": transitions,
            "updates_after": updates,
        }
        assert replay.stats()["recovery"]["lost"] == lost
        assert Path(replay.recovery["set_aside"]).read_bytes() == damaged[offset:]  # kept, not deleted
        assert log.read_bytes() == damaged[:offset]
    finally:
        replay.close()


def test_a_damaged_record_length_still_finds_and_counts_the_records_after_it(tmp_path):
    records = _populated(tmp_path)
    _flip(tmp_path / "replay.wal", records[0][3] + 6)  # the length field of the first record: now far past the end
    with pytest.raises(
        ValueError,
        match=r"start with an incomplete record .*the 4 intact records after it \(3 pushes "
        r"holding 30 transitions, 1 priority updates\)",
    ):
        ReplayServer(256, OBS, "host", checkpoint_dir=tmp_path)


def test_a_log_cut_in_half_is_refused(tmp_path):
    records = _populated(tmp_path)
    log = tmp_path / "replay.wal"
    cut = records[2][3] + 30
    assert cut % wal_module.PAGE_BYTES
    os.truncate(log, cut)
    replay = _refused_then_accepted(
        tmp_path,
        rf"^refusing to start: .* {cut - records[2][3]} bytes from offset {records[2][3]} start with an "
        rf"incomplete record .*; the file ends mid-record off a 4096-byte page boundary, so it was cut, not "
        rf"torn by a crash, and records that were after the cut cannot be counted\.",
        "ACKNOWLEDGED DATA LOST",
    )
    try:
        assert replay.size() == 50 and replay.recovery["lost"]["damaged_records"] == 1
    finally:
        replay.close()


def test_a_sequence_gap_is_damage(tmp_path):
    """A record missing from the middle (its bytes cut out whole) breaks the push sequence: refused, counted."""
    records = _populated(tmp_path)
    log = tmp_path / "replay.wal"
    data = log.read_bytes()
    log.write_bytes(data[: records[1][3]] + data[records[2][3] :])  # push 5 gone
    with pytest.raises(
        ValueError,
        match=r"start with a sequence gap: push 6 follows 4; lost if dropped: that record "
        r"and the 1 intact records after it \(1 pushes holding 10 transitions, 0 "
        r"priority updates\)",
    ):
        ReplayServer(256, OBS, "host", checkpoint_dir=tmp_path)


def test_a_missing_checkpoint_is_refused(tmp_path):
    _populated(tmp_path)
    (tmp_path / "replay.ckpt").unlink()
    for accept_loss in (False, True):
        with pytest.raises(
            ValueError,
            match=r"replay\.wal continues a checkpoint holding pushes up to 3 and priority "
            r"updates up to 0, but .*replay\.ckpt is missing: refusing to start",
        ):
            ReplayServer(256, OBS, "host", checkpoint_dir=tmp_path, accept_loss=accept_loss)


def test_a_log_without_a_valid_header_is_refused(tmp_path):
    _populated(tmp_path)
    log = tmp_path / "replay.wal"
    data = log.read_bytes()
    _flip(log, 24)  # the header's base update sequence
    with pytest.raises(LogFormatError, match=r"the file header is damaged or this is not a replay log of format 3"):
        ReplayServer(256, OBS, "host", checkpoint_dir=tmp_path)
    log.write_bytes(data[:8] + struct.pack("<I", wal_module.FORMAT + 1) + data[12:])
    with pytest.raises(LogFormatError, match="the file header is damaged"):  # its CRC covers the version too
        ReplayServer(256, OBS, "host", checkpoint_dir=tmp_path)


def test_every_flipped_checkpoint_byte_is_refused_or_harmless(tmp_path):
    """One flipped bit anywhere in replay.ckpt: a ValueError naming the file, or exactly the saved state (zip
    metadata such as timestamps is not checked; every array and the JSON header are, by their zip CRC-32s)."""
    replay = ReplayServer(16, OBS, "host", checkpoint_dir=tmp_path, seed=0)
    replay.push(make_batch(0, 12), np.linspace(1, 2, 12))
    replay.checkpoint()
    replay.close()
    path = tmp_path / "replay.ckpt"
    good = path.read_bytes()
    reference = ReplayServer(16, OBS, "host", checkpoint_dir=tmp_path)
    reference.close()
    refused = harmless = 0
    for offset in range(0, len(good), 3):
        data = bytearray(good)
        data[offset] ^= 0x01
        path.write_bytes(bytes(data))
        try:
            restored = ReplayServer(16, OBS, "host", checkpoint_dir=tmp_path)
        except ValueError as error:
            assert re.search(r"replay\.ckpt", str(error)), str(error)
            refused += 1
            continue
        restored.close()
        for name in codec.TRANSITION_FIELDS + ("versions",):
            np.testing.assert_array_equal(getattr(restored, name), getattr(reference, name), err_msg=f"{offset}")
        np.testing.assert_array_equal(restored.priorities.priorities(), reference.priorities.priorities())
        assert (restored.pos, restored.full) == (reference.pos, reference.full)
        harmless += 1
    assert refused > 0.9 * (refused + harmless)


class _Exploit:
    def __reduce__(self):
        return (os.system, (f"touch {_Exploit.marker}",))


def test_a_crafted_pickle_checkpoint_runs_nothing(tmp_path):
    _Exploit.marker = tmp_path / "pwned"
    (tmp_path / "replay.ckpt").write_bytes(pickle.dumps({"state": _Exploit()}))
    WriteAheadLog(tmp_path / "replay.wal").close()  # an intact, empty log beside it
    with pytest.raises(ValueError, match=r"replay\.ckpt' is not a pynq-rl replay_server checkpoint of format 2"):
        ReplayServer(16, OBS, "host", checkpoint_dir=tmp_path)
    assert not _Exploit.marker.exists()


def test_no_pickle_in_persistence():
    agents = Path(wal_module.__file__).parents[1]  # the replay server's persistence and every agent's checkpoints
    sources = sorted(agents.rglob("*.py"))
    assert agents / "common" / "checkpoints.py" in sources
    for source in sources:
        text = source.read_text()
        assert not re.search(r"import pickle|pickle\.loads?\(|allow_pickle=True", text), source


def test_sync_wal_fsyncs_before_the_acknowledgement(tmp_path, monkeypatch):
    """The documented guarantee: with sync_wal every acknowledged push (and priority update) was fsynced first;
    without it the record was only written to the OS (a killed process keeps it, a power cut may not)."""
    calls = []
    real_fsync = os.fsync
    monkeypatch.setattr(wal_module.os, "fsync", lambda fd: (calls.append(fd), real_fsync(fd)))
    for sync, expected in ((True, 2), (False, 0)):
        directory = tmp_path / str(sync)
        replay = ReplayServer(16, OBS, "host", checkpoint_dir=directory, sync_wal=sync)
        try:
            calls.clear()
            replay.push(make_batch(0, 4), np.ones(4))
            replay.flush()
            replay.update_priorities(np.array([0]), np.array([2.0]))
            assert len(calls) == expected
        finally:
            replay.close()


def test_command_line_refuses_a_damaged_log_in_one_line_and_accepts_loss_when_told(tmp_path):
    records = _populated(tmp_path)
    _flip(tmp_path / "replay.wal", records[1][3] + 25)
    base = service_command(0, "--checkpoint-dir", str(tmp_path), capacity=256, backend="host")
    refused = subprocess.run(base, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and refused.stdout == ""
    assert re.match(
        r"^error: refusing to start: replay log .* 3 intact records after it .*--accept-loss", refused.stderr
    )
    assert len(refused.stderr.strip().splitlines()) == 1
    process = subprocess.Popen(base + ["--accept-loss"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("listening on 127.0.0.1:"), line
        assert '"log_records": 1' in line
    finally:
        process.kill()
        _, stderr = process.communicate(timeout=10)
    assert "ACKNOWLEDGED DATA LOST" in stderr


def test_a_missing_log_beside_a_checkpoint_is_refused(tmp_path):
    """Every checkpoint leaves a log behind (at least its header): a checkpoint alone means the log was lost."""
    _populated(tmp_path)
    (tmp_path / "replay.wal").unlink()
    replay = _refused_then_accepted(
        tmp_path,
        r"^refusing to start: .*replay\.wal is missing but .*replay\.ckpt exists: the acknowledged pushes "
        r"and priority updates after that checkpoint \(an unknown number\) are lost\. Restart with "
        r"accept_loss=True",
        "ACKNOWLEDGED DATA LOST: .*replay.wal is missing",
    )
    try:
        assert replay.size() == 30 and replay.recovery == {"lost": {"missing_log": True}}
    finally:
        replay.close()
    again = ReplayServer(256, OBS, "host", checkpoint_dir=tmp_path)  # the new log makes it whole again
    again.close()


def test_a_checkpoint_leaves_a_log_that_names_it(tmp_path):
    replay = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path)
    try:
        replay.push(make_batch(0, 4), np.ones(4))
        replay.flush()
        replay.update_priorities(np.array([0]), np.array([2.0]))
        replay.checkpoint()
        assert not (tmp_path / "replay.wal.tmp").exists()
    finally:
        replay.close()
    log = WriteAheadLog(tmp_path / "replay.wal")
    try:
        scan = log.scan()
        assert (scan.base, scan.records, scan.reason) == ((1, 1), [], None)
    finally:
        log.close()


def test_sigkills_during_checkpoints_start_cleanly_and_lose_nothing(tmp_path):
    """The checks must not mistake an ordinary crash for damage: a server checkpointing every 50 ms is SIGKILLed 4
    times under 2 pushing actors; every restart starts (no refusal, nothing set aside) and every acknowledged row is
    back exactly once."""
    import random
    import signal
    import threading

    from pynq_rl.host.agents.distributed.client import ReplayClient

    port = free_port()

    def start() -> subprocess.Popen:  # not refused: a refusal fails the test with the server's message
        return start_service(
            port,
            "--checkpoint-every-s",
            "0.05",
            directory=tmp_path,
            seed=None,
            capacity=100_000,
            backend="host",
            stderr=subprocess.PIPE,
        )

    acked, stop = [], threading.Event()

    def pusher(actor: int) -> None:
        with ReplayClient(f"127.0.0.1:{port}", actor=True, retry_s=60.0) as client:
            for k in range(10**6):
                if stop.is_set():
                    return
                first = actor * 1_000_000 + 20 * k
                client.push(make_batch(first, 20), np.ones(20))
                acked.append(first)

    process = start()
    threads = [threading.Thread(target=pusher, args=(actor,)) for actor in range(2)]
    for thread in threads:
        thread.start()
    rng = random.Random(42)
    try:
        for _ in range(4):
            time.sleep(rng.uniform(0.2, 0.6))
            process.send_signal(signal.SIGKILL)
            process.wait()
            process = start()
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        process.send_signal(signal.SIGKILL)
        process.wait()
    replay = ReplayServer(100000, OBS, "host", checkpoint_dir=tmp_path)
    try:
        rows = replay.rewards[: replay.size()].astype(np.int64)
        assert replay.recovery == {} and not list(tmp_path.glob("replay.wal.bad-*")) and len(acked) > 100
        assert sorted(rows[::20].tolist()) == sorted(acked) and replay.size() == 20 * len(acked)
    finally:
        replay.close()


def _append_update(directory: Path, sequence: int, index: int) -> int:
    """Append an intact (CRC-valid) priority update record for slot ``index`` to the log; return its offset."""
    request = pb.UpdateRequest()
    codec.to_tensor(np.array([index], np.int64), request.indices)
    codec.to_tensor(np.array([2.0]), request.priorities)
    codec.to_tensor(np.array([1], np.uint64), request.versions)
    log = WriteAheadLog(directory / "replay.wal")
    try:
        offset = log.tell()
        log.append(wal_module.UPDATE, sequence, request.SerializeToString())
    finally:
        log.close()
    return offset


def test_a_record_that_cannot_be_applied_is_refused_naming_it_and_accept_loss_starts_before_it(tmp_path):
    """An intact log record that names a slot holding no transition (a log from another server, or an edit) refuses
    the start naming the log file, the offset and the record; accept_loss starts from the records before it and
    counts the loss."""
    records = _populated(tmp_path)
    offset = _append_update(tmp_path, 2, 4000)
    replay = _refused_then_accepted(
        tmp_path,
        rf"^refusing to start: replay log {re.escape(str(tmp_path / 'replay.wal'))}: \d+ bytes from offset {offset} "
        r"start with a priority update record \(sequence 2\) that cannot be applied: indices\[0\] = 4000 holds no "
        r"transition \(stored: 70\); lost if dropped: that record and the 0 intact records after it",
        r"^ACKNOWLEDGED DATA LOST: .*sequence 2\) that cannot be applied",
    )
    try:
        assert replay.size() == 70 and replay.restored["log_records"] == len(records) - 1
        assert replay.recovery["lost"]["damaged_records"] == 1
        assert (tmp_path / "replay.wal").stat().st_size == offset
    finally:
        replay.close()


def _header_flags(path: Path) -> int:
    magic, version, flags = struct.unpack_from("<8sII", path.read_bytes())
    assert (magic, version) == (b"PYNQRLWL", wal_module.FORMAT)
    return flags


def test_the_log_says_whether_every_record_was_fsynced(tmp_path):
    """The SYNCED header flag, which lets recovery call a torn record never acknowledged, holds exactly while every
    record was fsynced: set by a sync_wal server, cleared before the first append of a server without it (after its
    recovery has read the flag), set again by a sync_wal server's compaction."""
    log = tmp_path / "replay.wal"
    replay = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path, sync_wal=True)
    replay.push(make_batch(0, 4), np.ones(4))
    replay.close()
    assert _header_flags(log) == wal_module.SYNCED
    plain = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path)
    try:
        assert _header_flags(log) == wal_module.SYNCED  # nothing unsynced in it yet
        plain.push(make_batch(4, 4), np.ones(4))
        assert _header_flags(log) == 0
        plain.flush()  # the adding thread inserts what push() queued
        assert plain.size() == 8
    finally:
        plain.close()
    synced = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path, sync_wal=True)
    try:
        assert _header_flags(log) == 0  # the unsynced record is still there
        synced.checkpoint()
        assert _header_flags(log) == wal_module.SYNCED
    finally:
        synced.close()


def test_a_format_2_log_is_read_as_unsynced_and_carried_on(tmp_path):
    """A log written before the header had flags (format 2) still restores; a torn tail in it may have been
    acknowledged, and the first append rewrites it in the current format."""
    replay = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path)
    replay.push(make_batch(0, 4), np.ones(4))
    replay.close()
    log = tmp_path / "replay.wal"
    data = log.read_bytes()
    _, _, _, base_push, base_update, _ = struct.unpack_from("<8sIIQQI", data)
    head = struct.pack("<8sIQQ", b"PYNQRLWL", 2, base_push, base_update)
    log.write_bytes(head + struct.pack("<I", zlib.crc32(head)) + data[36:])
    with open(log, "ab") as f:
        f.write(struct.pack("<4sIQ", b"PRWL", 9000, 3).ljust(4096 - log.stat().st_size % 4096, b"\x07"))
    with pytest.warns(RuntimeWarning, match="it may include acknowledged records"):
        again = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path, sync_wal=True)
    try:
        assert again.size() == 4 and again.recovery["may_include_acknowledged"]
    finally:
        again.close()
    plain = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path)
    try:
        plain.push(make_batch(4, 4), np.ones(4))
        assert _header_flags(log) == 0
    finally:
        plain.close()
    assert ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path).size() == 8
