// AXI4-Stream port properties, written from the AMBA AXI4-Stream Protocol Specification (ARM IHI 0051, "Handshake
// process" and "Reset").
//
// One module for both directions. DUT_IS_SOURCE = 1 checks a master port of the design under test (its m_axis):
// TVALID low during and just after reset, and once TVALID is high, TVALID, TDATA and TLAST held until the TREADY
// handshake -- under any TREADY pattern, which the solver chooses freely -- except across an abort (the core's
// SOFT_RESET, which the register reference documents as dropping the beat held) and while ARESETn is low (the
// specification asks for TVALID low during reset, which a master may drive combinationally from ARESETn). DUT_IS_SOURCE = 0 describes the
// DMA feeding a slave port (s_axis): the same rules ASSUMED of the master, TREADY free.
//
// beats counts the handshakes since the last reset edge (or abort); the harness compares it with what the stream
// format says an operation moves.
module axi_stream #(
    parameter DUT_IS_SOURCE = 1,
    parameter WIDTH = 64
) (
    input wire aclk,
    input wire aresetn,
    input wire abort,
    input wire [WIDTH-1:0] tdata,
    input wire tvalid,
    input wire tready,
    input wire tlast,
    output reg [15:0] beats
);
    reg past_valid = 1'b0;
    always @(posedge aclk) past_valid <= 1'b1;
    reg after_reset = 1'b1;  // no edge yet, or the last edge was a reset edge
    always @(posedge aclk) after_reset <= !aresetn;

    initial beats = 0;
    always @(posedge aclk) beats <= (!aresetn || abort) ? 0 : beats + (tvalid && tready);

    generate
        if (DUT_IS_SOURCE) begin : source
            always @(*) if (past_valid && after_reset) assert (!tvalid);
            always @(posedge aclk)
                if (past_valid && aresetn && $past(aresetn) && !$past(abort) && $past(tvalid && !tready))
                    assert (tvalid && tdata == $past(tdata) && tlast == $past(tlast));
        end else begin : sink
            always @(*) if (after_reset) assume (!tvalid);
            always @(posedge aclk)
                if (past_valid && aresetn && $past(aresetn) && $past(tvalid && !tready))
                    assume (tvalid && tdata == $past(tdata) && tlast == $past(tlast));
        end
    endgenerate
endmodule
