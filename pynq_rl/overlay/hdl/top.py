"""One AXI wrapper per core: the core behind an AXI4-Lite register file generated from ``spec.py`` and two
AXI4-Stream ports for its DMA. Port names follow Vivado's conventions (``s_axi_control_*``, ``s_axis_*``,
``m_axis_*``, ``aclk``, ``aresetn``) so IP packaging infers the interfaces.
"""

from myhdl import ConcatSignal, Signal, always, always_comb, block, intbv

from .. import spec as S
from .common.axi_lite import AxiLiteBus, axi_lite_regfile
from .common.axis import AxiStream
from .gae.core import CoreConfig, gae_core
from .parsa.core import ParsaConfig, parsa_core
from .parsa.mailbox import parsa_mailbox, window_registers
from .replay.core import ReplayConfig, replay_core

__all__ = [
    "gae_core_top",
    "replay_core_top",
    "parsa_core_top",
    "top_signals",
    "status_word",
    "register_wiring",
    "stream_ports",
    "CORE_TOPS",
    "LIVE_REGISTERS",
]


def top_signals(spec):
    """Fresh top-level port objects of a core top: ``(s_axi_control, s_axis, m_axis)``, the streams
    ``8 * spec.stream_bytes`` bits wide."""
    width = 8 * spec.stream_bytes
    return AxiLiteBus(16), AxiStream(width), AxiStream(width)


def status_word(register, cfg) -> ConcatSignal:
    """The STATUS register of a core, packed as its field table says.

    Field ``NAME`` reads the core's ``cfg.<name>`` signal (``BUSY`` is ``cfg.busy``), which must be as wide as the
    field; bits no field covers read 0. Move a field in ``spec.STATUS_REGISTER`` and this word follows.

    Raises
    ------
    ValueError
        The core has no signal for a field, or one of another width.
    """
    parts, top = [], register["size"]
    for name, fld in sorted(register["fields"].items(), key=lambda item: -item[1]["bit_offset"]):
        source = getattr(cfg, name.lower(), None)
        if source is None or len(source) != fld["bit_width"]:
            raise ValueError(f"STATUS.{name} needs a {fld['bit_width']}-bit signal cfg.{name.lower()}, not {source!r}")
        high = fld["bit_offset"] + fld["bit_width"]
        if top > high:
            parts.append(intbv(0)[top - high :])
        parts.append(source)
        top = fld["bit_offset"]
    if top:
        parts.append(intbv(0)[top:])
    return ConcatSignal(*parts)


def _control_pulses(register, cfg) -> dict:
    """(CTRL, field) -> the core's ``cfg.<name>`` for every pulse field of CTRL (START, SOFT_RESET)."""
    pulses = {}
    for name, fld in register["fields"].items():
        if fld["pulse"]:
            source = getattr(cfg, name.lower(), None)
            if source is None or len(source) != 1:
                raise ValueError(f"CTRL.{name} pulses a 1-bit signal cfg.{name.lower()}, not {source!r}")
            pulses[("CTRL", name)] = source
    return pulses


def register_wiring(table, cfg, spec, live=None, written=None, window=()):
    """What every core top wires the same way around its AXI-Lite register file (:func:`axi_lite_regfile`).

    Read-write registers are stored, reset to their table's ``reset``; STATUS is :func:`status_word`, CYCLES is
    ``cfg.cycles``; the pulse fields of CTRL pulse ``cfg.<field>``; the read-only identity and build-parameter
    registers are ``spec.parameter_registers()``. ``live`` and ``written`` add a core's own live registers and
    write pulses; a write pulse (a write that acts on the core, such as SEED's) is held while ``cfg.busy``, so it
    acts when the operation ends. Registers named in ``window`` are kept by the core, not stored here (the
    register file's ``window`` port).

    Returns ``(storage, status, wiring)``: register name -> stored Signal(32), the STATUS word, and the keyword
    arguments ``live``, ``constants``, ``pulses``, ``written``, ``written_busy`` of :func:`axi_lite_regfile`. The
    top instantiates the register file itself (MyHDL wants instances made in a block's own body) and binds
    ``status`` and the storage it reads to locals, so the Verilog keeps their names.
    """
    storage = {
        name: Signal(intbv(reg["reset"])[32:])
        for name, reg in table.items()
        if reg["access"] != S.READ_ONLY and name not in window
    }
    status = status_word(table["STATUS"], cfg)
    wiring = {
        "live": {"STATUS": status, "CYCLES": cfg.cycles, **(live or {})},
        "constants": spec.parameter_registers(),
        "pulses": _control_pulses(table["CTRL"], cfg),
        "written": written,
        "written_busy": cfg.busy,
    }
    return storage, status, wiring


