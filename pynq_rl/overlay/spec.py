"""The single source of truth of the pynq-rl overlay.

Everything that more than one layer must agree on is defined here and nowhere else: per core its VLNV, its
register table, its stream word formats, its build parameters with their limits and its fixed-point formats;
per board the overlay's composition and address map. The numpy models, the MyHDL cores, the emulated devices,
the ``.hwh`` generator and the drivers all read this module, so they cannot disagree.

Register tables use PYNQ's ``RegisterMap.create_subclass`` schema (``address_offset``, ``access``, ``size`` in
bits, ``description``, ``fields`` with ``bit_offset``/``bit_width``/``access``), so a driver builds its
``register_map`` straight from them and the ``.hwh`` generator declares the same registers. Every table is
checked when this module is imported: overlapping registers or fields raise ``ValueError``.

This module imports only the standard library and numpy (which every board image has); it runs on the board as
well as on a laptop.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

import numpy as np

#: Version of this specification, reported by every core's ID register (major << 8 | minor). A driver refuses a
#: bitstream whose major version differs, and warns on a newer minor version.
SPEC_VERSION_MAJOR = 1
SPEC_VERSION_MINOR = 0

READ_ONLY = "read-only"
READ_WRITE = "read-write"
WRITE_ONLY = "write-only"


# ---------------------------------------------------------------------------------------------------------------
# Register tables
# ---------------------------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------------------------
# Fixed-point formats
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QFormat:
    """A two's-complement (or unsigned) fixed-point format: ``width`` bits, ``frac`` of them fractional.

    The represented value of integer code ``q`` is ``q * 2**-frac``. Rounding is round-half-up (add half an LSB,
    arithmetic shift right) everywhere: it costs one constant on a DSP48's carry input. Out-of-range results
    saturate and raise a flag; they never wrap.
    """

    width: int
    """total bits, sign included"""
    frac: int
    """fractional bits"""
    signed: bool = True
    """two's complement if True, unsigned otherwise"""

    def __post_init__(self) -> None:
        if not 1 <= self.width <= 62:
            raise ValueError(f"QFormat width must be 1..62 (int64 models), not {self.width!r}")
        if not 0 <= self.frac <= 62:
            raise ValueError(f"QFormat frac must be 0..62, not {self.frac!r}")

    @property
    def min_code(self) -> int:
        """smallest integer code"""
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def max_code(self) -> int:
        """largest integer code"""
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    @property
    def lsb(self) -> float:
        """value of one least significant bit"""
        return 2.0**-self.frac

    @property
    def min_value(self) -> float:
        """smallest representable value"""
        return self.min_code * self.lsb

    @property
    def max_value(self) -> float:
        """largest representable value"""
        return self.max_code * self.lsb

    def __str__(self) -> str:
        kind = "Q" if self.signed else "UQ"
        return f"{kind}{self.width - self.frac - int(self.signed)}.{self.frac}"


# ---------------------------------------------------------------------------------------------------------------
# GAE core (HEPPO)
# ---------------------------------------------------------------------------------------------------------------

GAE_MAGIC = 0x6AE0
GAE_VLNV = "pynq-rl.org:rl:gae_core:1.0"


class GaeMode(enum.IntEnum):
    """CTRL.MODE of the GAE core: the input word format."""

    RAW = 0
    """rewards and values as full-width fixed point (DATA format)"""
    Q8 = 1
    """rewards and values as CODE_BITS codes, dequantized on chip as code * SCALE + OFFSET with one SCALE and
    OFFSET per operation (the ``R_SCALE``, ``V_SCALE``, ``R_OFFSET`` and ``V_OFFSET`` registers: HEPPO's block
    standardization)"""
    Q8_RUNS = 2
    """rewards and values as CODE_BITS codes in runs of RUN_LENGTH records, each run headed by two header records
    that carry every lane's own reward and value SCALE, then OFFSET (:class:`GaeSpec`): the default 8-bit mode"""


GAE_REGISTERS = MappingProxyType(
    {
        **_common_registers(GAE_MAGIC),
        "LANES": _register(0x10, READ_ONLY, "Build parameter: processing elements (trajectories per batch)"),
        "T_MAX": _register(0x14, READ_ONLY, "Build parameter: timesteps the FILO stacks hold"),
        "LOOKAHEAD": _register(0x18, READ_ONLY, "Build parameter: k of the k-step lookahead"),
        "FORMAT": _register(
            0x1C,
            READ_ONLY,
            "Build parameters: fixed-point formats",
            {
                "DATA_W": (0, 8, "data word width (bits)"),
                "FRAC_BITS": (8, 8, "fractional bits of data words"),
                "COEF_FRAC": (16, 8, "fractional bits of GAMMA and GAMMA_LAMBDA"),
                "CODE_BITS": (24, 8, "bits per quantized code in q8 mode"),
            },
        ),
        "T": _register(
            0x20,
            READ_WRITE,
            "Timesteps of the first streamed (latest) chunk of every lane-batch (1..T_MAX); "
            "with CHUNKS = C a lane-batch has T + (C-1) x T_MAX steps",
        ),
        "LANES_USED": _register(0x24, READ_WRITE, "Lanes of the last lane-batch (1..LANES); the others use all LANES"),
        "GAMMA": _register(0x28, READ_WRITE, "Discount gamma, unsigned with COEF_FRAC fractional bits"),
        "GAMMA_LAMBDA": _register(0x2C, READ_WRITE, "gamma * lambda, unsigned with COEF_FRAC fractional bits"),
        "R_SCALE": _register(
            0x30,
            READ_WRITE,
            "q8 block mode: reward dequantization scale, a DATA code within the 25-bit "
            "SCALE range (code x scale is one DSP); START refuses others",
        ),
        "R_OFFSET": _register(0x34, READ_WRITE, "q8 block mode: reward dequantization offset (DATA format)"),
        "V_SCALE": _register(
            0x38,
            READ_WRITE,
            "q8 block mode: value dequantization scale, a DATA code within the 25-bit SCALE range; START "
            "refuses others",
        ),
        "V_OFFSET": _register(0x3C, READ_WRITE, "q8 block mode: value dequantization offset (DATA format)"),
        "BATCHES": _register(
            0x40,
            READ_WRITE,
            "Lane-batches streamed back to back in one operation (1..BATCHES_MAX): "
            "B x (S+1) input records in, B x S output records out for S steps per "
            "lane-batch",
            reset=1,
        ),
        "CHUNKS": _register(
            0x44,
            READ_WRITE,
            "T_MAX chunks of every lane-batch (1..CHUNKS_MAX), streamed latest first: "
            "the first T steps long with the bootstrap row, the others T_MAX steps "
            "without one; the recursion runs on across them (one long sequence)",
            reset=1,
        ),
        "RUN_LENGTH": _register(
            0x48,
            READ_ONLY,
            "Build parameter: input records per run in q8-runs mode (each run headed by a SCALE and an OFFSET "
            "header record)",
        ),
    }
)


