"""The register-table machinery and the registers every core shares.

A register table maps register names to entries in PYNQ's ``RegisterMap.create_subclass`` schema (``address_offset``,
``access``, ``size`` in bits, ``description``, ``fields`` with ``bit_offset``/``bit_width``/``access``), built with
``_register``; :func:`check_register_table` holds a table to it. Here too are what every core's table starts with (ID,
CTRL, STATUS and CYCLES at the same offsets, from ``_common_registers``, and the spec version the ID register
reports), the helpers that place and read fields (:func:`pack_fields`, :func:`unpack_fields`, :func:`field_bits`,
:func:`pulse_mask`) and the :class:`Status` and :class:`Ctrl` flags, generated from the STATUS and CTRL field tables.

None of it depends on a core, so it is the first module of the package's import order: the core modules build
their tables from it and it imports nothing from them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

#: Version of this specification, reported by every core's ID register (major << 8 | minor). A driver refuses a
#: bitstream whose major version differs, and warns on a newer minor version.
SPEC_VERSION_MAJOR = 1
SPEC_VERSION_MINOR = 0

READ_ONLY = "read-only"
READ_WRITE = "read-write"
WRITE_ONLY = "write-only"


def _register(
    offset: int,
    access: str,
    description: str,
    fields: Mapping[str, tuple] | None = None,
    reset: int = 0,
    pulse: Mapping[str, bool] | None = None,
) -> dict:
    """One register entry in PYNQ's schema; ``fields`` maps name -> (bit_offset, bit_width, description).

    ``reset`` is the value after reset (an extension PYNQ ignores). Fields listed in ``pulse`` are self-clearing
    (written 1 to act, always read back 0), as LiteX marks them with ``pulse=True``.
    """
    fields = fields or {"VALUE": (0, 32, description)}
    pulse = pulse or {}
    return {
        "address_offset": offset,
        "access": access,
        "size": 32,
        "description": description,
        "reset": reset,
        "fields": {
            name: {
                "bit_offset": bit_offset,
                "bit_width": bit_width,
                "access": access,
                "description": text,
                "pulse": bool(pulse.get(name, False)),
            }
            for name, (bit_offset, bit_width, text) in fields.items()
        },
    }


def check_register_table(name: str, registers: Mapping[str, dict]) -> None:
    """Raise ``ValueError`` if registers overlap, are misaligned, or hold overlapping or out-of-range fields."""
    seen: dict[int, str] = {}
    for reg_name, reg in registers.items():
        offset = reg["address_offset"]
        if offset % 4:
            raise ValueError(f"{name}.{reg_name}: offset {offset:#x} is not word aligned")
        if offset in seen:
            raise ValueError(f"{name}.{reg_name}: offset {offset:#x} already used by {seen[offset]}")
        seen[offset] = reg_name
        used = 0
        for field_name, fld in reg["fields"].items():
            lo, width = fld["bit_offset"], fld["bit_width"]
            if width < 1 or lo < 0 or lo + width > reg["size"]:
                raise ValueError(f"{name}.{reg_name}.{field_name}: bits [{lo}, {lo + width}) outside the register")
            mask = ((1 << width) - 1) << lo
            if used & mask:
                raise ValueError(f"{name}.{reg_name}.{field_name}: CSRField ordering/overlap issue")
            used |= mask
            if field_name == "lambda" or not field_name.isidentifier():
                raise ValueError(f"{name}.{reg_name}.{field_name}: not usable from register_map")


#: CTRL of every core. Its one-bit fields are :class:`Ctrl`; in the HDL, pulse field ``NAME`` drives the core's
#: ``cfg.<name>`` (``pynq_rl/overlay/hdl/top.py``).
CTRL_REGISTER = MappingProxyType(
    _register(
        0x04,
        READ_WRITE,
        "Control",
        {
            "START": (0, 1, "Start an operation (auto-clears)."),
            "SOFT_RESET": (1, 1, "Abort, flush the streams and clear STATUS (auto-clears)."),
            "MODE": (2, 4, "Core-specific operating mode."),
        },
        pulse={"START": True, "SOFT_RESET": True},
    )
)

#: STATUS of every core. Each field is one flag of :class:`Status`; in the HDL, field ``NAME`` reads the core's
#: ``cfg.<name>`` signal (``pynq_rl/overlay/hdl/top.py``: ``status_word``); fields named ``ERR_*`` are errors.
STATUS_REGISTER = MappingProxyType(
    _register(
        0x08,
        READ_ONLY,
        "Status; error and saturation flags are sticky until the next START",
        {
            "BUSY": (0, 1, "an operation is running"),
            "DONE": (1, 1, "the last operation finished (cleared by START)"),
            "ERR_CONFIG": (2, 1, "START refused: a configuration register is out of range"),
            "ERR_STREAM": (3, 1, "the input stream ended early or ran long (TLAST misplaced)"),
            "SATURATED": (4, 1, "a fixed-point result saturated during the last operation"),
        },
    )
)

#: The error bits of STATUS (fields named ``ERR_*``), as one mask: ``Status.errors``, and the drivers' check.
STATUS_ERROR_MASK = sum(
    1 << f["bit_offset"] for name, f in STATUS_REGISTER["fields"].items() if name.startswith("ERR_")
)


#: ID of every core: the core's magic number and the spec version it implements. Each core's copy carries its
#: own value as ``reset`` (:func:`pack_fields`); drivers decode what they read with :func:`unpack_fields`.
ID_REGISTER = MappingProxyType(
    _register(
        0x00,
        READ_ONLY,
        "Core identity: magic number and spec version",
        {
            "VERSION_MINOR": (0, 8, "spec minor version"),
            "VERSION_MAJOR": (8, 8, "spec major version"),
            "MAGIC": (16, 16, "core magic number"),
        },
    )
)


def pack_fields(register: Mapping, **values: int) -> int:
    """The register word holding ``values`` (field name -> value) at their fields' places; other bits 0.

    Raises ``ValueError`` for a field the register does not have or a value its field cannot hold (a packed word
    never loses bits).
    """
    word = 0
    for name, value in values.items():
        if name not in register["fields"]:
            raise ValueError(f"no field {name!r} (fields: {sorted(register['fields'])})")
        fld = register["fields"][name]
        if not 0 <= value < 1 << fld["bit_width"]:
            raise ValueError(f"{name} = {value!r} does not fit its {fld['bit_width']} bits")
        word |= value << fld["bit_offset"]
    return word


def unpack_fields(register: Mapping, word: int) -> dict[str, int]:
    """Every field of ``register`` read from ``word``, by name (the inverse of :func:`pack_fields`)."""
    return {
        name: (word >> fld["bit_offset"]) & ((1 << fld["bit_width"]) - 1) for name, fld in register["fields"].items()
    }


def _common_registers(magic: int) -> dict:
    """The registers every core has, at the same offsets (ID, CTRL, STATUS, CYCLES)."""
    identity = pack_fields(ID_REGISTER, MAGIC=magic, VERSION_MAJOR=SPEC_VERSION_MAJOR, VERSION_MINOR=SPEC_VERSION_MINOR)
    return {
        "ID": {**ID_REGISTER, "reset": identity},
        "CTRL": dict(CTRL_REGISTER),
        "STATUS": dict(STATUS_REGISTER),
        "CYCLES": _register(0x0C, READ_ONLY, "Clock cycles of the compute phase of the last operation"),
    }


def field_bits(register: Mapping, name: str) -> tuple[int, int]:
    """``(hi, lo)`` of field ``name`` of ``register``: the MyHDL slice ``value[hi:lo]`` that reads it."""
    fld = register["fields"][name]
    return fld["bit_offset"] + fld["bit_width"], fld["bit_offset"]


def pulse_mask(register: Mapping) -> int:
    """The bits of ``register``'s pulse fields (self-clearing: never stored, read 0), as one mask."""
    return sum(((1 << f["bit_width"]) - 1) << f["bit_offset"] for f in register["fields"].values() if f["pulse"])