def _check_live(core: str, live: dict) -> None:
    """Raise if a top's live registers drift from :data:`LIVE_REGISTERS` (the formal harness relies on it)."""
    if set(live) != set(LIVE_REGISTERS[core]):
        raise ValueError(f"{core} top reads {sorted(live)} live, LIVE_REGISTERS says {sorted(LIVE_REGISTERS[core])}")


def stream_ports(s_axis, m_axis) -> tuple:
    """A core's stream ports in the order every core block takes them: outputs (m_tdata, m_tvalid, m_tlast,
    s_tready), then inputs (s_tdata, s_tvalid, s_tlast, m_tready)."""
    return (
        m_axis.tdata,
        m_axis.tvalid,
        m_axis.tlast,
        s_axis.tready,
        s_axis.tdata,
        s_axis.tvalid,
        s_axis.tlast,
        m_axis.tready,
    )


@block
def gae_core_top(s_axi_control, s_axis, m_axis, aclk, aresetn, spec: S.GaeSpec):
    """The GAE core as an AXI peripheral.

    s_axi_control : AxiLiteBus (16-bit addresses), slave -- registers of ``spec.GAE_REGISTERS``
    s_axis        : AxiStream(8 * stream_bytes), slave  -- input records from the DMA's MM2S
    m_axis        : AxiStream(8 * stream_bytes), master -- output records to the DMA's S2MM
    aclk          : Signal(bool), in
    aresetn       : ResetSignal(active=0), in
    spec          : GaeSpec

    An operation runs with the parameter registers' values at its START; writes while BUSY wait for the next one.
    """
    table = S.GAE_REGISTERS
    cfg = CoreConfig(spec)
    mode_hi, mode_lo = S.field_bits(table["CTRL"], "MODE")
    storage, status, wiring = register_wiring(table, cfg, spec)
    _check_live("gae", wiring["live"])
    regs = axi_lite_regfile(s_axi_control, table, storage, clock=aclk, reset=aresetn, **wiring)
    regs.name = "regs"
    ctrl, r_scale, r_offset = storage["CTRL"], storage["R_SCALE"], storage["R_OFFSET"]
    v_scale, v_offset = storage["V_SCALE"], storage["V_OFFSET"]
    t_reg, lanes_reg = storage["T"], storage["LANES_USED"]
    batches_reg, chunks_reg = storage["BATCHES"], storage["CHUNKS"]
    gamma_reg, gamma_lambda_reg = storage["GAMMA"], storage["GAMMA_LAMBDA"]
    core = gae_core(*stream_ports(s_axis, m_axis), cfg, aclk, aresetn, spec)
    core.name = "core"

    @always_comb
    def configuration():
        cfg.t_count.next = t_reg
        cfg.batches.next = batches_reg
        cfg.chunks.next = chunks_reg
        cfg.mode.next = ctrl[mode_hi:mode_lo]

    @always(aclk.posedge)
    def operation_parameters():
        # The parameters the core reads during an operation are the registers' values at START: they follow the
        # registers while the core is not BUSY and hold while it is, so a write while BUSY takes effect at the
        # next START (as in the emulated IP). T, BATCHES, CHUNKS and MODE the core latches itself at START. One
        # cycle behind the registers, which START never sees: the register file takes one transaction at a time,
        # so a write's START pulse comes at least three cycles after the previous write stored its data.
        if not cfg.busy:
            cfg.lanes_used.next = lanes_reg
            cfg.gamma.next = gamma_reg
            cfg.gamma_lambda.next = gamma_lambda_reg
            cfg.r_scale.next = r_scale.signed()
            cfg.r_offset.next = r_offset.signed()
            cfg.v_scale.next = v_scale.signed()
            cfg.v_offset.next = v_offset.signed()

    return regs, core, configuration, operation_parameters


