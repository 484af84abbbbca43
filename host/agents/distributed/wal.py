"""The replay server's write-ahead log: an append-only file of checksummed records, cut at the first bad one.

Record layout (little-endian): a 20-byte header ``kind (4 bytes) | payload length (uint32) | sequence (uint64) |
CRC-32 of the payload (uint32)``, then the payload. The server writes two kinds: :data:`PUSH` (a serialized
``PushRequest``; sequence = the push's log sequence) and :data:`UPDATE` (a serialized ``UpdateRequest`` with slot
versions; sequence = the update's sequence). A record is acknowledged only after :meth:`WriteAheadLog.append`
returned (flushed to the OS; ``sync=True`` also fsyncs, which survives a power cut and not only a killed process).

Reading (:meth:`WriteAheadLog.records`) stops at the first record whose kind is unknown, whose payload is short or
whose CRC does not match: a crash mid-write leaves a torn tail that was never acknowledged, and that tail is cut
(:meth:`WriteAheadLog.truncate`), so the next append does not follow garbage.
"""
from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path
from typing import Iterator

__all__ = ["PUSH", "UPDATE", "WriteAheadLog"]

PUSH = b"PRWL"
"""a pushed batch of transitions"""
UPDATE = b"PRUP"
"""a priority update (with the slot versions it applied to)"""
_HEADER = struct.Struct("<4sIQI")
_KINDS = (PUSH, UPDATE)


class WriteAheadLog:
    """One log file, opened for appending.

    Parameters
    ----------
    path : str or Path
        The log file (created if missing).
    sync : bool
        fsync after every append.

    Not thread-safe: the server serializes appends and compaction under its own lock.
    """

    def __init__(self, path: str | os.PathLike, sync: bool = False) -> None:
        self.path = Path(path)
        self.sync = bool(sync)
        self._file = open(self.path, "ab")

    def append(self, kind: bytes, sequence: int, payload: bytes) -> None:
        """Write one record and flush it to the OS (and to the disk with ``sync``).

        Raises
        ------
        ValueError
            Unknown ``kind``, or a payload or sequence too large for the header.
        """
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}, not {kind!r}")
        if len(payload) >= 1 << 32 or not 0 <= sequence < 1 << 64:
            raise ValueError(f"a record holds < 4 GiB and a sequence in [0, 2**64), not {len(payload)} bytes, "
                             f"sequence {sequence}")
        self._file.write(_HEADER.pack(kind, len(payload), sequence, zlib.crc32(payload)) + payload)
        self._file.flush()
        if self.sync:
            os.fsync(self._file.fileno())

    def tell(self) -> int:
        """Bytes written so far: the end of the last complete record."""
        self._file.flush()
        return self._file.tell()

    def records(self) -> Iterator[tuple[bytes, int, bytes]]:
        """``(kind, sequence, payload)`` of every complete, intact record from the start of the file, in order.

        Stops at the first torn or corrupt record; :attr:`valid_bytes` then holds where the intact part ends.
        """
        self._file.flush()
        data = self.path.read_bytes()
        offset = 0
        self.valid_bytes = 0
        while offset + _HEADER.size <= len(data):
            kind, length, sequence, crc = _HEADER.unpack_from(data, offset)
            payload = data[offset + _HEADER.size: offset + _HEADER.size + length]
            if kind not in _KINDS or len(payload) != length or zlib.crc32(payload) != crc:
                break
            offset += _HEADER.size + length
            self.valid_bytes = offset
            yield kind, sequence, payload

    def truncate(self, size: int) -> None:
        """Cut the file to ``size`` bytes (drop a torn tail)."""
        self._file.flush()
        self._file.truncate(size)

    def compact(self, covered: int) -> None:
        """Drop the first ``covered`` bytes (now in a checkpoint), keeping what was appended since; the new file
        replaces the old one atomically (written aside, fsynced, renamed)."""
        self._file.flush()
        with open(self.path, "rb") as f:
            f.seek(covered)
            tail = f.read()
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        with open(tmp, "wb") as f:
            f.write(tail)
            f.flush()
            os.fsync(f.fileno())
        self._file.close()
        os.replace(tmp, self.path)
        self._file = open(self.path, "ab")

    def close(self) -> None:
        """Close the file (idempotent)."""
        self._file.close()
