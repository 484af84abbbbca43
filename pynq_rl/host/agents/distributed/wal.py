"""The replay server's write-ahead log: an append-only file of checksummed records behind a versioned header.

Layout (little-endian), format :data:`FORMAT`:

* a 36-byte file header: ``magic "PYNQRLWL" | format (uint32) | flags (uint32) | base push sequence (uint64) | base
  update sequence (uint64) | CRC-32 of the 32 bytes before it``. The base sequences say which checkpoint the log
  continues: after a compaction the log holds only pushes ``> base push`` and updates ``> base update``, and a server
  that finds a base above its checkpoint's (or no checkpoint at all) knows records are missing. The flag
  :data:`SYNCED` says every record in the file was fsynced before it was acknowledged (a log opened without ``sync``
  loses the flag before its first append, atomically; a compaction sets it from the writer's ``sync``), so recovery
  knows whether a torn tail can have been acknowledged. Format 2 logs (a 32-byte header without flags) are still
  read, as not synced;
* records: a 20-byte header ``kind (4 bytes) | payload length (uint32) | sequence (uint64) | CRC-32 of the first 16
  header bytes and the payload (uint32)``, then the payload. The server writes two kinds: :data:`PUSH` (a serialized
  ``PushRequest``; sequence = the push's log sequence) and :data:`UPDATE` (a serialized ``UpdateRequest`` with slot
  versions; sequence = the update's sequence).

A record is acknowledged only after :meth:`WriteAheadLog.append` returned (written to the OS; ``sync=True`` also
fsyncs, which survives a power cut and not only a killed process).

Reading (:meth:`WriteAheadLog.scan`) returns the intact records up to the first bad one and describes the rest: where
it starts, why it is bad, and the intact records found after it (by searching for record headers whose checksum
matches), which were acknowledged and are lost if the tail is dropped. A tail that is only an incomplete last record
ending on a page boundary (:data:`PAGE_BYTES`) is torn: what a crash during a write leaves (the kernel copies a write
page by page and stops between pages when the process is killed), and also what a power cut leaves of records the OS
had not yet written back. In a :data:`SYNCED` log a torn record was never acknowledged (its fsync had not returned);
in any other log it may have been. Anything else (a checksum mismatch, an unknown kind, a file that ends mid-page
inside a record) is damage.
"""

from __future__ import annotations

import dataclasses
import os
import struct
import time
import zlib
from pathlib import Path

__all__ = ["PUSH", "UPDATE", "FORMAT", "SYNCED", "PAGE_BYTES", "WriteAheadLog", "LogScan", "LogFormatError"]

PUSH = b"PRWL"
"""a pushed batch of transitions"""
UPDATE = b"PRUP"
"""a priority update (with the slot versions it applied to)"""
FORMAT = 3
"""version of the log layout (1: no file header, record CRCs over the payload only; 2: a header without flags)"""
SYNCED = 1
"""file header flag: every record was fsynced before its acknowledgement"""
PAGE_BYTES = 4096
"""the granularity at which a write interrupted by a crash stops"""
_MAGIC = b"PYNQRLWL"
_FILE_HEADER = struct.Struct("<8sIIQQI")
_FILE_HEADER_V2 = struct.Struct("<8sIQQI")  # format 2: no flags
_HEADER = struct.Struct("<4sIQI")
_KINDS = (PUSH, UPDATE)


class LogFormatError(ValueError):
    """The log's file header is missing, damaged or of another format: none of its records can be trusted."""