@block
def replay_core_top(s_axi_control, s_axis, m_axis, aclk, aresetn, spec: S.ReplaySpec):
    """The replay core as an AXI peripheral (ports as :func:`gae_core_top`).

    s_axi_control : AxiLiteBus (16-bit addresses), slave -- registers of ``spec.REPLAY_REGISTERS``
    s_axis        : AxiStream(64), slave  -- set records / uniform records from the DMA's MM2S
    m_axis        : AxiStream(64), master -- result records / dump words to the DMA's S2MM
    aclk          : Signal(bool), in
    aresetn       : ResetSignal(active=0), in
    spec          : ReplaySpec

    SEED is stored on write (the write pulse reloads the PRNG; during an operation, once it ends) and read live from
    the PRNG; TOTAL, TOTAL_HI and NONZERO are live views of the root and the nonzero-leaf counter. COUNT and STRIDE
    the core latches at START.
    """
    table = S.REPLAY_REGISTERS
    cfg = ReplayConfig()
    mode_hi, mode_lo = S.field_bits(table["CTRL"], "MODE")
    live = {"TOTAL": cfg.total_lo, "TOTAL_HI": cfg.total_hi, "NONZERO": cfg.nonzero, "SEED": cfg.prng}
    storage, status, wiring = register_wiring(table, cfg, spec, live, written={"SEED": cfg.seed_load})
    _check_live("replay", wiring["live"])
    regs = axi_lite_regfile(s_axi_control, table, storage, clock=aclk, reset=aresetn, **wiring)
    regs.name = "regs"
    ctrl, count, stride, seed = storage["CTRL"], storage["COUNT"], storage["STRIDE"], storage["SEED"]
    core = replay_core(*stream_ports(s_axis, m_axis), cfg, aclk, aresetn, spec)
    core.name = "core"

    @always_comb
    def configuration():
        cfg.mode.next = ctrl[mode_hi:mode_lo]
        cfg.count.next = count
        cfg.stride.next = stride
        cfg.seed.next = seed

    return regs, core, configuration


