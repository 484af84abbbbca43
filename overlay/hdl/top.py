"""One AXI wrapper per core: the core behind an AXI4-Lite register file generated from ``spec.py`` and two
AXI4-Stream ports for its DMA. Port names follow Vivado's conventions (``s_axi_control_*``, ``s_axis_*``,
``m_axis_*``, ``aclk``, ``aresetn``) so IP packaging infers the interfaces.
"""
from myhdl import always_comb, block, ConcatSignal, intbv, Signal

from .. import spec as S
from .common.axi_lite import AxiLiteBus, axi_lite_regfile
from .common.axis import AxiStream
from .gae.core import CoreConfig, gae_core
from .replay.core import replay_core, ReplayConfig
from .parsa.core import parsa_core, ParsaConfig

__all__ = ["gae_core_top", "gae_top_signals", "replay_core_top", "replay_top_signals", "parsa_core_top",
           "parsa_top_signals", "CORE_TOPS"]


def gae_top_signals(spec: S.GaeSpec):
    """Fresh top-level port objects: ``(s_axi_control, s_axis, m_axis)``."""
    width = 8 * spec.stream_bytes
    return AxiLiteBus(16), AxiStream(width), AxiStream(width)


@block
def gae_core_top(s_axi_control, s_axis, m_axis, aclk, aresetn, spec: S.GaeSpec):
    """The GAE core as an AXI peripheral.

    s_axi_control : AxiLiteBus (16-bit addresses), slave -- registers of ``spec.GAE_REGISTERS``
    s_axis        : AxiStream(8 * stream_bytes), slave  -- input records from the DMA's MM2S
    m_axis        : AxiStream(8 * stream_bytes), master -- output records to the DMA's S2MM
    aclk          : Signal(bool), in
    aresetn       : ResetSignal(active=0), in
    spec          : GaeSpec
    """
    table = S.GAE_REGISTERS
    cfg = CoreConfig(spec)
    writable = [name for name, reg in table.items() if reg["access"] != S.READ_ONLY]
    storage = {name: Signal(intbv(0)[32:]) for name in writable}
    status = ConcatSignal(intbv(0)[27:], cfg.saturated, cfg.err_stream, cfg.err_config, cfg.done, cfg.busy)
    live = {"STATUS": status, "CYCLES": cfg.cycles}
    pulses = {("CTRL", "START"): cfg.start, ("CTRL", "SOFT_RESET"): cfg.soft_reset}
    mode_field = table["CTRL"]["fields"]["MODE"]
    mode_lo, mode_hi = mode_field["bit_offset"], mode_field["bit_offset"] + mode_field["bit_width"]
    ctrl, r_scale, r_offset = storage["CTRL"], storage["R_SCALE"], storage["R_OFFSET"]
    v_scale, v_offset = storage["V_SCALE"], storage["V_OFFSET"]
    t_reg, lanes_reg = storage["T"], storage["LANES_USED"]
    gamma_reg, gamma_lambda_reg = storage["GAMMA"], storage["GAMMA_LAMBDA"]

    regs = axi_lite_regfile(s_axi_control, table, storage, live, spec.parameter_registers(), pulses, aclk,
                            aresetn)
    regs.name = "regs"
    core = gae_core(m_axis.tdata, m_axis.tvalid, m_axis.tlast, s_axis.tready,
                    s_axis.tdata, s_axis.tvalid, s_axis.tlast, m_axis.tready, cfg, aclk, aresetn, spec)
    core.name = "core"

    @always_comb
    def configuration():
        cfg.t_count.next = t_reg
        cfg.lanes_used.next = lanes_reg
        cfg.gamma.next = gamma_reg
        cfg.gamma_lambda.next = gamma_lambda_reg
        cfg.mode.next = ctrl[mode_hi:mode_lo]
        cfg.r_scale.next = r_scale.signed()
        cfg.r_offset.next = r_offset.signed()
        cfg.v_scale.next = v_scale.signed()
        cfg.v_offset.next = v_offset.signed()

    return regs, core, configuration


def replay_top_signals(spec: S.ReplaySpec):
    """Fresh top-level port objects of a replay core: ``(s_axi_control, s_axis, m_axis)``."""
    width = 8 * spec.stream_bytes
    return AxiLiteBus(16), AxiStream(width), AxiStream(width)


