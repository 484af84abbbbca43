"""The formal harness of a core: its converted Verilog top, its logic untouched, with the bus property modules on its
ports.

``properties/axi_lite_slave.sv`` and ``properties/axi_stream.sv`` are written once from the AMBA specifications and
shared by the three cores; what differs per core comes from ``spec.py`` and is generated here: which registers a
read must return as written (the read-only, live and window registers read something else), their storable bits
(pulse fields read 0) and reset values, where CTRL.SOFT_RESET lives (the abort that may drop a held output beat),
and how long a read may wait (ParSa's MBOX_ACTION holds a read until the core decides, at most ``mailbox_wait``
cycles). Every input of the harness is free for the solver: the properties' assumptions alone say what a master may
do, so a check covers every legal sequence of register writes, reads, resets and stream beats up to its depth.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import spec as S
from ..hdl.replay.updater import set_depth
from ..hdl.top import LIVE_REGISTERS

__all__ = [
    "PROPERTIES_DIR",
    "PROPERTY_FILES",
    "HarnessShape",
    "harness_shape",
    "harness_text",
    "HARNESS_TOP",
    "COVERS",
]

PROPERTIES_DIR = Path(__file__).resolve().parent / "properties"
#: The shared property modules, one per interface.
PROPERTY_FILES = ("axi_lite_slave.sv", "axi_stream.sv")
#: The harness module's name.
HARNESS_TOP = "formal_harness"

#: Cycles from the later of AWVALID and WVALID (both high, no response pending) to BVALID: the register file takes
#: AW and W in the cycle after both are valid and answers in the next.
WRITE_LATENCY = 2
#: Cycles from ARVALID (no response pending) to RVALID for a register that never holds its read.
READ_LATENCY = 2

_TABLES = {"gae": S.GAE_REGISTERS, "replay": S.REPLAY_REGISTERS, "parsa": S.PARSA_REGISTERS}


@dataclass(frozen=True)
class HarnessShape:
    """What the harness of one build needs to know of its register table and spec."""

    readback: tuple[tuple[int, int, int], ...]
    """(byte offset, storable bits, reset value) of every register a read returns as written"""
    ctrl_offset: int
    """CTRL's byte offset"""
    soft_reset_bit: int
    """CTRL.SOFT_RESET's bit"""
    start_bit: int
    """CTRL.START's bit"""
    status_offset: int
    """STATUS's byte offset"""
    busy_bit: int
    """STATUS.BUSY's bit"""
    done_bit: int
    """STATUS.DONE's bit"""
    read_latency: int
    """the longest a read may take from ARVALID to RVALID, wait states included"""
    abort_latency: int
    """cycles from the response to a SOFT_RESET write until the core must read idle (BUSY = 0)"""
    stream_width: int
    """TDATA bits of both streams"""


def harness_shape(core: str, spec) -> HarnessShape:
    """The per-core facts of ``core`` built for ``spec`` that the harness encodes (:class:`HarnessShape`).

    Raises
    ------
    ValueError
        ``core`` has no register table here.
    """
    if core not in _TABLES:
        raise ValueError(f"no formal harness for core {core!r}; cores: {sorted(_TABLES)}")
    table = _TABLES[core]
    not_stored = set(LIVE_REGISTERS[core]) | (set(S.PARSA_MBOX_WINDOW) if core == "parsa" else set())
    readback = []
    for name, reg in table.items():
        if reg["access"] == S.READ_ONLY or name in not_stored:
            continue
        keep = ((1 << reg["size"]) - 1) & ~S.pulse_mask(reg)
        readback.append((reg["address_offset"], keep, reg["reset"] & keep))
    hold_cycles = getattr(spec, "mailbox_wait", 0) if core == "parsa" else 0
    return HarnessShape(
        readback=tuple(readback),
        ctrl_offset=table["CTRL"]["address_offset"],
        soft_reset_bit=table["CTRL"]["fields"]["SOFT_RESET"]["bit_offset"],
        start_bit=table["CTRL"]["fields"]["START"]["bit_offset"],
        status_offset=table["STATUS"]["address_offset"],
        busy_bit=table["STATUS"]["fields"]["BUSY"]["bit_offset"],
        done_bit=table["STATUS"]["fields"]["DONE"]["bit_offset"],
        read_latency=READ_LATENCY + hold_cycles,
        abort_latency=set_depth(spec) + 1 if core == "replay" else 0,
        stream_width=8 * spec.stream_bytes,
    )


