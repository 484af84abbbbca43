// The C++ side of the `verilator` backend: one verilated core (model class `Vcore`) behind bus transactors.
//
// Python (pynq_rl/host/backends/verilator.py) loads this file, compiled with the core's Verilog into a shared library, via
// ctypes. The harness owns the clock: one register access or one whole stream transfer is one call, never one call
// per cycle. Every transactor replays, cycle for cycle, what the `rtl` backend's Python bus models do to the MyHDL
// simulation (pynq_rl/host/backends/rtl.py), so a core's CYCLES register and its outputs are the same on both backends:
//
// * a cycle is: inputs set, a rising and a falling clock edge; outputs read after it (as MyHDL's `.next` takes
//   effect when the simulation resumes and rtl reads the ports after the falling edge);
// * inputs set at the end of a transfer (valid low) take effect at the next cycle, as a `.next` does.
//
// Every call starts by letting the core idle up to `start` (the board's cycle count): a board's cores share one
// clock, and Python keeps each model's clock lazily in step with the others (see VerilatorSimulation).
//
// Build-time defines: STREAM_BYTES (the AXI-Stream width in bytes), PYNQ_RL_TRACE (VCD tracing compiled in).
#include <cstdint>
#include <cstring>
#include <memory>

#include "Vcore.h"
#include "verilated.h"
#ifdef PYNQ_RL_TRACE
#include "verilated_vcd_c.h"
#endif

#ifndef STREAM_BYTES
#error "STREAM_BYTES must be defined (the core's AXI-Stream width in bytes)"
#endif

namespace {

// -- stream words of any width: Verilator keeps <= 64-bit ports in an integer, wider ones in a VlWide ------------
template <typename Word>
void load_word(Word& port, const uint8_t* bytes, size_t n) {
    uint64_t value = 0;
    for (size_t i = 0; i < n && i < sizeof(uint64_t); ++i) value |= static_cast<uint64_t>(bytes[i]) << (8 * i);
    port = static_cast<Word>(value);
}

template <std::size_t Words>
void load_word(VlWide<Words>& port, const uint8_t* bytes, size_t n) {
    for (std::size_t w = 0; w < Words; ++w) {
        uint32_t value = 0;
        for (size_t b = 0; b < 4; ++b) {
            size_t i = 4 * w + b;
            if (i < n) value |= static_cast<uint32_t>(bytes[i]) << (8 * b);
        }
        port[w] = value;
    }
}

template <typename Word>
void store_word(const Word& port, uint8_t* bytes) {
    uint64_t value = static_cast<uint64_t>(port);
    for (size_t i = 0; i < STREAM_BYTES; ++i) bytes[i] = static_cast<uint8_t>(value >> (8 * i));
}

template <std::size_t Words>
void store_word(const VlWide<Words>& port, uint8_t* bytes) {
    for (size_t i = 0; i < STREAM_BYTES; ++i) bytes[i] = static_cast<uint8_t>(port[i / 4] >> (8 * (i % 4)));
}

}  // namespace

// One core: its context, model, optional trace, and the cycle count since the model was made.
struct Core {
    std::unique_ptr<VerilatedContext> context;
    std::unique_ptr<Vcore> top;
#ifdef PYNQ_RL_TRACE
    std::unique_ptr<VerilatedVcdC> trace;
#endif
    uint64_t cycle = 0;

    void edge(int level) {
        top->aclk = level;
        top->eval();
        context->timeInc(4);  // two half periods of 4 time units: the rtl backend's CLOCK_PERIOD of 8
#ifdef PYNQ_RL_TRACE
        if (trace) trace->dump(context->time());
#endif
    }

    // One clock cycle: the inputs as they are now sampled at the rising edge, then the falling edge.
    void tick() {
        top->eval();  // inputs set since the last edge settle the combinational logic first
        edge(1);
        edge(0);
        ++cycle;
    }

    void idle_inputs() {
        top->s_axi_control_awvalid = 0;
        top->s_axi_control_wvalid = 0;
        top->s_axi_control_bready = 0;
        top->s_axi_control_arvalid = 0;
        top->s_axi_control_rready = 0;
        top->s_axis_tvalid = 0;
        top->s_axis_tlast = 0;
        top->m_axis_tready = 0;
    }

    // Idle up to cycle `start` (the board's clock): the other cores' bus traffic moved the shared clock meanwhile.
    void catch_up(uint64_t start) {
        while (cycle < start) tick();
    }