@block
def parsa_core_top(s_axi_control, s_axis, m_axis, aclk, aresetn, spec: S.ParsaSpec):
    """The ParSa core as an AXI peripheral (ports as :func:`gae_core_top`).

    s_axi_control : AxiLiteBus (16-bit addresses), slave -- registers of ``spec.PARSA_REGISTERS``
    s_axis        : AxiStream(64), slave  -- state records, CONFIG records, policy rows from the DMA's MM2S
    m_axis        : AxiStream(64), master -- action records, policy rows to the DMA's S2MM
    aclk          : Signal(bool), in
    aresetn       : ResetSignal(active=0), in
    spec          : ParsaSpec

    EPSILON and SEED are stored on write (the write pulse loads the core's live EPSILON / reseeds its PRNG) and read
    live (EPSILON decays as actions are chosen; SEED is the PRNG state); a REWARD write stores a pending reward for
    REWARD_KEY. Those three writes act when the core is not BUSY: during an operation, once it ends
    (:func:`register_wiring`); the other run-time registers the core latches at START. Registers
    reset to their table's ``reset`` values (EPSILON_DECAY to 1.0).

    The mailbox (:func:`~.parsa.mailbox.parsa_mailbox`) sits between the stream ports and the core: the window
    registers (MBOX_KEY, MBOX_REWARD, MBOX_STATE_*) go to its memory, MODE = MAILBOX reaches the core as ACT with the
    mailbox as its input, and a read of MBOX_ACTION waits (up to ``spec.mailbox_wait`` cycles) while it decides.
    """
    table = S.PARSA_REGISTERS
    cfg = ParsaConfig(spec)
    mode_hi, mode_lo = S.field_bits(table["CTRL"], "MODE")
    mbox_action, mbox_q, mbox_hold = Signal(intbv(0)[32:]), Signal(intbv(0)[32:]), Signal(bool(0))
    w_strobe, w_addr, w_data = Signal(bool(0)), Signal(intbv(0)[len(s_axi_control.awaddr) - 2 :]), Signal(intbv(0)[32:])
    live = {
        "CYCLES_ACT": cfg.cycles_act,
        "CYCLES_UPDATE": cfg.cycles_update,
        "EPSILON": cfg.epsilon_live,
        "SEED": cfg.seed_live,
        "MBOX_ACTION": mbox_action,
        "MBOX_Q": mbox_q,
    }
    written = {"EPSILON": cfg.epsilon_written, "SEED": cfg.seed_written, "REWARD": cfg.reward_written}
    window = window_registers()
    storage, status, wiring = register_wiring(table, cfg, spec, live, written, window)
    _check_live("parsa", wiring["live"])
    regs = axi_lite_regfile(
        s_axi_control,
        table,
        storage,
        clock=aclk,
        reset=aresetn,
        window=(window, w_strobe, w_addr, w_data),
        hold={"MBOX_ACTION": mbox_hold},
        hold_cycles=spec.mailbox_wait,
        **wiring,
    )
    regs.name = "regs"
    ctrl = storage["CTRL"]
    n_dims, n_actions, n_tilings = storage["N_DIMS"], storage["N_ACTIONS"], storage["N_TILINGS"]
    alpha, gamma, epsilon, decay = storage["ALPHA"], storage["GAMMA"], storage["EPSILON"], storage["EPSILON_DECAY"]
    options, seed, reward_key, reward = storage["OPTIONS"], storage["SEED"], storage["REWARD_KEY"], storage["REWARD"]
    ctrl_mode = Signal(intbv(0)[mode_hi - mode_lo :])

    core_s, core_m = AxiStream(len(s_axis.tdata)), AxiStream(len(m_axis.tdata))
    # MBOX_ACTION's STATUS flags, each read from the core's cfg.<name> as STATUS's (status_word)
    mbox_flags = ConcatSignal(*(getattr(cfg, name.lower()) for name in reversed(S.PARSA_MBOX_FLAGS)))
    mailbox = parsa_mailbox(
        core_s.tdata,
        core_s.tvalid,
        core_s.tlast,
        s_axis.tready,
        core_m.tready,
        m_axis.tdata,
        m_axis.tvalid,
        m_axis.tlast,
        mbox_action,
        mbox_q,
        mbox_hold,
        s_axis.tdata,
        s_axis.tvalid,
        s_axis.tlast,
        core_s.tready,
        core_m.tdata,
        core_m.tvalid,
        core_m.tlast,
        m_axis.tready,
        w_strobe,
        w_addr,
        w_data,
        cfg.start,
        cfg.soft_reset,
        ctrl_mode,
        n_dims,
        cfg.busy,
        mbox_flags,
        aclk,
        aresetn,
        spec,
    )
    mailbox.name = "mailbox"
    core = parsa_core(*stream_ports(core_s, core_m), cfg, aclk, aresetn, spec)
    core.name = "core"

    @always_comb
    def mode_field():
        ctrl_mode.next = ctrl[mode_hi:mode_lo]

    @always_comb
    def configuration():
        if ctrl_mode == MODE_MAILBOX:  # the core acts on the mailbox's record
            cfg.mode.next = MODE_ACT
        else:
            cfg.mode.next = ctrl_mode
        cfg.n_dims.next = n_dims
        cfg.n_actions.next = n_actions
        cfg.n_tilings.next = n_tilings
        cfg.alpha.next = alpha
        cfg.gamma.next = gamma
        cfg.epsilon.next = epsilon
        cfg.epsilon_decay.next = decay
        cfg.options.next = options[2:]
        cfg.seed.next = seed
        cfg.reward_key.next = reward_key
        cfg.reward.next = reward

    return regs, mailbox, core, mode_field, configuration


MODE_MAILBOX, MODE_ACT = int(S.ParsaMode.MAILBOX), int(S.ParsaMode.ACT)

#: Per core: the registers whose read value is the core's own state, not the last value written (STATUS and CYCLES
#: of every core; the replay tree's root and counters; ParSa's decaying EPSILON, its PRNG and its mailbox results).
#: Every other register of a table reads back what was written (pulse bits as 0), which the formal harness checks;
#: each top checks its ``live`` wiring against this table when it is built.
LIVE_REGISTERS = {
    "gae": ("STATUS", "CYCLES"),
    "replay": ("STATUS", "CYCLES", "TOTAL", "TOTAL_HI", "NONZERO", "SEED"),
    "parsa": ("STATUS", "CYCLES", "CYCLES_ACT", "CYCLES_UPDATE", "EPSILON", "SEED", "MBOX_ACTION", "MBOX_Q"),
}

#: Per core name: (top block, port-signal factory), for code that instantiates a board's cores generically.
CORE_TOPS = {
    "gae": (gae_core_top, top_signals),
    "replay": (replay_core_top, top_signals),
    "parsa": (parsa_core_top, top_signals),
}
