// AXI4-Lite slave properties, written from the AMBA AXI and ACE Protocol Specification (ARM IHI 0022, the AXI4-Lite
// chapter and "Channel handshake", "Dependencies between channel handshake signals", "Reset").
//
// The master is ASSUMED to obey the protocol; the slave (the design under test) must obey it and is ASSERTED to:
//   - BVALID and RVALID low after a reset edge (aresetn is synchronous: the first edge, which the harness makes a
//     reset edge, defines the flip-flops; before it nothing is asserted);
//   - BVALID/RVALID and their payload (BRESP; RDATA, RRESP) held until READY;
//   - BVALID only for a write whose AW and W handshakes both completed in an earlier cycle, and exactly one response
//     per write (outstanding counts never go negative and never exceed MAX_OUTSTANDING);
//   - RVALID only for an accepted read address, one response each;
//   - never deadlock: a write whose AW and W are both offered (in any order, after any delay) is answered within
//     WRITE_LATENCY cycles of the later of the two, and a read within READ_LATENCY cycles of ARVALID, unless the
//     master itself stalls the response channel (BREADY/RREADY low) -- a bounded form of liveness BMC can check;
//   - BRESP/RRESP = OKAY (the register reference: every offset answers, unmapped reads return 0);
//   - a read of a watched register returns what the last write stored there (RDATA = the shadow copy), when no
//     write was outstanding while the read was: no write is lost or corrupted under back-pressure, WSTRB included.
//     The harness chooses the watched register (watch_ok: the address is a plain read-write register; keep: its
//     storable bits; watch_reset: its reset value).
//
// Timing convention: signals are sampled at the rising edge closing each step; aresetn is synchronous, so a step
// whose $past(aresetn) is low follows a reset edge.
module axi_lite_slave #(
    parameter ADDR_W = 16,
    parameter MAX_OUTSTANDING = 1,
    parameter WRITE_LATENCY = 3,
    parameter READ_LATENCY = 3,
    parameter CHECK_READBACK = 1,  // 0: leave out the read-back check (k-induction cannot close it: see below)
    parameter JOINT_AW_W = 1  // the slave takes AW and W in one cycle and answers in the next (lemmas below)
) (
    input wire aclk,
    input wire aresetn,
    input wire [ADDR_W-1:0] awaddr,
    input wire awvalid,
    input wire awready,
    input wire [31:0] wdata,
    input wire [3:0] wstrb,
    input wire wvalid,
    input wire wready,
    input wire [1:0] bresp,
    input wire bvalid,
    input wire bready,
    input wire [ADDR_W-1:0] araddr,
    input wire arvalid,
    input wire arready,
    input wire [31:0] rdata,
    input wire [1:0] rresp,
    input wire rvalid,
    input wire rready,
    // the watched register (read-back check), chosen by the harness
    input wire [ADDR_W-1:0] watch_addr,
    input wire watch_ok,
    input wire [31:0] watch_keep,
    input wire [31:0] watch_reset
);
    reg past_valid = 1'b0;
    always @(posedge aclk) past_valid <= 1'b1;
    reg after_reset = 1'b1;  // no edge yet, or the last edge was a reset edge
    always @(posedge aclk) after_reset <= !aresetn;

    wire aw_hs = awvalid && awready;
    wire w_hs = wvalid && wready;
    wire b_hs = bvalid && bready;
    wire ar_hs = arvalid && arready;
    wire r_hs = rvalid && rready;

    // ---- the master (assumed) ----
    initial assume (!aresetn);
    always @(*) begin
        if (after_reset) assume (!awvalid && !wvalid && !arvalid);
    end
    always @(posedge aclk) begin
        if (past_valid && aresetn && $past(aresetn)) begin  // (during reset VALID may fall: the spec wants it low)
            if ($past(awvalid && !awready)) assume (awvalid && awaddr == $past(awaddr));
            if ($past(wvalid && !wready)) assume (wvalid && wdata == $past(wdata) && wstrb == $past(wstrb));
            if ($past(arvalid && !arready)) assume (arvalid && araddr == $past(araddr));
        end
    end

    // ---- outstanding transactions: handshakes not yet answered ----
    reg [3:0] aw_open = 0, w_open = 0, ar_open = 0;
    always @(posedge aclk) begin
        if (!aresetn) begin
            aw_open <= 0;
            w_open <= 0;
            ar_open <= 0;
        end else begin
            aw_open <= aw_open + aw_hs - b_hs;
            w_open <= w_open + w_hs - b_hs;
            ar_open <= ar_open + ar_hs - r_hs;
        end
    end

    // ---- the slave (asserted) ----
    // (from the first edge on, always a reset edge: before it the slave's flip-flops hold no defined value)
    always @(*) begin
        if (past_valid) begin
            if (after_reset) assert (!bvalid && !rvalid);
            if (bvalid) assert (aw_open != 0 && w_open != 0);  // a response only after both AW and W completed
            if (rvalid) assert (ar_open != 0);
            assert (aw_open <= MAX_OUTSTANDING && w_open <= MAX_OUTSTANDING && ar_open <= MAX_OUTSTANDING);
            if (bvalid) assert (bresp == 2'b00);
            if (rvalid) assert (rresp == 2'b00);
        end
    end
    always @(posedge aclk) begin
        if (past_valid && aresetn && $past(aresetn)) begin
            if ($past(bvalid && !bready)) assert (bvalid && bresp == $past(bresp));
            if ($past(rvalid && !rready)) assert (rvalid && rdata == $past(rdata) && rresp == $past(rresp));
        end
    end

    // ---- lemmas of a slave that takes AW and W together and answers in the next cycle (pynq-rl's register file):
    // asserted like every property, they also make k-induction close, since they tie the counters above to the
    // ports (an induction step may otherwise start with an address accepted and its data not) ----
    generate
        if (JOINT_AW_W) begin : joint
            always @(*) begin
                if (past_valid) begin
                    assert (awready == wready);
                    assert (aw_open == w_open);
                    assert (bvalid == (aw_open != 0));
                    if (awready) assert (!bvalid && aw_open == 0);
                    if (arready) assert (!rvalid && ar_open == 0);
                end
            end
        end
    endgenerate

    // ---- bounded liveness: no deadlock for any order and delay of AW and W ----
    reg [7:0] write_wait = 0, read_wait = 0;
    wire write_owed = (aw_open != 0 || awvalid) && (w_open != 0 || wvalid) && !bvalid;
    wire read_owed = (ar_open != 0 || arvalid) && !rvalid;
    always @(posedge aclk) begin
        write_wait <= (!aresetn || !write_owed) ? 0 : write_wait + 1;
        read_wait <= (!aresetn || !read_owed) ? 0 : read_wait + 1;
    end
    always @(*) begin
        assert (write_wait <= WRITE_LATENCY);
        assert (read_wait <= READ_LATENCY);
    end

    // ---- read-back: a write is never lost or corrupted ----
    always @(*) assume (watch_ok);
    always @(posedge aclk) if (past_valid) assume ($stable(watch_addr));
    reg [ADDR_W-1:0] w_addr_q = 0, r_addr_q = 0;  // the open write's address, the open read's address
    reg [31:0] w_data_q = 0;
    reg [3:0] w_strb_q = 0;
    reg [31:0] shadow = 0;
    reg shadow_known = 1'b0;  // the shadow holds the register's value (set by the first reset edge)
    reg read_clean = 1'b0;  // no write was outstanding at any time during the open read
    wire write_busy = aw_open != 0 || w_open != 0 || aw_hs || w_hs;
    wire [31:0] strb_mask = {{8{w_strb_q[3]}}, {8{w_strb_q[2]}}, {8{w_strb_q[1]}}, {8{w_strb_q[0]}}} & watch_keep;
    always @(posedge aclk) begin
        if (aw_hs) w_addr_q <= awaddr;
        if (w_hs) begin
            w_data_q <= wdata;
            w_strb_q <= wstrb;
        end
        if (ar_hs) r_addr_q <= araddr;
        if (!aresetn) begin
            shadow <= watch_reset;
            shadow_known <= 1'b1;
        end else if (b_hs && w_addr_q[ADDR_W-1:2] == watch_addr[ADDR_W-1:2]) begin
            shadow <= (shadow & ~strb_mask) | (w_data_q & strb_mask);
        end
        if (ar_hs) read_clean <= !write_busy && !bvalid;
        else if (write_busy) read_clean <= 1'b0;
    end
    // (an induction step may start where the register and the shadow differ and no write has come since: no
    // assertion on the ports can exclude that state, so this check is bounded only)
    generate
        if (CHECK_READBACK) begin : readback
            always @(*) begin
                if (r_hs && read_clean && shadow_known && r_addr_q[ADDR_W-1:2] == watch_addr[ADDR_W-1:2])
                    assert (rdata == shadow);
            end
        end
    endgenerate
endmodule