    // Wait up to `timeout` cycles for `ready()`; false if it never came (rtl's _AxiLiteMaster._wait).
    template <typename Ready>
    bool wait_for(Ready ready, uint32_t timeout) {
        for (uint32_t i = 0; i < timeout; ++i) {
            if (ready()) return true;
            tick();
        }
        return false;
    }
};

// The library's interface: the only symbols it exports (it is compiled with -fvisibility=hidden).
#define VCORE_API __attribute__((visibility("default")))

extern "C" {

// Status codes of the bus calls (Python turns them into TimeoutError messages naming the phase).
enum { OK = 0, NO_WRITE_ADDRESS_READY = 1, NO_WRITE_RESPONSE = 2, NO_READ_ADDRESS_READY = 3, NO_READ_DATA = 4 };

VCORE_API uint32_t vcore_stream_bytes() { return STREAM_BYTES; }

VCORE_API int vcore_traced() {
#ifdef PYNQ_RL_TRACE
    return 1;
#else
    return 0;
#endif
}

// A new core, every register and memory at its initial value, its clock starting at cycle `start`, its reset held
// low for `low` cycles and then released for `high`; `vcd` (or null) names a VCD file to trace every signal into (a
// build with PYNQ_RL_TRACE only). `garbage_seed` 0: what has no initial value starts at 0; else at random values of
// that seed (Verilator's random reset): only the UltraRAM memories, which the converter leaves without initial loop.
VCORE_API Core* vcore_new(const char* vcd, uint64_t start, uint32_t low, uint32_t high, uint64_t garbage_seed) {
    auto* core = new Core;
    core->context = std::make_unique<VerilatedContext>();
    core->context->debug(0);
    // every register and memory with an initial value starts at it (MyHDL's, initial_values=True); the rest at 0 or,
    // with a garbage seed, at random
    core->context->randReset(garbage_seed ? 2 : 0);
    if (garbage_seed) core->context->randSeed(static_cast<int>(garbage_seed & 0x7fffffff));
    core->context->fatalOnError(false);
#ifdef PYNQ_RL_TRACE
    if (vcd != nullptr && vcd[0] != '\0') core->context->traceEverOn(true);
#endif
    core->top = std::make_unique<Vcore>(core->context.get(), "core");
    core->context->time(8 * start);  // the board's time base, 8 units a cycle (set once the model is added)
    core->cycle = start;
#ifdef PYNQ_RL_TRACE
    if (vcd != nullptr && vcd[0] != '\0') {
        core->trace = std::make_unique<VerilatedVcdC>();
        core->top->trace(core->trace.get(), 99);
        core->trace->open(vcd);
    }
#else
    (void)vcd;
#endif
    core->idle_inputs();
    core->top->aclk = 0;
    core->top->aresetn = 0;
    core->top->s_axi_control_wstrb = 0xF;
    for (uint32_t i = 0; i < low; ++i) core->tick();
    core->top->aresetn = 1;
    for (uint32_t i = 0; i < high; ++i) core->tick();
    return core;
}

VCORE_API void vcore_free(Core* core) {
    if (core == nullptr) return;
    core->top->final();
#ifdef PYNQ_RL_TRACE
    if (core->trace) core->trace->close();
#endif
    delete core;
}

VCORE_API uint64_t vcore_cycle(Core* core) { return core->cycle; }

// Let the core run to cycle `until` with its bus inputs idle.
VCORE_API void vcore_idle(Core* core, uint64_t until) { core->catch_up(until); }

// Pulse the reset: low for `low` cycles, then released for `high` (rtl's RtlCoreIP.reset; block RAM keeps its
// contents, as through a reset in the PL).
VCORE_API void vcore_reset(Core* core, uint64_t start, uint32_t low, uint32_t high) {
    core->catch_up(start);
    core->top->aresetn = 0;
    for (uint32_t i = 0; i < low; ++i) core->tick();
    core->top->aresetn = 1;
    for (uint32_t i = 0; i < high; ++i) core->tick();
}

// One AXI4-Lite write, handshake for handshake as rtl's _AxiLiteMaster.write.
VCORE_API int vcore_write(Core* core, uint64_t start, uint32_t address, uint32_t value, uint32_t timeout) {
    core->catch_up(start);
    Vcore* top = core->top.get();
    top->s_axi_control_awaddr = address;
    top->s_axi_control_wdata = value;
    top->s_axi_control_wstrb = 0xF;
    top->s_axi_control_awvalid = top->s_axi_control_wvalid = top->s_axi_control_bready = 1;
    core->tick();
    if (!core->wait_for([top] { return top->s_axi_control_awready != 0; }, timeout)) return NO_WRITE_ADDRESS_READY;
    core->tick();  // the AW/W handshake edge
    top->s_axi_control_awvalid = top->s_axi_control_wvalid = 0;
    if (!core->wait_for([top] { return top->s_axi_control_bvalid != 0; }, timeout)) return NO_WRITE_RESPONSE;
    core->tick();  // the B handshake edge
    top->s_axi_control_bready = 0;
    return OK;
}

// One AXI4-Lite read, handshake for handshake as rtl's _AxiLiteMaster.read; the data lands in *value.
VCORE_API int vcore_read(Core* core, uint64_t start, uint32_t address, uint32_t* value, uint32_t timeout) {
    core->catch_up(start);
    Vcore* top = core->top.get();
    top->s_axi_control_araddr = address;
    top->s_axi_control_arvalid = top->s_axi_control_rready = 1;
    core->tick();
    if (!core->wait_for([top] { return top->s_axi_control_arready != 0; }, timeout)) return NO_READ_ADDRESS_READY;
    core->tick();  // the AR handshake edge
    top->s_axi_control_arvalid = 0;
    if (!core->wait_for([top] { return top->s_axi_control_rvalid != 0; }, timeout)) return NO_READ_DATA;
    *value = top->s_axi_control_rdata;
    core->tick();  // the R handshake edge
    top->s_axi_control_rready = 0;
    return OK;
}

// Both stream channels in the same cycles, as the DMA's MM2S and S2MM run on a board (rtl's stream_duplex).
//
// in[0:n_in] goes to s_axis while the core is ready (TLAST on its last beat if `last`); m_axis is taken while
// out has room for a whole beat within max_out bytes, up to TLAST. It returns when a cycle moves nothing, unless a
// channel is still open and the clock is short of `idle_until`: then it idles a cycle and looks again (what rtl's
// RtlDevice.idle does from Python, one cycle at a time, while a DMA waits on a computing core). `max_cycles` (0:
// none) bounds the cycles spent. Results: *accepted bytes taken from in, *received bytes written to out, *got_last.
VCORE_API void vcore_duplex(Core* core, uint64_t start, const uint8_t* in, uint64_t n_in, int last, uint8_t* out,
                  uint64_t max_out, uint64_t idle_until, uint64_t max_cycles, uint64_t* accepted_out,
                  uint64_t* received_out, int* got_last_out) {
    core->catch_up(start);
    Vcore* top = core->top.get();
    const uint64_t width = STREAM_BYTES;
    uint64_t accepted = 0, received = 0, cycles = 0;
    bool got_last = false;
    while (max_cycles == 0 || cycles < max_cycles) {
        bool sending = accepted < n_in && top->s_axis_tready;
        bool taking = !got_last && received + width <= max_out;
        bool receiving = taking && top->m_axis_tvalid;
        if (!(sending || receiving)) {
            bool open = accepted < n_in || taking;
            if (!open || core->cycle >= idle_until) break;
            top->s_axis_tvalid = 0;  // between two DMA services both channels rest, as in rtl
            top->s_axis_tlast = 0;
            top->m_axis_tready = 0;
            core->tick();
            ++cycles;
            if (core->cycle >= idle_until) break;
            continue;
        }
        if (sending) {
            uint64_t n = n_in - accepted < width ? n_in - accepted : width;
            load_word(top->s_axis_tdata, in + accepted, n);
            top->s_axis_tlast = last && accepted + width >= n_in;
            accepted += n;
        }
        top->s_axis_tvalid = sending;
        top->m_axis_tready = taking;
        if (receiving) {
            store_word(top->m_axis_tdata, out + received);
            received += width;
            got_last = top->m_axis_tlast;
        }
        core->tick();  // the beats move on this edge
        ++cycles;
    }
    top->s_axis_tvalid = 0;
    top->s_axis_tlast = 0;
    top->m_axis_tready = 0;
    *accepted_out = accepted;
    *received_out = received;
    *got_last_out = got_last;
}

}  // extern "C"
