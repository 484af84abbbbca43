"""The ParSa core (OPaL parallel Sarsa), tile-coded linear Sarsa in fixed point with a controller and parallel
workers: its magic number and VLNV, the CTRL.MODE values (:class:`ParsaMode`), the state-record flags
(:class:`ParsaFlag`), the mailbox window, its register table (``PARSA_REGISTERS``) and its build parameters with the
arithmetic and stream formats (:class:`ParsaSpec`).

One module per core, as for the others; besides the register machinery and
:class:`~pynq_rl.overlay.spec.qformat.QFormat` it takes the shared PRNG's reset state from
:mod:`~pynq_rl.overlay.spec.replay`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from types import MappingProxyType

from .qformat import QFormat
from .registers import READ_ONLY, READ_WRITE, STATUS_REGISTER, WRITE_ONLY, _common_registers, _register
from .replay import PRNG_ZERO_SEED

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
