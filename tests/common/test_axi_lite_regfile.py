"""The AXI4-Lite register file in MyHDL simulation: the two protocol points its formal check found.

- A pulse field (CTRL.START, CTRL.SOFT_RESET) fires only when WSTRB writes its byte lane: a write whose strobes
  leave byte 0 out stores nothing there and must start nothing.
- Registers decode by word address: AXI4-Lite accesses are full-width, so ARADDR/AWADDR bits 1:0 name no register
  of their own (a read at CTRL + 2 returns CTRL; the byte lanes are WSTRB's).

Both passed unnoticed through every bus model here (PYNQ's MMIO writes whole aligned words); the formal harness
(``tests/test_formal.py``) found them on the converted Verilog.
"""

from myhdl import ResetSignal, Signal, StopSimulation, block, instance, intbv

from pynq_rl.host.backends.rtl import clock_source
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.hdl.common.axi_lite import AxiLiteBus, axi_lite_regfile

TABLE = S.GAE_REGISTERS
CTRL, T_REG = TABLE["CTRL"]["address_offset"], TABLE["T"]["address_offset"]
START_BIT = TABLE["CTRL"]["fields"]["START"]["bit_offset"]


@block
def _bench(script, log):
    """The GAE register table's register file, driven by ``script(bus, clock)``; START pulses counted in
    ``log["starts"]``."""
    bus, clock, reset = AxiLiteBus(16), Signal(bool(0)), ResetSignal(0, active=0, isasync=False)
    storage = {name: Signal(intbv(reg["reset"])[32:]) for name, reg in TABLE.items() if reg["access"] != S.READ_ONLY}
    start, soft_reset = Signal(bool(0)), Signal(bool(0))
    live = {"STATUS": Signal(intbv(0)[32:]), "CYCLES": Signal(intbv(0)[32:])}
    regs = axi_lite_regfile(
        bus,
        TABLE,
        storage,
        live,
        S.GaeSpec(lanes=2, t_max=8).parameter_registers(),
        {("CTRL", "START"): start, ("CTRL", "SOFT_RESET"): soft_reset},
        clock,
        reset,
    )
    clk = clock_source(clock)

    @instance
    def count_starts():
        while True:
            yield clock.posedge
            if start:
                log["starts"] += 1

    @instance
    def run():
        yield clock.negedge
        reset.next = 1
        yield from script(bus, clock)
        for _ in range(4):
            yield clock.negedge
        raise StopSimulation

    return regs, clk, count_starts, run


def _write(bus, clock, address, value, strobes=0xF):
    bus.awaddr.next, bus.wdata.next, bus.wstrb.next = address, value, strobes
    bus.awvalid.next = bus.wvalid.next = bus.bready.next = True
    yield clock.negedge
    while not bus.awready:
        yield clock.negedge
    bus.awvalid.next = bus.wvalid.next = False
    while not bus.bvalid:
        yield clock.negedge
    yield clock.negedge
    bus.bready.next = False


def _read(bus, clock, address, out):
    bus.araddr.next, bus.arvalid.next, bus.rready.next = address, True, True
    yield clock.negedge
    while not bus.arready:
        yield clock.negedge
    bus.arvalid.next = False
    while not bus.rvalid:
        yield clock.negedge
    out.append(int(bus.rdata))
    yield clock.negedge
    bus.rready.next = False


def _simulate(script) -> dict:
    log = {"starts": 0}
    bench = _bench(script, log)
    bench.run_sim(quiet=True)
    return log


def test_a_pulse_field_fires_only_when_its_byte_lane_is_written():
    def script(bus, clock):
        yield from _write(bus, clock, CTRL, 1 << START_BIT, strobes=0b1110)  # START's byte left out
        yield from _write(bus, clock, CTRL, 1 << START_BIT, strobes=0b0001)

    assert _simulate(script)["starts"] == 1


def test_registers_decode_by_word_address():
    reads: list[int] = []

    def script(bus, clock):
        yield from _write(bus, clock, T_REG + 2, 5)  # bits 1:0 of the address name no register
        yield from _read(bus, clock, T_REG, reads)
        yield from _read(bus, clock, T_REG + 3, reads)
        yield from _write(bus, clock, T_REG, 7, strobes=0b0001)
        yield from _read(bus, clock, T_REG + 1, reads)

    _simulate(script)
    assert reads == [5, 5, 7]
