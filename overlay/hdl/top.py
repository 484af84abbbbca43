"""One AXI wrapper per core: the core behind an AXI4-Lite register file generated from ``spec.py`` and two
AXI4-Stream ports for its DMA. Port names follow Vivado's conventions (``s_axi_control_*``, ``s_axis_*``,
``m_axis_*``, ``aclk``, ``aresetn``) so IP packaging infers the interfaces.
"""
from myhdl import always_comb, block, ConcatSignal, intbv, Signal

from .. import spec as S
from .common.axi_lite import AxiLiteBus, axi_lite_regfile
from .common.axis import AxiStream
from .gae.core import CoreConfig, gae_core

__all__ = ["gae_core_top", "gae_top_signals"]


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