@dataclass(frozen=True)
class GaeSpec:
    """Build parameters of one GAE core and everything derived from them.

    Stream formats (little-endian, one *record* per timestep, each record padded to whole stream beats):

    * input, ``T + 1`` records in forward time order. Record ``t < T`` holds ``LANES`` rewards, ``LANES`` values
      and ``ceil(LANES / 8)`` bytes of done bits (bit ``n`` of the done field is lane ``n``); record ``T`` holds the
      bootstrap values ``V(s_T)`` (its rewards and done bits are ignored). Rewards and values are int8 codes in q8
      mode and int32 DATA words in raw mode. Unused lanes are ignored.
    * output, ``T`` records in forward time order, each ``LANES`` advantages then ``LANES`` returns (``A + V``), all
      int32 DATA words.
    * an operation of ``BATCHES = B`` lane-batches streams B such inputs back to back (B x (T + 1) records, TLAST on
      the last) and returns B such outputs back to back (B x T records, TLAST on the last); batch ``b`` holds lanes
      ``b * LANES ...``, the last one ``LANES_USED`` of them. All batches share T, the coefficients and the q8
      registers.
    * q8-runs mode (:attr:`GaeMode.Q8_RUNS`): a lane-batch's ``S + 1`` records, in stream order, are cut into runs of
      :attr:`run_length` records (the last one may be shorter); two *header records* go ahead of each run, each the
      size of a raw record. The first holds every lane's SCALE (its reward field: LANES reward scales, its value
      field: LANES value scales; int32 words of which the core reads the low 25 bits as a signed SCALE code), the
      second every lane's OFFSET (DATA words); their done bytes are ignored. Each code of the run's records is
      dequantized with its own lane's pair: ``sat(code x SCALE + OFFSET)``. Runs restart with each lane-batch and
      run on across its chunks. The ``R_SCALE``, ``V_SCALE``, ``R_OFFSET`` and ``V_OFFSET`` registers are not read.
    * a lane-batch of ``S > T_MAX`` steps is ``CHUNKS = C`` chunks (:meth:`chunking`), streamed from the latest to the
      earliest: first steps ``[S - T, S)`` and the bootstrap row ``V(s_S)`` (T + 1 records, the register T holds
      this first chunk's length), then each earlier T_MAX steps in forward order without a bootstrap row (T_MAX
      records each): S + 1 input records. The PEs keep their recursion state (V_{t+1}, the delta and A histories)
      from one chunk to the next, so the result is the one-long-sequence recursion, bit for bit. The output
      returns the S records in the same chunk order (:meth:`stream_rows`).
    """

    lanes: int = 8
    """processing elements, i.e. trajectories computed side by side"""
    t_max: int = 1024
    """timesteps the FILO stacks hold"""
    lookahead: int = 2
    """k of the k-step lookahead (HEPPO eq. 10/11) that pipelines the A_t feedback loop"""
    code_bits: int = 8
    """bits of a quantized reward or value code (q8 mode)"""
    data: QFormat = QFormat(32, 16)
    """format of internal data words, raw-mode inputs, dequantized values and outputs"""
    coef: QFormat = QFormat(24, 23, signed=False)
    """format of GAMMA and GAMMA_LAMBDA: UQ1.23 holds 1.0 exactly and, as a signed multiply operand, fits the DSP48's
    25-bit port, so data x coefficient is 2 DSPs with the data split at bit 17 (UQ1.24 needs 26 bits; measured
    error vs float64 unchanged, 1.9e-4 -> 2.0e-4 on the 1e-3 test)"""
    run_length: int = 32
    """input records per run in q8-runs mode: one SCALE and one OFFSET per lane and run, as the OCP Microscaling
    formats share one scale per 32 elements (measured on PPO rollouts: per-lane runs of 32 cut the advantage error of
    one block per operation about 11x, for 2 more bits per element)"""
    stream_bytes: int = 8
    """AXI-Stream TDATA width in bytes (the DMA's memory-mapped width on the board's HP port)"""
    multiplier_port_bits: int = 25
    """widest signed operand of the fabric's multiplier primitive: 25 for the Zynq boards' DSP48E1/E2 (a data x
    coefficient product is 2 DSPs, each with its M register), 18 for an 18 x 18 primitive such as the ECP5's
    MULT18X18D, the place-and-route stand-in (the coefficient is split at bit 17 too: 4 primitives per product, each
    output registered, since yosys and nextpnr-ecp5 put no register inside a MULT18X18D). The arithmetic, the
    latency and every result are the same either way; only the HDL's partial products differ."""
    read_latency: ClassVar[int] = 1
    """register stages from a stack's read data to the PE (the BRAM output register); the dequantization (multiply,
    add the offset, clamp) happens on the way in, before the stacks, where it costs no compute cycles"""
    pe_latency: ClassVar[int] = 10
    """register stages of the HDL's processing element, from its inputs to A_t"""

    batches_max = 0xFFFF
    """largest BATCHES of one operation (the core's batch counter is 16 bits)"""
    chunks_max = 0xFFFF
    """largest CHUNKS of one lane-batch (the core's chunk counter is 16 bits)"""

    @property
    def pipeline_depth(self) -> int:
        """Cycles a chunk's compute phase takes beyond one per timestep: CYCLES = T + pipeline_depth for one chunk.

        The HDL's, fixed by its structure (so not a parameter): 2 for the last loaded row to reach its BRAM, 1 pop of
        the bootstrap row (a bubble in a continuation chunk), 1 BRAM read, :attr:`read_latency`,
        :attr:`pe_latency`, 1 write-back. The GAE tests hold the HDL's stage counts equal to these.
        """
        return 2 + 1 + 1 + self.read_latency + self.pe_latency + 1

    def __post_init__(self) -> None:
        limits = {
            "lanes": (1, 256),
            "t_max": (1, 1 << 16),
            "lookahead": (1, 8),
            "code_bits": (2, 8),
            "run_length": (1, 1 << 16),
        }
        for name, (lo, hi) in limits.items():
            value = getattr(self, name)
            if not lo <= value <= hi:
                raise ValueError(f"GaeSpec.{name} must be in [{lo}, {hi}], not {value!r}")
        if self.stream_bytes not in (4, 8, 16, 32, 64, 128):
            raise ValueError(f"GaeSpec.stream_bytes must be a power of two from 4 to 128, not {self.stream_bytes!r}")
        if self.data.width != 32:
            raise ValueError(f"GaeSpec.data must be 32 bits wide (stream words are int32), not {self.data.width!r}")
        if self.multiplier_port_bits not in (18, 25):
            raise ValueError(
                f"GaeSpec.multiplier_port_bits must be 25 (DSP48) or 18 (18 x 18 multipliers), not "
                f"{self.multiplier_port_bits!r}"
            )

    def cycles(self, n_steps: int, batches: int = 1) -> int:
        """CYCLES of an operation of ``batches`` lane-batches of ``n_steps`` each: the compute phases, summed, one
        per chunk (a continuation chunk pops an empty slot where the first one pops its bootstrap row)."""
        chunks, _ = self.chunking(n_steps)
        return batches * (n_steps + chunks * self.pipeline_depth)

    def chunking(self, n_steps: int) -> tuple[int, int]:
        """``(CHUNKS, T)`` of a lane-batch of ``n_steps`` steps: ``ceil(n_steps / T_MAX)`` chunks, the first
        streamed (latest) one ``T = n_steps - (CHUNKS - 1) x T_MAX`` steps long."""
        if n_steps < 1:
            raise ValueError(f"n_steps must be >= 1, not {n_steps!r}")
        chunks = -(-n_steps // self.t_max)
        return chunks, n_steps - (chunks - 1) * self.t_max

    def stream_rows(self, n_steps: int) -> np.ndarray:
        """Time index of each input record of one lane-batch of ``n_steps`` steps, in stream order (``n_steps + 1``
        records; index ``n_steps`` is the bootstrap row). The output records come newest first
        (:meth:`output_rows`)."""
        chunks, first = self.chunking(n_steps)
        tail = n_steps - first
        parts = [np.arange(tail, n_steps + 1)]
        parts += [np.arange(tail - c * self.t_max, tail - (c - 1) * self.t_max) for c in range(1, chunks)]
        return np.concatenate(parts)

    def output_rows(self, n_steps: int) -> np.ndarray:
        """Time index of each output record of one lane-batch of ``n_steps`` steps, in stream order: newest first,
        ``n_steps - 1`` down to 0. The core drains each chunk's results in the order its PEs write them back (the
        drain trails the write-back instead of waiting for A_0) and the chunks come latest first, so the whole
        lane-batch leaves in reverse time order; the driver flips it back with a view."""
        return np.arange(n_steps - 1, -1, -1)

    @property
    def done_bytes(self) -> int:
        """bytes of done bits per input record"""
        return (self.lanes + 7) // 8

    def _padded(self, nbytes: int) -> int:
        return -(-nbytes // self.stream_bytes) * self.stream_bytes

    def input_record_bytes(self, mode: GaeMode) -> int:
        """bytes of one input record (padded to whole beats) in the given mode; q8-runs header records are raw-sized
        (:attr:`header_record_bytes`)"""
        word = 4 if mode == GaeMode.RAW else 1
        return self._padded(2 * self.lanes * word + self.done_bytes)

    @property
    def header_record_bytes(self) -> int:
        """bytes of one q8-runs header record: a raw record's (LANES reward words, LANES value words, done bytes)"""
        return self.input_record_bytes(GaeMode.RAW)

    def runs(self, n_rows: int) -> int:
        """q8-runs runs of a lane-batch of ``n_rows`` input records (``S + 1`` for S steps)"""
        return -(-n_rows // self.run_length)

    def run_of_rows(self, n_steps: int) -> np.ndarray:
        """q8-runs run of each time row 0..``n_steps`` (the bootstrap row last) of a lane-batch of ``n_steps`` steps:
        its record's stream position (:meth:`stream_rows`) over :attr:`run_length`."""
        position = np.argsort(self.stream_rows(n_steps))
        return position // self.run_length

    def input_batch_bytes(self, mode: GaeMode, n_steps: int) -> int:
        """bytes of one lane-batch's input stream of ``n_steps`` steps in ``mode``, headers included"""
        n_rows = n_steps + 1
        data = n_rows * self.input_record_bytes(mode)
        if GaeMode(mode) == GaeMode.Q8_RUNS:
            data += 2 * self.runs(n_rows) * self.header_record_bytes
        return data

    def bits_per_element(self, mode: GaeMode) -> float:
        """Information bits a stored reward or value takes in ``mode``, counting its share of every scale and offset
        but not the done bits or the padding of records to whole beats: 32 (raw), 8 (q8, one block per operation:
        its four registers spread over all elements), ``8 + 2 x 32 / run_length`` (q8-runs: a 32-bit SCALE and
        OFFSET per lane and run), 10.0 for runs of 32."""
        mode = GaeMode(mode)
        if mode == GaeMode.RAW:
            return float(self.data.width)
        if mode == GaeMode.Q8:
            return float(self.code_bits)
        return self.code_bits + 2 * 32 / self.run_length

    @property
    def output_record_bytes(self) -> int:
        """bytes of one output record (advantages then returns, int32 each)"""
        return self._padded(2 * self.lanes * 4)

    def parameter_registers(self) -> dict[str, int]:
        """Values of the read-only identity and build-parameter registers (ID, LANES, T_MAX, LOOKAHEAD, FORMAT,
        RUN_LENGTH), FORMAT packed by its field table: what the HDL hard-wires and the emulated IP reports."""
        fields = GAE_REGISTERS["FORMAT"]["fields"]
        packed = {
            "DATA_W": self.data.width,
            "FRAC_BITS": self.data.frac,
            "COEF_FRAC": self.coef.frac,
            "CODE_BITS": self.code_bits,
        }
        return {
            "ID": GAE_REGISTERS["ID"]["reset"],
            "LANES": self.lanes,
            "T_MAX": self.t_max,
            "LOOKAHEAD": self.lookahead,
            "FORMAT": sum(value << fields[name]["bit_offset"] for name, value in packed.items()),
            "RUN_LENGTH": self.run_length,
        }

    @property
    def scale(self) -> QFormat:
        """format of the q8 SCALE registers: DATA's fraction in 25 signed bits, so a code times a scale fits one
        DSP48 (25 x 18); block standardization never needs more (its scales stay far below 2**24 LSB)"""
        return QFormat(25, self.data.frac)

    @property
    def code(self) -> QFormat:
        """format of q8 codes (signed integers)"""
        return QFormat(self.code_bits, 0)

    def lookahead_powers(self, gamma_lambda_code: int) -> tuple[int, ...]:
        """Coefficient codes of C**j for j = 0..k, as the core computes them once per batch.

        C**0 = 1.0 exactly; C**j = round_half_up(C**(j-1) * C) in the coefficient format.
        """
        one = 1 << self.coef.frac
        powers = [one]
        half = 1 << (self.coef.frac - 1)
        for _ in range(self.lookahead):
            powers.append((powers[-1] * gamma_lambda_code + half) >> self.coef.frac)
        return tuple(powers)


# ---------------------------------------------------------------------------------------------------------------
# Replay core (on-chip RMM): a K-ary sum tree for prioritized experience replay
# ---------------------------------------------------------------------------------------------------------------

REPLAY_MAGIC = 0x5E9A
REPLAY_VLNV = "pynq-rl.org:rl:replay_core:1.0"

#: The state an xorshift32 PRNG seeded with 0 takes instead (0 is xorshift's fixed point); also the reset state.
PRNG_ZERO_SEED = 0x9E37_79B9

#: Shifts of the cores' xorshift32 PRNG (Marsaglia 2003, "Xorshift RNGs", triple 13, 17, 5): left, right, left.
PRNG_SHIFTS = (13, 17, 5)


def xorshift32_step(state: int) -> int:
    """One step of the cores' xorshift32 PRNG on a 32-bit state: ``x ^= x << 13; x ^= x >> 17; x ^= x << 5``.

    The one Python copy of the step: the numpy model iterates it (``models/prng.py``) and the HDL evaluates it at
    elaboration time for power-up values; the generator itself is ``hdl/common/prng.py``.
    """
    left1, right, left2 = PRNG_SHIFTS
    state ^= (state << left1) & 0xFFFF_FFFF
    state ^= state >> right
    return state ^ ((state << left2) & 0xFFFF_FFFF)


class ReplayMode(enum.IntEnum):
    """CTRL.MODE of the replay core: what one START does. One kind of operation per START, so the pipeline is
    drained between a batch of sets and a batch of samples and every sample sees exactly the sets before it."""

    SET = 0
    """input: set records until TLAST; each sets leaf ``index`` to ``priority`` (insert and update are one
    operation; later records win); no output"""
    SAMPLE = 1
    """no input; COUNT result records out, stratified, uniforms drawn from the on-chip PRNG (SEED)"""
    SAMPLE_UNIFORM = 2
    """input: COUNT uniform records; COUNT result records out, stratified with the host's uniforms. TLAST before
    the COUNT-th record: the records received are sampled (TLAST on the last of their results) and ERR_STREAM;
    no TLAST on the COUNT-th: COUNT results, the extra records are dropped up to TLAST, ERR_STREAM"""
    DUMP = 3
    """no input; every leaf priority out in index order, one 32-bit word each"""
    CLEAR = 4
    """no streams; every node and leaf becomes 0"""


REPLAY_REGISTERS = MappingProxyType(
    {
        **_common_registers(REPLAY_MAGIC),
        "K": _register(0x10, READ_ONLY, "Build parameter: fan-out of the sum tree"),
        "LEVELS": _register(0x14, READ_ONLY, "Build parameter: levels below the root; capacity = K**LEVELS"),
        "FORMAT": _register(
            0x18,
            READ_ONLY,
            "Build parameters: leaf priority format",
            {
                "LEAF_W": (0, 8, "bits of a leaf priority (unsigned)"),
                "LEAF_FRAC": (8, 8, "fractional bits of a leaf priority"),
            },
        ),
        "TOTAL": _register(0x1C, READ_ONLY, "Root of the sum tree: total priority in leaf LSBs (low 32 bits)"),
        "TOTAL_HI": _register(0x20, READ_ONLY, "Root of the sum tree: total priority in leaf LSBs (high 32 bits)"),
        "SEED": _register(
            0x24,
            READ_WRITE,
            "PRNG state: a write reseeds (0 means PRNG_ZERO_SEED; while BUSY, when "
            "the operation ends), a read returns the current state (save it to "
            "resume the sample stream)",
            reset=PRNG_ZERO_SEED,
        ),
        "COUNT": _register(0x28, READ_WRITE, "SAMPLE / SAMPLE_UNIFORM: samples in this batch (1..MAX_COUNT)"),
        "STRIDE": _register(
            0x2C,
            READ_WRITE,
            "SAMPLE / SAMPLE_UNIFORM: stratum width as a UQ0.32 fraction, "
            "floor((2**32 - 1) / COUNT); START refuses COUNT * STRIDE >= 2**32",
        ),
        "NONZERO": _register(0x30, READ_ONLY, "Leaves whose priority is not 0"),
        "CAPACITY": _register(0x34, READ_ONLY, "Build parameter: leaves (K**LEVELS)"),
    }
)


@dataclass(frozen=True)
class ReplaySpec:
    """Build parameters of one replay core: a K-ary sum tree with one memory bank per level.

    Level 0 is the root (a register, read as TOTAL), level ``levels`` holds the leaves. Level ``l`` has ``k**l``
    nodes of :meth:`level_width` bits, stored as ``k`` banks (one per child position) of ``k**(l-1)`` words, so the
    ``k`` children of a node are read in one cycle (the HDL keeps the ``k`` banks side by side as the columns of one
    ``k * level_width``-bit memory, so block RAM and URAM are filled to their width). Node widths grow by ``log2(k)``
    bits per level towards the root, so every node holds the exact integer sum of its leaves and can never overflow.

    Stream formats (8-byte beats, little-endian, ``uint64`` records):

    * set record: bits [31:0] leaf index, bits [63:32] priority code (LEAF format; larger codes saturate to the
      largest leaf code and set SATURATED; an index >= capacity drops the record and sets ERR_CONFIG);
    * uniform record (SAMPLE_UNIFORM input): bits [31:0] a uniform ``u`` in [0, 2**32), bits [63:32] ignored;
    * result record: bits [31:0] sampled leaf index, bits [63:32] its priority code;
    * dump: one ``uint32`` leaf code per leaf, leaves in index order (two per beat).

    Stratified sampling of batch ``n`` with stride ``S = floor((2**32 - 1) / n)``: sample ``j`` uses the fraction
    ``x_j = j*S + (u_j*S >> 32)`` (UQ0.32, always below ``n*S < 2**32``) and the target
    ``(x_j * TOTAL) >> 32 < TOTAL``; the descent picks at each level the first child whose running sum exceeds the
    target, so a zero-priority leaf is never returned.
    """

    k: int = 16
    """fan-out of the sum tree (a power of two)"""
    levels: int = 4
    """levels below the root; capacity = k ** levels"""
    leaf: QFormat = QFormat(16, 10, signed=False)
    """format of a leaf priority (unsigned): UQ6.10 holds priorities up to ~64 in steps of ~1e-3"""
    run_length: int = 32
    """input records per run in q8-runs mode: one SCALE and one OFFSET per lane and run, as the OCP Microscaling
    formats share one scale per 32 elements (measured on PPO rollouts: per-lane runs of 32 cut the advantage error of
    one block per operation about 11x, for 2 more bits per element)"""
    stream_bytes: int = 8
    """AXI-Stream TDATA width in bytes: one record per beat"""
    max_count: int = 1 << 20
    """largest sample batch (COUNT)"""
    uram_min_bits: int = field(default=0, compare=False, repr=False)
    """memories of at least this many bits are UltraRAM (``ram_style = "ultra"``), the others block RAM; 0: none
    (the part has no UltraRAM). A property of the target part, not of the core: :class:`BoardSpec` sets it from its
    part (:func:`part_uram_min_bits`), no register reports it, and it takes no part in comparing specs"""

    @property
    def sample_depth(self) -> int:
        """Pipeline depth of a SAMPLE batch: CYCLES = COUNT + sample_depth when the output stream takes a beat per
        cycle.

        The HDL's, derived from ``k``, ``levels`` and the root's width (so ``dataclasses.replace`` of any of them
        follows): ``3 + front + levels * (4 + ceil(log2(k - 1))) + 1``: 3 cycles of START checks, the target stages
        ``front`` (u, the u * S multiplier, x, the x * TOTAL multiplier: a multiplier takes one edge for its 17 x 17
        tiles and one per level of its adder tree), per level the read, the read-data register, the running-sum
        stages, the subtract and the pick, the output register; 12 + 8 * levels for k = 16 and a root of at most 34
        bits. SAMPLE_UNIFORM counts from its first input beat, after the checks: 3 cycles less.
        """

        def mul_latency(a_bits: int, b_bits: int) -> int:
            terms = -(-a_bits // 17) * -(-b_bits // 17)
            return 1 + (terms - 1).bit_length()

        front = 1 + mul_latency(32, 32) + 1 + mul_latency(32, self.level_width(0))
        descend = 4 + (self.k - 2).bit_length()
        return 3 + front + self.levels * descend + 1

    @property
    def set_depth(self) -> int:
        """Pipeline depth of a set batch: CYCLES = records + set_depth when the input stream delivers a beat per
        cycle (the HDL's ``3 * levels + 1``: the input register, a read, a read-data and a write edge per level)."""
        return 3 * self.levels + 1

    def __post_init__(self) -> None:
        if self.k < 2 or self.k & (self.k - 1) or self.k > 64:
            raise ValueError(f"ReplaySpec.k must be a power of two in [2, 64], not {self.k!r}")
        if not 1 <= self.levels <= 16:
            raise ValueError(f"ReplaySpec.levels must be in [1, 16], not {self.levels!r}")
        if self.capacity > 1 << 30:
            raise ValueError(f"ReplaySpec capacity k**levels must be at most 2**30, not {self.capacity}")
        if self.leaf.signed or not 2 <= self.leaf.width <= 32:
            raise ValueError(f"ReplaySpec.leaf must be unsigned and 2..32 bits wide, not {self.leaf}")
        if self.level_width(0) > 62:
            raise ValueError(f"ReplaySpec: the root would need {self.level_width(0)} bits (at most 62)")
        if self.stream_bytes != 8:
            raise ValueError(
                f"ReplaySpec.stream_bytes must be 8 (one 64-bit record per beat), not {self.stream_bytes!r}"
            )
        if not 1 <= self.max_count <= 1 << 23:
            raise ValueError(f"ReplaySpec.max_count must be in [1, 2**23], not {self.max_count!r}")

    @property
    def capacity(self) -> int:
        """number of leaves"""
        return self.k**self.levels

    @property
    def dump_cycles(self) -> int:
        """CYCLES of a DUMP when the output stream takes a beat per cycle: ``capacity / 2 + 3`` (one beat of two
        leaf codes per cycle; START, the leaf memory read, its copy in a register, the pair multiplexer into the
        output register)"""
        return self.capacity // 2 + 3

    @property
    def k_bits(self) -> int:
        """log2(k): bits of a child position"""
        return self.k.bit_length() - 1

    @property
    def index_bits(self) -> int:
        """bits of a leaf index"""
        return self.levels * self.k_bits

    def level_width(self, level: int) -> int:
        """bits of a node at ``level`` (0 = root, ``levels`` = leaves): wide enough that it never overflows."""
        if not 0 <= level <= self.levels:
            raise ValueError(f"level must be in [0, {self.levels}], not {level!r}")
        return self.leaf.width + (self.levels - level) * self.k_bits

    @staticmethod
    def stride(count: int) -> int:
        """The STRIDE register for a batch of ``count`` samples: floor((2**32 - 1) / count)."""
        if count < 1:
            raise ValueError(f"count must be >= 1, not {count!r}")
        return ((1 << 32) - 1) // count

    def parameter_registers(self) -> dict[str, int]:
        """Values of the read-only identity and build-parameter registers, FORMAT packed by its field table."""
        fields = REPLAY_REGISTERS["FORMAT"]["fields"]
        packed = {"LEAF_W": self.leaf.width, "LEAF_FRAC": self.leaf.frac}
        return {
            "ID": REPLAY_REGISTERS["ID"]["reset"],
            "K": self.k,
            "LEVELS": self.levels,
            "CAPACITY": self.capacity,
            "FORMAT": sum(value << fields[name]["bit_offset"] for name, value in packed.items()),
        }


# ---------------------------------------------------------------------------------------------------------------
# ParSa core (OPaL parallel Sarsa): tile-coded linear Sarsa in fixed point, a controller and parallel workers
# ---------------------------------------------------------------------------------------------------------------

PARSA_MAGIC = 0x5A25
PARSA_VLNV = "pynq-rl.org:rl:parsa_core:1.0"


class ParsaMode(enum.IntEnum):
    """CTRL.MODE of the ParSa core: what one START does."""

    ACT = 0
    """input: state records until TLAST; output: one action record per state record"""
    CONFIG = 1
    """input: N_DIMS dimension records then N_TILINGS tiling descriptors (two words each); no output"""
    LOAD_POLICY = 2
    """input: every policy row of every worker (WORKERS x TILES_PER_WORKER rows of MAX_ACTIONS values)"""
    DUMP_POLICY = 3
    """output: every policy row, in the LOAD_POLICY order"""
    CLEAR = 4
    """no streams: every policy value 0, every key forgets its previous state-action and pending reward"""
    MAILBOX = 5
    """no streams: ACT on the one state record in the mailbox window (MBOX_KEY, MBOX_REWARD, MBOX_STATE_*); its
    action record's header goes to MBOX_ACTION and MBOX_Q"""


class ParsaFlag(enum.IntFlag):
    """Flags of a state record's header."""

    REWARD = 1 << 0
    """the record carries the reward for the key's previous action"""
    TERMINAL = 1 << 1
    """the key's episode ended in this state: update with delta = r - q(s, a), then forget; no action chosen"""


PARSA_NO_ACTION = 0xFFFF
"""action field of the output record of a TERMINAL or rejected state record"""

PARSA_MBOX_STATE_WORDS = 32
"""state words the mailbox window holds (MBOX_STATE_0..31): the largest MAX_DIMS of a build"""

#: The mailbox: one state record written as one burst of 32-bit registers, in the record's own little-endian word
#: order (header low word, reward, then the state words), so a driver writes ``record.view(uint32)`` into it with one
#: ``mmio.array`` slice assignment; START with MODE = MAILBOX acts on it and MBOX_ACTION / MBOX_Q take the action
#: record's header. No DMA: a decision is ``N_DIMS + 4`` bus accesses (the burst, START, one MBOX_ACTION read).
PARSA_MBOX_FLAGS = tuple(
    sorted(STATUS_REGISTER["fields"], key=lambda name: STATUS_REGISTER["fields"][name]["bit_offset"])
)
"""the STATUS flags MBOX_ACTION carries (by name: fields of both registers), from MBOX_ACTION bit 24 up"""
_PARSA_MAILBOX = {
    "MBOX_ACTION": _register(
        0x64,
        READ_ONLY,
        "Mailbox result: the last MAILBOX decision's action and the live "
        "STATUS flags; while a MAILBOX decision runs, a read is answered when "
        "it is DONE (or after ParsaSpec.mailbox_wait cycles, DONE still 0)",
        {
            "ACTION": (0, 16, "chosen action (PARSA_NO_ACTION for a TERMINAL or rejected record)"),
            "EXPLORED": (16, 1, "the action was the epsilon-greedy random choice"),
            **{name: (24 + i, 1, f"STATUS.{name} at the time of the read") for i, name in enumerate(PARSA_MBOX_FLAGS)},
        },
    ),
    "MBOX_Q": _register(
        0x68, READ_ONLY, "Mailbox result: q(s, a) of the last MAILBOX decision's action (int32 value code)"
    ),
    "MBOX_KEY": _register(
        0x70,
        WRITE_ONLY,
        "Mailbox record word 0: the state record's header bits [31:0]",
        {
            "KEY": (0, 16, "key (agent or flow)"),
            "FLAGS": (16, 8, "flags (ParsaFlag: REWARD, TERMINAL)"),
        },
    ),
    "MBOX_REWARD": _register(
        0x74, WRITE_ONLY, "Mailbox record word 1: reward (int32 value code, saturated to VALUE_W)"
    ),
    **{
        f"MBOX_STATE_{i}": _register(
            0x78 + 4 * i, WRITE_ONLY, f"Mailbox record word {i + 2}: state word {i} (int32, STATE format)"
        )
        for i in range(PARSA_MBOX_STATE_WORDS)
    },
}

PARSA_REGISTERS = MappingProxyType(
    {
        **_common_registers(PARSA_MAGIC),
        "MAX_DIMS": _register(0x10, READ_ONLY, "Build parameter: largest state dimension"),
        "MAX_ACTIONS": _register(0x14, READ_ONLY, "Build parameter: largest number of actions"),
        "WORKERS": _register(0x18, READ_ONLY, "Build parameter: parallel tile units"),
        "FORMAT": _register(
            0x1C,
            READ_ONLY,
            "Build parameters: widths and formats",
            {
                "VALUE_W": (0, 8, "bits of a policy value (signed)"),
                "STATE_FRAC": (8, 8, "fractional bits of state words (int32)"),
                "COEF_FRAC": (16, 8, "fractional bits of ALPHA, GAMMA, EPSILON, EPSILON_DECAY (unsigned)"),
                "MAX_SET_DIMS": (24, 8, "largest number of dimensions of one tiling"),
            },
        ),
        "TILES_PER_WORKER": _register(0x20, READ_ONLY, "Build parameter: policy rows in each worker's bank"),
        "MAX_TILINGS": _register(0x24, READ_ONLY, "Build parameter: tilings one worker can own"),
        "KEYS": _register(0x28, READ_ONLY, "Build parameter: keys (agents/flows) with their own previous state-action"),
        "N_DIMS": _register(0x2C, READ_WRITE, "State dimensions in use (1..MAX_DIMS); set before CONFIG"),
        "N_ACTIONS": _register(0x30, READ_WRITE, "Actions in use (1..MAX_ACTIONS)"),
        "N_TILINGS": _register(0x34, READ_WRITE, "Tiling descriptors in the CONFIG stream (1..WORKERS*MAX_TILINGS)"),
        "FRAC_BITS": _register(
            0x38,
            READ_WRITE,
            "Fractional bits of policy values, rewards and q values (the run-time "
            "Q format; kept with the policy, the arithmetic does not depend on it)",
        ),
        "ALPHA": _register(0x3C, READ_WRITE, "Step size per tiling, unsigned with COEF_FRAC fractional bits (<= 1.0)"),
        "GAMMA": _register(0x40, READ_WRITE, "Discount, unsigned with COEF_FRAC fractional bits (<= 1.0)"),
        "EPSILON": _register(
            0x44,
            READ_WRITE,
            "Exploration probability, unsigned with COEF_FRAC fractional bits "
            "(<= 1.0); live: decays after every chosen action (a write while BUSY "
            "acts when the operation ends)",
        ),
        "EPSILON_DECAY": _register(
            0x48, READ_WRITE, "Factor applied to EPSILON after every chosen action (<= 1.0)", reset=1 << 16
        ),  # 1.0 in UQ1.16 (ParsaSpec.coef): no decay until configured
        "OPTIONS": _register(
            0x4C,
            READ_WRITE,
            "Run-time options",
            {
                "ONLINE": (0, 1, "apply Sarsa updates"),
                "EMIT_VALUES": (1, 1, "follow each action record with the N_ACTIONS q values"),
            },
        ),
        "SEED": _register(
            0x50,
            READ_WRITE,
            "PRNG state: a write reseeds (0 means PRNG_ZERO_SEED; while BUSY, when "
            "the operation ends), a read returns the current state",
            reset=PRNG_ZERO_SEED,
        ),
        "REWARD_KEY": _register(0x54, READ_WRITE, "Key addressed by the next REWARD write"),
        "REWARD": _register(
            0x58,
            READ_WRITE,
            "Writing it stores a pending reward (value code) for REWARD_KEY, used by "
            "that key's next state record without the REWARD flag (while BUSY: "
            "stored when the operation ends, for REWARD_KEY then)",
        ),
        "CYCLES_ACT": _register(0x5C, READ_ONLY, "Cycles from a state record's last beat to its action record"),
        "CYCLES_UPDATE": _register(0x60, READ_ONLY, "Cycles of the Sarsa update pass of the last state record"),
        **_PARSA_MAILBOX,
    }
)
PARSA_MBOX_WINDOW = ("MBOX_KEY", "MBOX_REWARD", *(f"MBOX_STATE_{i}" for i in range(PARSA_MBOX_STATE_WORDS)))
"""the mailbox window's registers in record order (consecutive words from MBOX_KEY)"""


@dataclass(frozen=True)
class ParsaSpec:
    """Build parameters of one ParSa core.

    The policy is banked by worker: worker ``w`` owns some tilings (the driver assigns them, heaviest first) and a
    bank of ``tiles_per_worker`` rows of ``max_actions`` values; a tiling's tiles are consecutive rows from its
    descriptor's base. All workers read one row per cycle, so a state costs one cycle per tiling of the busiest
    worker. Arithmetic (the model :mod:`pynq_rl.overlay.models.parsa` is the contract):

    * dimension ``d`` (record: OFFSET ``o_d`` in STATE format, SCALE ``c_d`` in UQ8.24):
      ``u_d = min(((clamp(s_d - o_d, 0, 2**31 - 1) * c_d) >> 24), 2**16 - 1)``, the position in the dimension's range
      as UQ0.16 (states outside the bounds clamp to its edges);
    * tiling (descriptor: dims, ``tiles``, ``n_t``, ``shift``, ``base``): coordinate ``t_j = (u_{dim_j} * tiles +
      shift) >> 16``, row ``base + horner(t, n_t)`` (first dim most significant; no dims: the bias row ``base``);
    * ``q[a] = sat(sum over tilings of row[a])``; action: a PRNG step ``r``; explore when ``(r & 0xFFFF) < EPSILON``
      (then ``a = ((r >> 16) * N_ACTIONS) >> 16``), else the lowest-index argmax; then
      ``EPSILON = (EPSILON * EPSILON_DECAY) >> COEF_FRAC`` (truncated, so any factor below 1.0 takes EPSILON to 0;
      rounding half up would stall it where ``EPSILON * (1 - EPSILON_DECAY) < 1/2``);
    * Sarsa (ONLINE, a reward present, the key holds a previous (s, a, q)): ``delta = sat(r + rnd(GAMMA * q[a'])
      - q)`` (``sat(r - q)`` when TERMINAL), every row of the previous state gets ``row[a] = sat(row[a] +
      rnd(ALPHA * delta))``; q(s', .) is computed before the update; the key then stores (s', a', q[a']).

    ``rnd(c * x) = (c * x + 2**(COEF_FRAC-1)) >> COEF_FRAC`` (round half up), ``sat`` saturates to VALUE_W bits.

    Streams (8-byte beats, little-endian ``uint64`` words):

    * dimension record (CONFIG): bits [31:0] OFFSET (int32), [63:32] SCALE (uint32);
    * tiling descriptor (CONFIG), two words: word 0 bits [7:0] worker, [15:8] number of dims (0..max_set_dims),
      [23:16] tiles per dim, [31:24] ``n_t`` (coordinates per dim: tiles, or tiles + 1 for shifted copies),
      [63:32] base row; word 1 bits [8*j+7:8*j] dim ``j`` (j < 4), [47:32] shift (UQ0.16);
    * state record (ACT): word 0 bits [15:0] key, [23:16] flags (:class:`ParsaFlag`), [63:32] reward (int32 value
      code, saturated to VALUE_W); then ``ceil(N_DIMS / 2)`` words of two int32 state words (STATE format);
    * action record (ACT): bits [15:0] action (``PARSA_NO_ACTION`` for TERMINAL or rejected records), [16] explored,
      [63:32] ``q[a]`` (int32); with EMIT_VALUES, ``ceil(N_ACTIONS / 2)`` words of two int32 q values follow;
    * policy rows (LOAD/DUMP): worker-major, row by row, ``max_actions`` int32 values per row (two per word).

    The mailbox (MAILBOX, no streams): registers MBOX_KEY, MBOX_REWARD, MBOX_STATE_0.. hold one state record's
    32-bit words in stream order; the core acts on it exactly as on a one-record ACT stream (same CYCLES) and
    MBOX_ACTION / MBOX_Q take its action record's header (action, explored; q[a]).
    """

    max_dims: int = 20
    """largest state dimension"""
    max_actions: int = 10
    """largest number of actions"""
    workers: int = 4
    """parallel tile units"""
    tiles_per_worker: int = 1024
    """policy rows in each worker's bank"""
    max_tilings: int = 64
    """tilings one worker can own"""
    max_set_dims: int = 4
    """largest number of dimensions of one tiling"""
    keys: int = 16
    """keys (independent agents or flows), each with its own previous state-action and pending reward"""
    value_w: int = 16
    """bits of a policy value (8, 16 or 32)"""
    state: QFormat = QFormat(32, 16)
    """format of state words and dimension offsets"""
    coef: QFormat = QFormat(17, 16, signed=False)
    """format of ALPHA, GAMMA, EPSILON and EPSILON_DECAY: UQ1.16 holds 1.0 exactly"""
    run_length: int = 32
    """input records per run in q8-runs mode: one SCALE and one OFFSET per lane and run, as the OCP Microscaling
    formats share one scale per 32 elements (measured on PPO rollouts: per-lane runs of 32 cut the advantage error of
    one block per operation about 11x, for 2 more bits per element)"""
    stream_bytes: int = 8
    """AXI-Stream TDATA width in bytes"""
    act_depth: int = 23
    """CYCLES_ACT = n_dims + (tilings of the busiest worker) + act_depth (the HDL's depth:
    ``pynq_rl/overlay/hdl/parsa/core.py`` ACT_DEPTH)"""
    update_depth: int = 9
    """CYCLES_UPDATE = (tilings of the busiest worker) + update_depth (the HDL's depth: ``core.py`` UPDATE_DEPTH)"""
    mailbox_wait: int = 250
    """wait states a read of MBOX_ACTION may be held while a MAILBOX decision runs (then it answers with DONE = 0
    and the driver reads again): covers a decision of the OPaL shape on either board (95 and 129 cycles); at most
    1,000, below the 1,024 cycles the ``rtl`` backend's AXI-Lite master waits for an answer"""
    uram_min_bits: int = field(default=0, compare=False, repr=False)
    """memories of at least this many bits are UltraRAM (``ram_style = "ultra"``), the others block RAM; 0: none
    (the part has no UltraRAM). A property of the target part, not of the core: :class:`BoardSpec` sets it from its
    part (:func:`part_uram_min_bits`), no register reports it, and it takes no part in comparing specs"""

    def __post_init__(self) -> None:
        if self.value_w not in (8, 16, 32):
            raise ValueError(f"ParsaSpec.value_w must be 8, 16 or 32, not {self.value_w!r}")
        limits = {
            "max_dims": (1, PARSA_MBOX_STATE_WORDS),
            "mailbox_wait": (0, 1000),
            "max_actions": (1, 64),
            "workers": (1, 64),
            "tiles_per_worker": (1, 1 << 20),
            "max_tilings": (1, 1024),
            "max_set_dims": (1, 4),
            "keys": (1, 1 << 16),
        }
        for name, (lo, hi) in limits.items():
            value = getattr(self, name)
            if not lo <= value <= hi:
                raise ValueError(f"ParsaSpec.{name} must be in [{lo}, {hi}], not {value!r}")
        if self.stream_bytes != 8:
            raise ValueError(f"ParsaSpec.stream_bytes must be 8, not {self.stream_bytes!r}")
        if self.state != QFormat(32, 16) or self.coef != QFormat(17, 16, signed=False):
            raise ValueError("ParsaSpec.state must be Q15.16 and coef UQ1.16 (the stream and register formats)")

    @property
    def value(self) -> QFormat:
        """format of policy values, rewards and q values, at ``frac_bits`` fractional bits"""
        return QFormat(self.value_w, 0)

    def state_record_words(self, n_dims: int) -> int:
        """64-bit words of one state record"""
        return 1 + (n_dims + 1) // 2

    def action_record_words(self, n_actions: int, emit_values: bool) -> int:
        """64-bit words of one action record"""
        return 1 + ((n_actions + 1) // 2 if emit_values else 0)

    @property
    def policy_words(self) -> int:
        """64-bit words of a full policy dump"""
        return self.workers * self.tiles_per_worker * ((self.max_actions + 1) // 2)

    def parameter_registers(self) -> dict[str, int]:
        """Values of the read-only identity and build-parameter registers, FORMAT packed by its field table."""
        fields = PARSA_REGISTERS["FORMAT"]["fields"]
        packed = {
            "VALUE_W": self.value_w,
            "STATE_FRAC": self.state.frac,
            "COEF_FRAC": self.coef.frac,
            "MAX_SET_DIMS": self.max_set_dims,
        }
        return {
            "ID": PARSA_REGISTERS["ID"]["reset"],
            "MAX_DIMS": self.max_dims,
            "MAX_ACTIONS": self.max_actions,
            "WORKERS": self.workers,
            "TILES_PER_WORKER": self.tiles_per_worker,
            "MAX_TILINGS": self.max_tilings,
            "KEYS": self.keys,
            "FORMAT": sum(value << fields[name]["bit_offset"] for name, value in packed.items()),
        }


# ---------------------------------------------------------------------------------------------------------------
# Boards: overlay composition and address map
# ---------------------------------------------------------------------------------------------------------------


#: UltraRAM blocks (URAM288) of the supported parts that have any, by device (the part name before its package):
#: UltraScale+ only, and not every UltraScale+ part (DS891). Parts not listed have none.
ULTRARAM_BLOCKS: Mapping[str, int] = MappingProxyType({"xczu7ev": 96})
#: Bits of one URAM288 (4K x 72): the smallest memory :func:`part_uram_min_bits` sends to UltraRAM.
URAM288_BITS = 4096 * 72


def part_uram_min_bits(part: str) -> int:
    """The ``uram_min_bits`` of a core built for ``part``: one URAM288's bits where the part has UltraRAM, else 0.

    A memory of at least a URAM288 fills the block's 4K x 72 (a replay tree level of 4,096+ words, a ParSa policy
    bank of 4,096 rows) and takes far fewer blocks there than in RAMB36; a smaller one would leave most of a
    288 Kbit block empty, so it stays block RAM (or LUT-RAM), where Vivado's defaults put it.
    """
    return URAM288_BITS if ULTRARAM_BLOCKS.get(part.split("-")[0].lower(), 0) else 0


@dataclass(frozen=True)
class CoreSlot:
    """One core in an overlay: its hierarchy name, spec, and where its registers and its DMA sit."""

    name: str
    """hierarchy name; the core is ``ol.<name>.core`` and its DMA ``ol.<name>.dma``"""
    spec: object
    """the core's build parameters (GaeSpec, ReplaySpec or ParsaSpec)"""
    core_offset: int
    """offset of the core's AXI-Lite window from the board's GP base"""
    dma_offset: int
    """offset of the AXI DMA's AXI-Lite window from the board's GP base"""
    window: int = 0x1_0000
    """bytes of each AXI-Lite window"""


@dataclass(frozen=True)
class BoardSpec:
    """A supported board: its PS, the AXI ports the overlay uses and the cores it carries."""

    name: str
    """board name as PYNQ reports it (``pynq.Device.active_device.name``)"""
    part: str
    """FPGA part"""
    ps_vlnv: str
    """VLNV of the processing system IP"""
    arch: str
    """'zynq' (Zynq-7000) or 'zynq_ultrascale' (Zynq UltraScale+)"""
    master_port: str
    """PS master port that carries AXI-Lite"""
    dma_port: str
    """PS slave port the DMAs write through"""
    gp_base: int
    """base address of the master port's window"""
    fclk_mhz: float
    """PL clock 0, which clocks the cores"""
    cores: tuple[CoreSlot, ...] = field(default_factory=tuple)
    """the cores in this board's overlay"""
    board_part_pattern: str = ""
    """Vivado board part as a ``get_board_parts`` pattern, version left open (``*:pynq-z2:part0:*``): the build
    takes the newest installed board files instead of pinning a version"""

    def __post_init__(self) -> None:
        # the memory target is the part's: each core spec that has one gets it from here, not from a literal per slot
        threshold = part_uram_min_bits(self.part)
        cores = tuple(
            replace(slot, spec=replace(slot.spec, uram_min_bits=threshold))
            if isinstance(slot.spec, (ReplaySpec, ParsaSpec))
            else slot
            for slot in self.cores
        )
        object.__setattr__(self, "cores", cores)

    def slot(self, name: str) -> CoreSlot:
        """The core slot called ``name``; ``KeyError`` names the cores that exist."""
        for slot in self.cores:
            if slot.name == name:
                return slot
        raise KeyError(f"board {self.name} has no core {name!r}; it has {[s.name for s in self.cores]}")


BOARDS: Mapping[str, BoardSpec] = MappingProxyType(
    {
        "Pynq-Z2": BoardSpec(
            name="Pynq-Z2",
            part="xc7z020clg400-1",
            ps_vlnv="xilinx.com:ip:processing_system7:5.5",
            arch="zynq",
            master_port="M_AXI_GP0",
            dma_port="S_AXI_HP0",
            gp_base=0x4000_0000,
            fclk_mhz=100.0,
            cores=(
                CoreSlot("gae", GaeSpec(lanes=8, stream_bytes=8), 0x0_0000, 0x1_0000),
                CoreSlot("replay", ReplaySpec(k=16, levels=4), 0x2_0000, 0x3_0000),
                CoreSlot(
                    "parsa", ParsaSpec(workers=4, tiles_per_worker=1024, max_tilings=64, keys=16), 0x4_0000, 0x5_0000
                ),
            ),
            board_part_pattern="*:pynq-z2:part0:*",
        ),
        "ZCU106": BoardSpec(
            name="ZCU106",
            part="xczu7ev-ffvc1156-2-e",
            ps_vlnv="xilinx.com:ip:zynq_ultra_ps_e:3.5",
            arch="zynq_ultrascale",
            master_port="M_AXI_HPM0_FPD",
            dma_port="S_AXI_HP0_FPD",
            gp_base=0xA000_0000,
            fclk_mhz=187.5,
            cores=(
                CoreSlot("gae", GaeSpec(lanes=64, stream_bytes=16), 0x0_0000, 0x1_0000),
                CoreSlot("replay", ReplaySpec(k=16, levels=5), 0x2_0000, 0x3_0000),
                # 8 workers: with 16, ParSa's policy banks (48 URAM) and key rows (16) plus the
                # replay tree's 62 URAM exceed the XCZU7EV's 96 (whole-overlay synthesis)
                CoreSlot(
                    "parsa", ParsaSpec(workers=8, tiles_per_worker=4096, max_tilings=32, keys=256), 0x4_0000, 0x5_0000
                ),
            ),
            board_part_pattern="xilinx.com:zcu106:part0:*",
        ),
    }
)

#: The board assumed off-board when none is named.
DEFAULT_BOARD = "Pynq-Z2"

#: The AXI DMA's direct-register-mode registers (PG021, table 2-6) that the emulated DMA serves and the stock
#: ``pynq.lib.dma.DMA`` driver uses. MM2S reads memory into the core's input stream; S2MM writes its output.
AXI_DMA_REGISTERS = MappingProxyType(
    {
        "MM2S_DMACR": _register(
            0x00,
            READ_WRITE,
            "MM2S control",
            {
                "RS": (0, 1, "run/stop"),
                "Reset": (2, 1, "soft reset (auto-clears)"),
                "IOC_IrqEn": (12, 1, "IOC irq"),
                "Err_IrqEn": (14, 1, "error irq"),
            },
            reset=0x0001_0000,
            pulse={"Reset": True},
        ),
        "MM2S_DMASR": _register(
            0x04,
            READ_WRITE,
            "MM2S status (irq bits write-1-to-clear)",
            {
                "Halted": (0, 1, "channel halted"),
                "Idle": (1, 1, "channel idle"),
                "DMAIntErr": (4, 1, "internal error"),
                "DMASlvErr": (5, 1, "slave error"),
                "DMADecErr": (6, 1, "decode error"),
                "IOC_Irq": (12, 1, "completed"),
                "Err_Irq": (14, 1, "error irq"),
            },
            reset=0x0001_0001,
        ),
        "MM2S_SA": _register(0x18, READ_WRITE, "MM2S source address"),
        "MM2S_SA_MSB": _register(0x1C, READ_WRITE, "MM2S source address, upper 32 bits"),
        "MM2S_LENGTH": _register(0x28, READ_WRITE, "MM2S bytes to transfer; writing it starts the transfer"),
        "S2MM_DMACR": _register(
            0x30,
            READ_WRITE,
            "S2MM control",
            {
                "RS": (0, 1, "run/stop"),
                "Reset": (2, 1, "soft reset (auto-clears)"),
                "IOC_IrqEn": (12, 1, "IOC irq"),
                "Err_IrqEn": (14, 1, "error irq"),
            },
            reset=0x0001_0000,
            pulse={"Reset": True},
        ),
        "S2MM_DMASR": _register(
            0x34,
            READ_WRITE,
            "S2MM status (irq bits write-1-to-clear)",
            {
                "Halted": (0, 1, "channel halted"),
                "Idle": (1, 1, "channel idle"),
                "DMAIntErr": (4, 1, "internal error"),
                "DMASlvErr": (5, 1, "slave error"),
                "DMADecErr": (6, 1, "decode error"),
                "IOC_Irq": (12, 1, "completed"),
                "Err_Irq": (14, 1, "error irq"),
            },
            reset=0x0001_0001,
        ),
        "S2MM_DA": _register(0x48, READ_WRITE, "S2MM destination address"),
        "S2MM_DA_MSB": _register(0x4C, READ_WRITE, "S2MM destination address, upper 32 bits"),
        "S2MM_LENGTH": _register(
            0x58, READ_WRITE, "S2MM buffer bytes; writing it arms the channel, reads back bytes received"
        ),
    }
)

#: VLNV of the AXI DMA (PG021) every core streams through, in simple (non scatter-gather) mode.
AXI_DMA_VLNV = "xilinx.com:ip:axi_dma:7.1"
#: Largest simple-mode transfer: c_sg_length_width = 26 bits.
AXI_DMA_LENGTH_WIDTH = 26

CORE_REGISTERS: Mapping[str, Mapping[str, dict]] = MappingProxyType(
    {
        "gae": GAE_REGISTERS,
        "replay": REPLAY_REGISTERS,
        "parsa": PARSA_REGISTERS,
    }
)
CORE_VLNVS: Mapping[str, str] = MappingProxyType({"gae": GAE_VLNV, "replay": REPLAY_VLNV, "parsa": PARSA_VLNV})
CORE_MAGICS: Mapping[str, int] = MappingProxyType({"gae": GAE_MAGIC, "replay": REPLAY_MAGIC, "parsa": PARSA_MAGIC})
#: Per core: the values of its CTRL.MODE field (what one START does).
CORE_MODES: Mapping[str, type[enum.IntEnum]] = MappingProxyType(
    {"gae": GaeMode, "replay": ReplayMode, "parsa": ParsaMode}
)


def board(name: str | BoardSpec | None) -> BoardSpec:
    """The spec of board ``name`` (case-insensitive; ``None`` gives the default board; a BoardSpec passes through,
    e.g. a custom build made with ``dataclasses.replace``)."""
    if isinstance(name, BoardSpec):
        return name
    if name is None:
        name = DEFAULT_BOARD
    for key, spec in BOARDS.items():
        if key.lower() == str(name).lower():
            return spec
    raise ValueError(f"unsupported board: expected one of {sorted(BOARDS)}, not {name!r}")


for _core, _table in {**CORE_REGISTERS, "axi_dma": AXI_DMA_REGISTERS}.items():
    check_register_table(_core, _table)