def harness_text(
    dut_module: str,
    shape: HarnessShape,
    addr_width: int = 16,
    readback: bool = True,
    lemmas: bool = False,
    covers: bool = False,
) -> str:
    """SystemVerilog of :data:`HARNESS_TOP`: ``dut_module`` (the converted top) with the property modules bound to
    its AXI4-Lite port and both AXI4-Stream ports. ``readback`` adds the checks only a bounded check can decide
    (k-induction may start in a state no run reaches, and no assertion on the ports can exclude it): a read returns
    what was written, and the core reads idle after an abort. ``lemmas`` adds the register file's lemmas, which
    k-induction needs (a bounded check does without, so each bug there fails at the property it breaks).
    ``covers`` adds the cover statements of :data:`COVERS` (SymbiYosys's ``cover`` mode finds the shortest trace to
    each: how deep a bounded check must go to contain a whole operation)."""
    cases = "\n".join(
        f"            {addr_width - 2}'d{offset // 4}: begin watch_ok = 1'b1; watch_keep = 32'h{keep:08x}; "
        f"watch_reset = 32'h{reset:08x}; end"
        for offset, keep, reset in shape.readback
    )
    w = shape.stream_width
    a = addr_width
    ctrl_word = f"{a - 2}'d{shape.ctrl_offset // 4}"
    return f"""// Generated by pynq_rl.overlay.build.formal_harness: {dut_module} and the AXI properties on its ports.
module {HARNESS_TOP} (
    input wire aclk, input wire aresetn,
    input wire [{a - 1}:0] awaddr, input wire awvalid, input wire [31:0] wdata, input wire [3:0] wstrb,
    input wire wvalid, input wire bready, input wire [{a - 1}:0] araddr, input wire arvalid, input wire rready,
    input wire [{w - 1}:0] s_tdata, input wire s_tvalid, input wire s_tlast, input wire m_tready
);
    wire awready, wready, bvalid, arready, rvalid, s_tready, m_tvalid, m_tlast;
    wire [1:0] bresp, rresp;
    wire [31:0] rdata;
    wire [{w - 1}:0] m_tdata;
    {dut_module} dut (
        .aclk(aclk), .aresetn(aresetn),
        .s_axi_control_awaddr(awaddr), .s_axi_control_awvalid(awvalid), .s_axi_control_awready(awready),
        .s_axi_control_wdata(wdata), .s_axi_control_wstrb(wstrb), .s_axi_control_wvalid(wvalid),
        .s_axi_control_wready(wready), .s_axi_control_bresp(bresp), .s_axi_control_bvalid(bvalid),
        .s_axi_control_bready(bready), .s_axi_control_araddr(araddr), .s_axi_control_arvalid(arvalid),
        .s_axi_control_arready(arready), .s_axi_control_rdata(rdata), .s_axi_control_rresp(rresp),
        .s_axi_control_rvalid(rvalid), .s_axi_control_rready(rready),
        .s_axis_tdata(s_tdata), .s_axis_tvalid(s_tvalid), .s_axis_tready(s_tready), .s_axis_tlast(s_tlast),
        .m_axis_tdata(m_tdata), .m_axis_tvalid(m_tvalid), .m_axis_tready(m_tready), .m_axis_tlast(m_tlast)
    );

    // the watched register of the read-back check: any register that reads back what was written
    (* anyconst *) reg [{a - 1}:0] watch_addr;
    reg watch_ok;
    reg [31:0] watch_keep, watch_reset;
    always @(*) begin
        watch_ok = 1'b0; watch_keep = 32'h0; watch_reset = 32'h0;
        case (watch_addr[{a - 1}:2])
{cases}
            default: ;
        endcase
    end

    // abort: CTRL.SOFT_RESET accepted in one of the last three cycles (the register file's pulse, then the flush)
    wire ctrl_handshake = awvalid && awready && wvalid && wready && awaddr[{a - 1}:2] == {ctrl_word};
    wire soft_reset_write = ctrl_handshake && wstrb[{shape.soft_reset_bit // 8}] && wdata[{shape.soft_reset_bit}];
    reg [2:0] soft_reset_recent = 3'b0;
    always @(posedge aclk) soft_reset_recent <= {{soft_reset_recent[1:0], soft_reset_write}};
    wire abort = soft_reset_write || soft_reset_recent != 3'b0;

    // idle after an abort: from ABORT_LATENCY cycles after the response to a SOFT_RESET write (or after a reset
    // edge) until the next START is accepted, a read of STATUS returns BUSY = 0, whatever operation, stall or reset
    // came before (the replay core first completes the SET records it accepted, so the tree stays consistent)
    wire start_write = ctrl_handshake && wstrb[{shape.start_bit // 8}] && wdata[{shape.start_bit}];
    reg soft_reset_pending = 1'b0, aborted = 1'b0, status_read = 1'b0, status_read_idle = 1'b0;
    reg [7:0] since_abort = 8'd0;
    wire idle_expected = aborted && since_abort >= {shape.abort_latency};
    always @(posedge aclk) begin
        if (!aresetn) begin
            soft_reset_pending <= 1'b0;
            aborted <= 1'b1;
            since_abort <= 8'd255;
        end else begin
            if (soft_reset_write) soft_reset_pending <= 1'b1;
            else if (bvalid && bready) soft_reset_pending <= 1'b0;
            if (start_write) aborted <= 1'b0;
            else if (bvalid && bready && soft_reset_pending) aborted <= 1'b1;
            if (bvalid && bready && soft_reset_pending) since_abort <= 8'd0;
            else if (since_abort != 8'd255) since_abort <= since_abort + 8'd1;
        end
        if (arvalid && arready) begin
            status_read <= araddr[{a - 1}:2] == {a - 2}'d{shape.status_offset // 4};
            status_read_idle <= idle_expected && !start_write;
        end else if (start_write) begin
            status_read_idle <= 1'b0;
        end
    end
    always @(*) begin
        if ({int(readback)} && aresetn && rvalid && rready && status_read && status_read_idle)
            assert (!rdata[{shape.busy_bit}]);
    end
{_cover_text(shape) if covers else ""}
    axi_lite_slave #(.ADDR_W({a}), .MAX_OUTSTANDING(1), .WRITE_LATENCY({WRITE_LATENCY}),
                     .READ_LATENCY({shape.read_latency}), .CHECK_READBACK({int(readback)}),
                     .JOINT_AW_W({int(lemmas)})) control (
        .aclk(aclk), .aresetn(aresetn),
        .awaddr(awaddr), .awvalid(awvalid), .awready(awready), .wdata(wdata), .wstrb(wstrb), .wvalid(wvalid),
        .wready(wready), .bresp(bresp), .bvalid(bvalid), .bready(bready), .araddr(araddr), .arvalid(arvalid),
        .arready(arready), .rdata(rdata), .rresp(rresp), .rvalid(rvalid), .rready(rready),
        .watch_addr(watch_addr), .watch_ok(watch_ok), .watch_keep(watch_keep), .watch_reset(watch_reset)
    );
    wire [15:0] in_beats, out_beats;
    axi_stream #(.DUT_IS_SOURCE(0), .WIDTH({w})) in_stream (
        .aclk(aclk), .aresetn(aresetn), .abort(abort),
        .tdata(s_tdata), .tvalid(s_tvalid), .tready(s_tready), .tlast(s_tlast), .beats(in_beats)
    );
    axi_stream #(.DUT_IS_SOURCE(1), .WIDTH({w})) out_stream (
        .aclk(aclk), .aresetn(aresetn), .abort(abort),
        .tdata(m_tdata), .tvalid(m_tvalid), .tready(m_tready), .tlast(m_tlast), .beats(out_beats)
    );
endmodule
"""


#: What the cover statements reach, in the order :func:`harness_text` writes them.
COVERS = (
    "an input stream's TLAST beat is taken",
    "an output stream's TLAST beat is taken",
    "a read of STATUS returns DONE and no error: an operation ran to its end",
)


def _cover_text(shape: HarnessShape) -> str:
    return f"""
    // how deep a whole operation goes (cover mode): {"; ".join(COVERS)}
    always @(*) if (aresetn) cover (s_tvalid && s_tready && s_tlast);
    always @(*) if (aresetn) cover (m_tvalid && m_tready && m_tlast);
    always @(*) if (aresetn) cover (rvalid && rready && status_read && rdata[{shape.done_bit}]
        && (rdata & 32'h{S.STATUS_ERROR_MASK:08x}) == 0);
"""