@dataclasses.dataclass
class LogScan:
    """What :meth:`WriteAheadLog.scan` found.

    Attributes
    ----------
    base : tuple of int
        ``(push, update)`` sequences of the checkpoint the log continues.
    records : list of (bytes, int, bytes, int)
        ``(kind, sequence, payload, offset)`` of the intact records before the first bad one, in order.
    valid_bytes : int
        Where the intact part ends (the file header included).
    size : int
        The file's size.
    reason : str or None
        Why the record at ``valid_bytes`` is bad; None if the whole file is intact.
    torn : bool
        The tail is one incomplete record ending on a page boundary: a write cut by a crash or a power cut.
    synced : bool
        The file header's :data:`SYNCED` flag: every record was fsynced before its acknowledgement, so a torn one was
        never acknowledged.
    intact_after : list of (bytes, int, bytes, int)
        Intact records found after the bad one (acknowledged: they were written after it).
    """

    base: tuple[int, int]
    records: list
    valid_bytes: int
    size: int
    reason: str | None = None
    torn: bool = False
    synced: bool = False
    intact_after: list = dataclasses.field(default_factory=list)

    @property
    def tail_bytes(self) -> int:
        """Bytes from the first bad record to the end of the file."""
        return self.size - self.valid_bytes

    def truncate_records(self, count: int) -> None:
        """Treat the intact records from index ``count`` on as part of the bad tail, for ``reason`` (a caller that
        found them inconsistent, e.g. a sequence gap, sets it)."""
        self.intact_after = self.records[count + 1 :] + self.intact_after
        self.valid_bytes = self.records[count][3]
        del self.records[count:]
        self.torn = False


def _record_at(data: bytes, offset: int) -> tuple[bytes, int, bytes, int] | str:
    """The intact record at ``offset``, or why there is none there."""
    if offset + _HEADER.size > len(data):
        return f"an incomplete record header ({len(data) - offset} of {_HEADER.size} bytes)"
    kind, length, sequence, crc = _HEADER.unpack_from(data, offset)
    if kind not in _KINDS:
        return f"an unknown record kind {kind!r}"
    end = offset + _HEADER.size + length
    if end > len(data):
        return f"an incomplete record ({len(data) - offset} of {_HEADER.size + length} bytes)"
    payload = data[offset + _HEADER.size : end]
    if zlib.crc32(payload, zlib.crc32(data[offset : offset + 16])) != crc:
        return "a record whose CRC-32 does not match"
    return kind, sequence, payload, offset


def _intact_records_after(data: bytes, start: int) -> list[tuple[bytes, int, bytes, int]]:
    """Every intact record that begins at or after ``start`` (found by searching for the record kinds)."""
    found: list[tuple[bytes, int, bytes, int]] = []
    offset = start
    while True:
        candidates = [i for i in (data.find(kind, offset) for kind in _KINDS) if i >= 0]
        if not candidates:
            return found
        offset = min(candidates)
        record = _record_at(data, offset)
        if isinstance(record, tuple):
            found.append(record)
            offset += _HEADER.size + len(record[2])
        else:
            offset += 1


