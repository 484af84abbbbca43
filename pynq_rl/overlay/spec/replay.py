"""The replay core (on-chip RMM), a K-ary sum tree for prioritized experience replay: its magic number and VLNV,
the CTRL.MODE values (:class:`ReplayMode`), its register table (``REPLAY_REGISTERS``) and its build parameters with
the stream formats and pipeline depths derived from them (:class:`ReplaySpec`).

Also the cores' xorshift32 PRNG (:data:`PRNG_ZERO_SEED`, :data:`PRNG_SHIFTS`, :func:`xorshift32_step`): the replay
core was its first user, and the ParSa core imports it from here. This module imports only the register machinery
and :class:`~pynq_rl.overlay.spec.qformat.QFormat`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from types import MappingProxyType

from .qformat import QFormat
from .registers import READ_ONLY, READ_WRITE, _common_registers, _register

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