@block
def replay_core_top(s_axi_control, s_axis, m_axis, aclk, aresetn, spec: S.ReplaySpec):
    """The replay core as an AXI peripheral (ports as :func:`gae_core_top`).

    s_axi_control : AxiLiteBus (16-bit addresses), slave -- registers of ``spec.REPLAY_REGISTERS``
    s_axis        : AxiStream(64), slave  -- set records / uniform records from the DMA's MM2S
    m_axis        : AxiStream(64), master -- result records / dump words to the DMA's S2MM
    aclk          : Signal(bool), in
    aresetn       : ResetSignal(active=0), in
    spec          : ReplaySpec

    SEED is stored on write (the write pulse reloads the PRNG) and read live from the PRNG; TOTAL, TOTAL_HI and
    NONZERO are live views of the root and the nonzero-leaf counter.
    """
    table = S.REPLAY_REGISTERS
    cfg = ReplayConfig()
    writable = [name for name, reg in table.items() if reg["access"] != S.READ_ONLY]
    storage = {name: Signal(intbv(0)[32:]) for name in writable}
    status = ConcatSignal(intbv(0)[27:], cfg.saturated, cfg.err_stream, cfg.err_config, cfg.done, cfg.busy)
    live = {"STATUS": status, "CYCLES": cfg.cycles, "TOTAL": cfg.total_lo, "TOTAL_HI": cfg.total_hi,
            "NONZERO": cfg.nonzero, "SEED": cfg.prng}
    pulses = {("CTRL", "START"): cfg.start, ("CTRL", "SOFT_RESET"): cfg.soft_reset}
    mode_field = table["CTRL"]["fields"]["MODE"]
    mode_lo, mode_hi = mode_field["bit_offset"], mode_field["bit_offset"] + mode_field["bit_width"]
    ctrl, count, stride, seed = storage["CTRL"], storage["COUNT"], storage["STRIDE"], storage["SEED"]

    regs = axi_lite_regfile(s_axi_control, table, storage, live, spec.parameter_registers(), pulses, aclk,
                            aresetn, written={"SEED": cfg.seed_load})
    regs.name = "regs"
    core = replay_core(m_axis.tdata, m_axis.tvalid, m_axis.tlast, s_axis.tready,
                       s_axis.tdata, s_axis.tvalid, s_axis.tlast, m_axis.tready, cfg, aclk, aresetn, spec)
    core.name = "core"

    @always_comb
    def configuration():
        cfg.mode.next = ctrl[mode_hi:mode_lo]
        cfg.count.next = count
        cfg.stride.next = stride
        cfg.seed.next = seed

    return regs, core, configuration


def parsa_top_signals(spec: S.ParsaSpec):
    """Fresh top-level port objects of a ParSa core: ``(s_axi_control, s_axis, m_axis)``."""
    width = 8 * spec.stream_bytes
    return AxiLiteBus(16), AxiStream(width), AxiStream(width)


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
    REWARD_KEY. Registers reset to their table's ``reset`` values (EPSILON_DECAY to 1.0).
    """
    table = S.PARSA_REGISTERS
    cfg = ParsaConfig(spec)
    writable = [name for name, reg in table.items() if reg["access"] != S.READ_ONLY]
    storage = {name: Signal(intbv(table[name]["reset"])[32:]) for name in writable}
    status = ConcatSignal(intbv(0)[27:], cfg.saturated, cfg.err_stream, cfg.err_config, cfg.done, cfg.busy)
    live = {"STATUS": status, "CYCLES": cfg.cycles, "CYCLES_ACT": cfg.cycles_act,
            "CYCLES_UPDATE": cfg.cycles_update, "EPSILON": cfg.epsilon_live, "SEED": cfg.seed_live}
    pulses = {("CTRL", "START"): cfg.start, ("CTRL", "SOFT_RESET"): cfg.soft_reset}
    written = {"EPSILON": cfg.epsilon_written, "SEED": cfg.seed_written, "REWARD": cfg.reward_written}
    mode_field = table["CTRL"]["fields"]["MODE"]
    mode_lo, mode_hi = mode_field["bit_offset"], mode_field["bit_offset"] + mode_field["bit_width"]
    ctrl = storage["CTRL"]
    n_dims, n_actions, n_tilings = storage["N_DIMS"], storage["N_ACTIONS"], storage["N_TILINGS"]
    alpha, gamma, epsilon, decay = storage["ALPHA"], storage["GAMMA"], storage["EPSILON"], storage["EPSILON_DECAY"]
    options, seed, reward_key, reward = storage["OPTIONS"], storage["SEED"], storage["REWARD_KEY"], storage["REWARD"]

    regs = axi_lite_regfile(s_axi_control, table, storage, live, spec.parameter_registers(), pulses, aclk,
                            aresetn, written=written)
    regs.name = "regs"
    core = parsa_core(m_axis.tdata, m_axis.tvalid, m_axis.tlast, s_axis.tready,
                      s_axis.tdata, s_axis.tvalid, s_axis.tlast, m_axis.tready, cfg, aclk, aresetn, spec)
    core.name = "core"

    @always_comb
    def configuration():
        cfg.mode.next = ctrl[mode_hi:mode_lo]
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

    return regs, core, configuration


#: Per core name: (top block, port-signal factory), for code that instantiates a board's cores generically.
CORE_TOPS = {"gae": (gae_core_top, gae_top_signals), "replay": (replay_core_top, replay_top_signals),
             "parsa": (parsa_core_top, parsa_top_signals)}