def _flag_members(register_name: str, register: Mapping, one_bit_only: bool) -> dict[str, int]:
    """Field name -> mask of each one-bit field of ``register``, lowest bit first.

    Raises ``ValueError`` for a wider field unless ``one_bit_only`` (then the field, a multi-bit value such as
    CTRL.MODE, is not a flag and is left out).
    """
    members = {}
    for name, fld in sorted(register["fields"].items(), key=lambda item: item[1]["bit_offset"]):
        if fld["bit_width"] != 1:
            if one_bit_only:
                continue
            raise ValueError(
                f"{register_name}.{name}: a flag register's fields are one bit wide, not {fld['bit_width']!r}"
            )
        members[name] = 1 << fld["bit_offset"]
    return members


class _StatusFlags:
    """Behaviour of :class:`Status` beyond its flags (a mixin: the members come from the field table)."""

    @property
    def errors(self) -> Status:
        """The error bits (fields named ``ERR_*``) among these flags."""
        return Status(int(self) & STATUS_ERROR_MASK)  # type: ignore[call-overload]  # the mixin is only ever a Status


if TYPE_CHECKING:
    # What a type checker sees: the members below. At run time the classes are generated from the field tables
    # (the ``else`` branch), so moving or adding a field needs no edit here beyond the name; tests/test_registers.py
    # holds these names equal to the tables'.
    class Status(_StatusFlags, enum.IntFlag):
        BUSY = enum.auto()
        DONE = enum.auto()
        ERR_CONFIG = enum.auto()
        ERR_STREAM = enum.auto()
        SATURATED = enum.auto()

    class Ctrl(enum.IntFlag):
        START = enum.auto()
        SOFT_RESET = enum.auto()

else:
    Status = enum.IntFlag(
        "Status",
        _flag_members("STATUS", STATUS_REGISTER, one_bit_only=False),
        type=_StatusFlags,
        module=__name__,
        qualname="Status",
    )
    Ctrl = enum.IntFlag(
        "Ctrl", _flag_members("CTRL", CTRL_REGISTER, one_bit_only=True), module=__name__, qualname="Ctrl"
    )
Status.__doc__ = """Bits of every core's STATUS register, one member per field of :data:`STATUS_REGISTER` (generated:
move or add a field there and the drivers, the emulated cores, the HDL and the docs follow)."""
Ctrl.__doc__ = """The one-bit fields of every core's CTRL register (START, SOFT_RESET: pulses), generated from
:data:`CTRL_REGISTER`; CTRL.MODE is a value, written at :func:`field_bits` ``(CTRL_REGISTER, "MODE")``."""