class WriteAheadLog:
    """One log file, opened for appending.

    Parameters
    ----------
    path : str or Path
        The log file (created atomically, with a header for base ``(0, 0)``, if missing).
    sync : bool
        fsync after every append (and mark the file :data:`SYNCED` when it is created or compacted).

    Not thread-safe: the server serializes appends and compaction under its own lock.
    """

    def __init__(self, path: str | os.PathLike, sync: bool = False) -> None:
        self.path = Path(path)
        self.sync = bool(sync)
        if not self.path.exists():
            self._replace(self.path, (0, 0), b"", self.sync)
        # records appended without fsync may not join a file that says all its records were fsynced; the header is
        # rewritten before the first append (not now: recovery first reads what the records already there were)
        self._unsync_before_append = not self.sync
        self._file = open(self.path, "ab")

    @staticmethod
    def _replace(path: Path, base: tuple[int, int], records: bytes, synced: bool) -> None:
        """Make ``path`` a whole log (header + ``records``) atomically: written aside, fsynced, renamed."""
        head = _FILE_HEADER.pack(_MAGIC, FORMAT, SYNCED if synced else 0, base[0], base[1], 0)[:-4]
        tmp = path.with_suffix(path.suffix + ".tmp")
        with open(tmp, "wb") as f:
            f.write(head + struct.pack("<I", zlib.crc32(head)) + records)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

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
            raise ValueError(
                f"a record holds < 4 GiB and a sequence in [0, 2**64), not {len(payload)} bytes, sequence {sequence}"
            )
        if self._unsync_before_append:
            self._clear_synced_flag()
        head = _HEADER.pack(kind, len(payload), sequence, 0)[:16]
        self._file.write(head + struct.pack("<I", zlib.crc32(payload, zlib.crc32(head))) + payload)
        self._file.flush()
        if self.sync:
            os.fsync(self._file.fileno())

    def _clear_synced_flag(self) -> None:
        """Rewrite the file without the :data:`SYNCED` flag (atomically; only if it has it)."""
        self._unsync_before_append = False
        self._file.flush()
        data = self.path.read_bytes()
        base, synced, header_bytes = self._header(data)
        if synced or header_bytes != _FILE_HEADER.size:  # a format 2 file is brought to this format too
            self._replace(self.path, base, data[header_bytes:], False)
            self._file.close()
            self._file = open(self.path, "ab")

    def _header(self, data: bytes) -> tuple[tuple[int, int], bool, int]:
        """``(base, synced, header size)`` of a log's bytes.

        Raises
        ------
        LogFormatError
            The file header is missing, damaged, or of another format.
        """
        version = struct.unpack_from("<I", data, 8)[0] if len(data) >= 12 else None
        header = _FILE_HEADER_V2 if version == 2 else _FILE_HEADER
        if len(data) < header.size:
            raise LogFormatError(f"{self.path}: {len(data)} bytes, shorter than the {header.size}-byte header")
        fields = header.unpack_from(data)
        if fields[0] != _MAGIC or zlib.crc32(data[: header.size - 4]) != fields[-1]:
            raise LogFormatError(
                f"{self.path}: the file header is damaged or this is not a replay log of format "
                f"{FORMAT} (an older server wrote logs without a header)"
            )
        if fields[1] not in (2, FORMAT):
            raise LogFormatError(f"{self.path}: log format {fields[1]}, this server reads formats 2 and {FORMAT}")
        flags = 0 if header is _FILE_HEADER_V2 else fields[2]
        return (fields[-3], fields[-2]), bool(flags & SYNCED), header.size

    def tell(self) -> int:
        """Bytes written so far: the end of the last complete record."""
        self._file.flush()
        return self._file.tell()

    def scan(self) -> LogScan:
        """Read the whole file: the intact records up to the first bad one, and what follows it.

        Raises
        ------
        LogFormatError
            The file header is missing, damaged, or of another format.
        """
        self._file.flush()
        data = self.path.read_bytes()
        base, synced, header_bytes = self._header(data)
        scan = LogScan(base, [], header_bytes, len(data), synced=synced)
        offset = header_bytes
        while offset < len(data):
            record = _record_at(data, offset)
            if isinstance(record, str):
                scan.reason = record
                scan.intact_after = _intact_records_after(data, offset + 1)
                scan.torn = record.startswith("an incomplete") and not scan.intact_after and len(data) % PAGE_BYTES == 0
                break
            scan.records.append(record)
            offset += _HEADER.size + len(record[2])
            scan.valid_bytes = offset
        return scan

    def set_aside(self, offset: int) -> Path:
        """Move the bytes from ``offset`` to the end into a side file next to the log (fsynced) and cut the log there.

        Returns
        -------
        Path
            The side file, ``<log>.bad-<UTC time>`` (a counter appended if that exists).
        """
        self._file.flush()
        with open(self.path, "rb") as f:
            f.seek(offset)
            tail = f.read()
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        side = self.path.with_name(f"{self.path.name}.bad-{stamp}")
        count = 1
        while side.exists():
            side, count = self.path.with_name(f"{self.path.name}.bad-{stamp}-{count}"), count + 1
        with open(side, "xb") as f:
            f.write(tail)
            f.flush()
            os.fsync(f.fileno())
        self._file.truncate(offset)
        self._file.flush()
        os.fsync(self._file.fileno())
        return side

    def compact(self, covered: int, base: tuple[int, int]) -> None:
        """Drop the records before byte ``covered`` (now in a checkpoint holding pushes up to ``base[0]`` and
        updates up to ``base[1]``), keeping what was appended since; the new file replaces the old one atomically
        (written aside, fsynced, renamed)."""
        self._file.flush()
        data = self.path.read_bytes()
        _, _, header_bytes = self._header(data)
        # under the server's lock: nothing is appended to the old file meanwhile; what is kept was written by this
        # writer (after ``covered``), so the new file is synced exactly when this writer syncs
        self._replace(self.path, base, data[max(covered, header_bytes) :], self.sync)
        self._unsync_before_append = False
        self._file.close()
        self._file = open(self.path, "ab")

    def close(self) -> None:
        """Close the file (idempotent)."""
        self._file.close()
