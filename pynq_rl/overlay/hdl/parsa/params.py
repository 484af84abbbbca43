"""Widths derived from a :class:`~pynq_rl.overlay.spec.ParsaSpec`, the signal bundle the controller broadcasts to
the workers, and the core's register-side signals. Defined once here so the controller, its sub-blocks, the workers
and the reduction agree on every field."""

from __future__ import annotations

from dataclasses import dataclass

from myhdl import Signal, intbv

from ...spec import PRNG_ZERO_SEED, ParsaSpec

__all__ = ["ParsaWidths", "WorkerBus", "ParsaConfig", "DESC_FIELDS"]


def _bits(n: int) -> int:
    """bits of an index in [0, n)"""
    return max(1, (n - 1).bit_length())


@dataclass(frozen=True)
class ParsaWidths:
    """Bit widths of one ParSa build."""

    spec: ParsaSpec

    @property
    def vw(self) -> int:
        """policy value, reward and q width"""
        return self.spec.value_w

    @property
    def ma(self) -> int:
        """actions (columns of a policy row)"""
        return self.spec.max_actions

    @property
    def row_w(self) -> int:
        """bits of one policy row (a worker bank word)"""
        return self.spec.max_actions * self.spec.value_w

    @property
    def row_bits(self) -> int:
        """bits of a row index in a worker's bank"""
        return _bits(self.spec.tiles_per_worker)

    @property
    def dim_bits(self) -> int:
        """bits of a dimension index"""
        return _bits(self.spec.max_dims)

    @property
    def u_depth(self) -> int:
        """entries of the positions memory: every value of a dimension index field"""
        return 1 << self.dim_bits

    @property
    def action_bits(self) -> int:
        """bits of an action index"""
        return _bits(self.spec.max_actions)

    @property
    def key_bits(self) -> int:
        """bits of a key index"""
        return _bits(self.spec.keys)

    @property
    def acc_w(self) -> int:
        """a worker's preference accumulator: max_tilings values summed"""
        return self.spec.value_w + self.spec.max_tilings.bit_length() + 1

    @property
    def sum_w(self) -> int:
        """the reduced preference: every tiling of every worker summed"""
        return self.spec.value_w + (self.spec.workers * self.spec.max_tilings).bit_length() + 1

    @property
    def desc_w(self) -> int:
        """a stored descriptor (see :data:`DESC_FIELDS`)"""
        return sum(width for _, width in self.desc_fields())

    def desc_fields(self) -> list[tuple[str, int]]:
        """(name, width) of the stored descriptor's fields, least significant first"""
        fields = [("base", self.row_bits), ("shift", 16), ("n_t", 8), ("tiles", 8), ("ndims", 3)]
        fields += [(f"dim{j}", self.dim_bits) for j in range(4)]
        return fields

    def desc_offset(self, name: str) -> int:
        """bit offset of a stored descriptor field"""
        offset = 0
        for field_name, width in self.desc_fields():
            if field_name == name:
                return offset
            offset += width
        raise KeyError(name)


DESC_FIELDS = ("base", "shift", "n_t", "tiles", "ndims", "dim0", "dim1", "dim2", "dim3")


class WorkerBus:
    """What the controller broadcasts to every worker (one instance per core).

    CONFIG: ``cfg_begin`` (pulse: shadow tiling counts to 0), ``desc_we`` (pulse: ``desc_word`` goes to worker
    ``desc_worker``'s shadow descriptor bank), ``cfg_commit`` (pulse: the shadow bank becomes the active one).
    ACT: ``act_go`` (pulse: compute the preference vector of the positions in ``u_mem`` for key ``key_base /
    max_tilings``), ``upd_go`` (pulse: add ``increment`` to column ``a_prev`` of the rows the key's previous state
    hit). Policy transfers: ``pol_we`` writes ``pol_wdata`` at row ``pol_addr`` of worker ``pol_worker`` (of every
    worker with ``pol_all``), ``pol_ren`` reads row ``pol_raddr`` of every worker.
    """

    def __init__(self, widths: ParsaWidths) -> None:
        spec = widths.spec
        lo, hi = -(1 << (widths.vw - 1)), (1 << (widths.vw - 1))
        self.cfg_begin, self.desc_we, self.cfg_commit = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.desc_worker = Signal(intbv(0)[8:])
        self.desc_word = Signal(intbv(0)[widths.desc_w :])
        self.act_go, self.upd_go = Signal(bool(0)), Signal(bool(0))
        self.key_base = Signal(intbv(0, min=0, max=spec.keys * spec.max_tilings))
        self.a_prev = Signal(intbv(0)[widths.action_bits :])
        self.increment = Signal(intbv(0, min=lo, max=hi))
        self.pol_we, self.pol_all, self.pol_ren = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.pol_worker = Signal(intbv(0, min=0, max=max(2, spec.workers)))
        self.pol_addr = Signal(intbv(0)[widths.row_bits :])
        self.pol_raddr = Signal(intbv(0)[widths.row_bits :])
        self.pol_wdata = Signal(intbv(0)[widths.row_w :])


class ParsaConfig:
    """Register-side signals of the core (one instance per core).

    Inputs: ``mode``, ``start`` / ``soft_reset`` (pulses), ``n_dims``, ``n_actions``, ``n_tilings``, ``alpha``,
    ``gamma``, ``epsilon`` (written value) and ``epsilon_written`` (pulse), ``epsilon_decay``, ``options``,
    ``seed`` and ``seed_written``, ``reward_key``, ``reward`` and ``reward_written``: the 32-bit registers.
    Outputs: ``busy``, ``done``, ``err_config``, ``err_stream``, ``saturated``, ``cycles``, ``cycles_act``,
    ``cycles_update``, ``epsilon_live`` (EPSILON read), ``seed_live`` (SEED read: the PRNG state).
    """

    def __init__(self, spec: ParsaSpec) -> None:
        r32 = lambda: Signal(intbv(0)[32:])  # noqa: E731 - one line per register below
        self.mode = Signal(intbv(0)[4:])
        self.start, self.soft_reset = Signal(bool(0)), Signal(bool(0))
        self.n_dims, self.n_actions, self.n_tilings = r32(), r32(), r32()
        self.alpha, self.gamma, self.epsilon = r32(), r32(), r32()
        self.epsilon_decay = Signal(intbv(1 << spec.coef.frac)[32:])  # the register's reset value
        self.options = Signal(intbv(0)[2:])
        self.seed = Signal(intbv(PRNG_ZERO_SEED)[32:])
        self.reward_key, self.reward = r32(), r32()
        self.epsilon_written, self.seed_written, self.reward_written = (
            Signal(bool(0)),
            Signal(bool(0)),
            Signal(bool(0)),
        )
        self.busy, self.done = Signal(bool(0)), Signal(bool(0))
        self.err_config, self.err_stream, self.saturated = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.cycles, self.cycles_act, self.cycles_update = r32(), r32(), r32()
        self.epsilon_live = r32()
        self.seed_live = Signal(intbv(PRNG_ZERO_SEED)[32:])
