"""Widths derived from a :class:`~pynq_rl.overlay.spec.ParsaSpec`, the signal bundle the controller broadcasts to
the workers, the core's register-side signals, and the bundles between the controller and the rest of the datapath
(:class:`ParsaPhase`, :class:`ParsaRun` out of the controller, :class:`ParsaReport` into it). Defined once here so
the controller, its sub-blocks, the workers and the reduction agree on every field."""

from __future__ import annotations

from dataclasses import dataclass

from myhdl import Signal, intbv

from ...spec import PRNG_ZERO_SEED, ParsaSpec

__all__ = ["ParsaWidths", "WorkerBus", "ParsaConfig", "ParsaPhase", "ParsaRun", "ParsaReport", "DESC_FIELDS"]


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


def _flags(n: int) -> list:
    """``n`` fresh Signal(bool(0))"""
    return [Signal(bool(0)) for _ in range(n)]


class ParsaPhase:
    """The FSM's state as the datapath sees it, decoded by the controller (one instance per core; combinational).

    With SOFT_RESET taken out (a soft reset wins over any state's work): ``starting`` (START in IDLE), ``in_cfg``,
    ``in_load``, ``in_clear``, ``in_dump_read``, ``in_dump_load``, ``in_recv``, ``in_upd``. Whatever SOFT_RESET
    does: ``idle``, ``choosing`` (RUN, the choice cycle), ``deciding`` (RUN at t_last, or HOLD: an action record is
    decided), ``use_dump`` (DUMP_LOAD: the emitter takes a policy row), ``rejecting`` (REJECT); ``key_ren`` (RECV,
    a header word: read its key's memories), ``load_strobe`` (LOAD, an input word for a bank not yet loaded).
    """

    def __init__(self) -> None:
        # combinational signals start at the value their logic gives at power-up: a Verilog simulator evaluates a
        # block whose inputs are registers only when one of them changes (MyHDL evaluates every block at time 0)
        self.idle = Signal(bool(1))
        self.starting, self.in_cfg, self.in_load, self.in_clear = _flags(4)
        self.in_dump_read, self.in_dump_load, self.in_recv, self.in_upd = _flags(4)
        self.choosing, self.deciding, self.use_dump, self.rejecting = _flags(4)
        self.key_ren, self.load_strobe = _flags(2)


class ParsaRun:
    """What the controller holds for the datapath: registers (one instance per core).

    Latched at START (:func:`~.start.run_parameters`): ``n_dims``, ``n_actions``, ``out_words`` (64-bit words of an
    action record), ``alpha``, ``gamma`` (signed operands), ``decay``; ``eps``: the live EPSILON. The stream:
    ``word_count`` (words of this stream, or of this state record, before this one), ``dim_bank`` (the positions
    unit's active dimension bank), ``check_clear`` (pulse: a CONFIG begins, the configuration check restarts). One
    state record's step: ``pos_go`` (pulse: the positions unit starts), ``terminal``, ``batch_last`` (the record
    carried TLAST), ``prev_q`` and ``reward`` (q(s, a) and r of the key's previous step), ``chosen_r``,
    ``explored_r`` and ``chosen_q_r`` (a', whether it explored, q(s', a')), ``t_upd`` (cycles into UPD),
    ``em_release`` (pulse: the emitter's held final word goes, with TLAST if ``em_release_last``).
    """

    def __init__(self, widths: ParsaWidths) -> None:
        spec = widths.spec
        one = 1 << spec.coef.frac
        value = dict(min=-(1 << (widths.vw - 1)), max=1 << (widths.vw - 1))
        self.n_dims = Signal(intbv(0, min=0, max=spec.max_dims + 1))
        self.n_actions = Signal(intbv(0, min=0, max=spec.max_actions + 1))
        self.out_words = Signal(intbv(0, min=0, max=(spec.max_actions + 1) // 2 + 2))
        self.alpha, self.gamma = (Signal(intbv(0, min=-(one << 1), max=one << 1)) for _ in range(2))
        self.decay = Signal(intbv(0)[spec.coef.frac + 1 :])
        self.eps = Signal(intbv(0)[32:])
        self.word_count = Signal(intbv(0)[33:])
        self.dim_bank, self.check_clear, self.pos_go = _flags(3)
        self.terminal, self.batch_last, self.explored_r = _flags(3)
        self.prev_q, self.reward, self.chosen_q_r = (Signal(intbv(0, **value)) for _ in range(3))
        self.chosen_r = Signal(intbv(0)[widths.action_bits :])
        self.t_upd = Signal(intbv(0, min=0, max=spec.max_tilings + spec.update_depth + 2))
        self.em_release, self.em_release_last = _flags(2)


class ParsaReport:
    """What the datapath tells the controller (one instance per core).

    Workers: ``busiest_now`` (tilings of the busiest worker), ``overflow_any``, ``upd_sat_any``; reduce:
    ``q_any_sat``; configuration check: ``cfg_bad``; policy port: ``load_w``, ``load_sat``, ``clear_r``, ``dump_r``,
    ``dump_worker``; row assembler: ``load_sat_now``; emitter: ``em_idle``; record receiver: ``hdr_key``,
    ``hdr_flags``, ``hdr_reward``; key memory: ``hdr_key_lo``, ``prev_action``, ``prev_q``, ``pend_we``,
    ``pend_reward``, ``reward_sat``, ``reward_flag``; choice: ``explore``, ``chosen``, ``eps_next``, ``chosen_q``,
    ``prng``; Sarsa update: ``delta_flag``.
    """

    def __init__(self, widths: ParsaWidths) -> None:
        spec = widths.spec
        value = dict(min=-(1 << (widths.vw - 1)), max=1 << (widths.vw - 1))
        mt, tpw, w = spec.max_tilings, spec.tiles_per_worker, spec.workers
        self.busiest_now = Signal(intbv(0, min=0, max=mt + 1))
        self.overflow_any, self.upd_sat_any, self.q_any_sat, self.cfg_bad = _flags(4)
        self.load_w = Signal(intbv(0, min=0, max=w + 1))
        self.clear_r, self.dump_r = Signal(intbv(0, min=0, max=tpw + 1)), Signal(intbv(0, min=0, max=tpw + 1))
        self.dump_worker = Signal(intbv(0, min=0, max=max(2, w)))
        self.load_sat, self.load_sat_now = _flags(2)
        # combinational, at its power-up value (see ParsaPhase)
        self.em_idle = Signal(bool(1))
        self.hdr_key, self.hdr_flags = Signal(intbv(0)[16:]), Signal(intbv(0)[2:])
        self.hdr_reward = Signal(intbv(0, min=-(1 << 31), max=1 << 31))
        self.hdr_key_lo = Signal(intbv(0)[widths.key_bits :])
        self.prev_action = Signal(intbv(0)[widths.action_bits :])
        self.prev_q, self.pend_reward, self.reward_sat = (Signal(intbv(0, **value)) for _ in range(3))
        self.pend_we, self.reward_flag, self.explore, self.delta_flag = _flags(4)
        self.chosen = Signal(intbv(0)[widths.action_bits :])
        self.eps_next = Signal(intbv(0)[32:])
        self.chosen_q = Signal(intbv(0, **value))
        self.prng = Signal(intbv(PRNG_ZERO_SEED)[32:])
