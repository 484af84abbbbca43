"""AXI4-Lite slave whose register file is generated from a ``spec.py`` table.

The decoder, the storage of read-write registers, the self-clearing (pulse) fields and the read multiplexer are all
built from the one table the drivers and the ``.hwh`` use, so HDL, driver and emulation cannot disagree.

Registers are decoded by word address (AWADDR/ARADDR bits 1:0 are ignored: AXI4-Lite accesses are full-width, the
byte lanes are WSTRB's). Every access answers OKAY: a read of an offset no register holds returns 0, a write to one
(or to a read-only register) changes nothing, so no access the ARM makes can raise a bus error. One transaction at a
time; a write waits for its address and data together (AWVALID and WVALID, which AXI lets a slave do; they may
arrive in either order, after any delay)::

    aclk    _/^\\_/^\\_/^\\_/^\\_/^\\_
    awvalid _/^^^^^^^\\___________     (and wvalid)
    awready _____/^^^\\___________     (and wready): AW and W complete on the next edge
    bvalid  _________/^^^^^^^\\___     from that edge until bready; the register holds the data then

A read is answered the cycle after its AR handshake, unless its register is in ``hold`` and that signal is high:
then RVALID waits (AXI wait states) until the signal drops or ``hold_cycles`` cycles have passed::

    arvalid _/^^^^^^^\\_______________
    arready _____/^^^\\_______________
    hold    ^^^^^^^^^^^^^^^^^\\_______     (register in ``hold``)
    rvalid  _____________________/^^^     the cycle after hold drops (or after hold_cycles wait states)
"""

from myhdl import Signal, always_comb, always_seq, block, concat, intbv

from ...spec import READ_ONLY, pulse_mask

__all__ = ["AxiLiteBus", "axi_lite_regfile", "held_while_busy"]


class AxiLiteBus:
    """AXI4-Lite slave port signals, named by the AXI spec (cocotbext-axi binds them with ``from_prefix``)."""

    def __init__(self, addr_width: int = 16) -> None:
        self.awaddr = Signal(intbv(0)[addr_width:])
        self.awvalid, self.awready = Signal(bool(0)), Signal(bool(0))
        self.wdata, self.wstrb = Signal(intbv(0)[32:]), Signal(intbv(0)[4:])
        self.wvalid, self.wready = Signal(bool(0)), Signal(bool(0))
        self.bresp, self.bvalid, self.bready = Signal(intbv(0)[2:]), Signal(bool(0)), Signal(bool(0))
        self.araddr = Signal(intbv(0)[addr_width:])
        self.arvalid, self.arready = Signal(bool(0)), Signal(bool(0))
        self.rdata, self.rresp = Signal(intbv(0)[32:]), Signal(intbv(0)[2:])
        self.rvalid, self.rready = Signal(bool(0)), Signal(bool(0))


@block
def axi_lite_regfile(
    bus,
    table,
    storage,
    live,
    constants,
    pulses,
    clock,
    reset,
    written=None,
    window=None,
    hold=None,
    hold_cycles: int = 0,
    written_busy=None,
):
    """AXI-Lite register file for ``table``.

    bus       : AxiLiteBus
    table     : the core's register table (``spec.py``)
    storage   : dict register name -> Signal(32), out -- value of each read-write register (pulse bits read 0)
    live      : dict register name -> Signal(32), in  -- read-only registers driven by the core (STATUS, CYCLES)
    constants : dict register name -> int             -- read-only registers fixed at build time (ID, parameters)
    pulses    : dict (register, field) -> Signal(bool), out -- one-cycle pulse when that pulse field is written 1
    clock     : Signal(bool), in
    reset     : ResetSignal, in
    written   : dict register name -> Signal(bool), out (optional) -- one-cycle pulse after any write to that
                register, in the cycle its storage holds the new value (a SEED write reseeding a PRNG)
    window    : (names, strobe, addr, data), optional -- write-only registers ``names`` are not stored here: each
                write to one of them is passed on as a one-cycle ``strobe`` (Signal(bool), out) with its word
                address ``addr`` (byte address // 4: Signal two bits narrower than the bus's, out) and ``data``
                (Signal(32), out); they read 0 (a register window a core keeps in its own memory, such as a
                mailbox)
    hold      : dict register name -> Signal(bool), in (optional) -- a read of that register waits while the signal
                is high, at most ``hold_cycles`` wait states (a result register read before its result is ready)
    written_busy : Signal(bool), in (optional) -- the core's BUSY: a ``written`` pulse that comes while it is high
                is held until it drops (:func:`held_while_busy`)

    A register in both ``storage`` and ``live`` is written to ``storage`` and read from ``live`` (a register whose
    read value is state the write only initializes, such as a PRNG seed).
    """
    written = written or {}
    hold = hold or {}
    window_names = set(window[0]) if window else set()
    addr_width = len(bus.awaddr)
    for name, reg in table.items():
        if reg["address_offset"] % 4:
            raise ValueError(f"register {name} at {reg['address_offset']:#x} is not word-aligned")
    write_strobe = Signal(bool(0))
    write_addr = Signal(intbv(0)[addr_width - 2 :])  # word addresses: the byte lanes are WSTRB's
    write_data = Signal(intbv(0)[32:])
    write_mask = Signal(intbv(0)[32:])  # WSTRB expanded to bits: byte lanes to write
    read_addr = Signal(intbv(0)[addr_width - 2 :])
    insts = []

    for name, reg in table.items():
        if name in storage:
            keep = 0xFFFF_FFFF & ~pulse_mask(reg)
            inst = _register_write(
                storage[name],
                write_strobe,
                write_addr,
                write_data,
                write_mask,
                reg["address_offset"] // 4,
                keep,
                clock,
                reset,
            )
            inst.name = f"reg_{name.lower()}"
            insts.append(inst)
        elif reg["access"] != READ_ONLY and name not in window_names:
            raise ValueError(f"writable register {name} has no storage signal")
    if window:
        insts.append(_write_window(*window[1:], write_strobe, write_addr, write_data))
    for (name, fld_name), pulse in pulses.items():
        fld = table[name]["fields"][fld_name]
        insts.append(
            _pulse(
                pulse,
                write_strobe,
                write_addr,
                write_data,
                write_mask,
                table[name]["address_offset"] // 4,
                fld["bit_offset"],
                clock,
                reset,
            )
        )

    for name, pulse in written.items():
        if name not in storage:
            raise ValueError(f"register {name} is not writable: no write pulse")
        offset = table[name]["address_offset"] // 4
        if written_busy is None:
            insts.append(_write_pulse(pulse, write_strobe, write_addr, offset, clock, reset))
        else:
            raw = Signal(bool(0))
            insts += [
                _write_pulse(raw, write_strobe, write_addr, offset, clock, reset),
                held_while_busy(pulse, raw, written_busy, clock, reset),
            ]

    # read multiplexer: a cascade of comparators, one per register
    previous = Signal(intbv(0)[32:])
    # the read multiplexer's base (0) reads the address bits the word decode leaves out, so that they count as used
    # (the port stays the byte address Vivado packages)
    byte_bits = Signal(intbv(0)[4:])
    insts.append(_byte_bits(byte_bits, bus.awaddr, bus.araddr))
    insts.append(_constant_zero(previous, byte_bits))
    for name, reg in table.items():
        current = Signal(intbv(0)[32:])
        offset = reg["address_offset"] // 4
        if name in live:
            insts.append(_read_signal(current, previous, read_addr, offset, live[name]))
        elif name in storage:
            insts.append(_read_signal(current, previous, read_addr, offset, storage[name]))
        elif name in constants:
            insts.append(_read_constant(current, previous, read_addr, offset, constants[name]))
        elif name in window_names:
            continue  # write-only window register: reads 0
        else:
            raise ValueError(f"register {name} has no source")
        previous = current
    read_value = previous

    # read wait states: ``read_hold`` = the register being read is held (a cascade like the read multiplexer)
    read_hold = Signal(bool(0))
    read_pending = Signal(bool(0))
    waited = Signal(intbv(0, min=0, max=hold_cycles + 2))  # at least one bit, with or without holds
    held_before = Signal(bool(0))
    insts.append(_constant_zero(held_before, read_addr))
    for name, signal in hold.items():
        held = Signal(bool(0))
        insts.append(_read_signal(held, held_before, read_addr, table[name]["address_offset"] // 4, signal))
        held_before = held
    insts.append(_hold_bound(read_hold, held_before, waited, hold_cycles))

    @always_seq(clock.posedge, reset=reset)
    def handshake():
        bus.awready.next = False
        bus.wready.next = False
        bus.arready.next = False
        write_strobe.next = False
        if bus.bvalid and bus.bready:
            bus.bvalid.next = False
        if bus.rvalid and bus.rready:
            bus.rvalid.next = False
        if bus.awvalid and bus.wvalid and not bus.bvalid and not bus.awready:
            bus.awready.next = True
            bus.wready.next = True
            write_strobe.next = True
            write_addr.next = bus.awaddr[addr_width:2]
            write_data.next = bus.wdata
            write_mask.next = concat(
                bus.wstrb[3],
                bus.wstrb[3],
                bus.wstrb[3],
                bus.wstrb[3],
                bus.wstrb[3],
                bus.wstrb[3],
                bus.wstrb[3],
                bus.wstrb[3],
                bus.wstrb[2],
                bus.wstrb[2],
                bus.wstrb[2],
                bus.wstrb[2],
                bus.wstrb[2],
                bus.wstrb[2],
                bus.wstrb[2],
                bus.wstrb[2],
                bus.wstrb[1],
                bus.wstrb[1],
                bus.wstrb[1],
                bus.wstrb[1],
                bus.wstrb[1],
                bus.wstrb[1],
                bus.wstrb[1],
                bus.wstrb[1],
                bus.wstrb[0],
                bus.wstrb[0],
                bus.wstrb[0],
                bus.wstrb[0],
                bus.wstrb[0],
                bus.wstrb[0],
                bus.wstrb[0],
                bus.wstrb[0],
            )
        if bus.awready:  # the AW/W handshakes complete on this edge: respond
            bus.bvalid.next = True
            bus.bresp.next = 0
        if bus.arvalid and not bus.rvalid and not bus.arready and not read_pending:
            bus.arready.next = True
            read_addr.next = bus.araddr[addr_width:2]
        if bus.arready or read_pending:
            if read_hold:  # wait state: the register's value is not ready yet
                read_pending.next = True
                waited.next = waited + 1
            else:
                read_pending.next = False
                waited.next = 0
                bus.rdata.next = read_value
                bus.rvalid.next = True
                bus.rresp.next = 0

    insts.append(handshake)
    return insts


@block
def held_while_busy(pulse_out, pulse_in, busy, clock, reset):
    """``pulse_out`` = ``pulse_in`` (a register's ``written`` pulse), held back while ``busy``.

    A write whose pulse acts on a core's state (SEED reseeds a PRNG, EPSILON loads the live exploration rate, REWARD
    stores a pending reward) must not change an operation halfway through: that operation would then mix old and new
    values, and the emulation, which computes an operation whole, could not say which records saw which. So a pulse
    that comes while the core is BUSY is remembered and fires in the first cycle the core is not (an operation's
    end, or SOFT_RESET's), once however many writes came meanwhile: the register's storage holds the last of them,
    which is what the firing pulse loads. Outside an operation it passes through combinationally, as before.

    pulse_out : Signal(bool), out
    pulse_in  : Signal(bool), in  -- the register's write pulse
    busy      : Signal(bool), in  -- the core's STATUS.BUSY
    clock     : Signal(bool), in
    reset     : ResetSignal, in   -- forgets a held pulse (the register's storage resets too)
    """
    pending = Signal(bool(0))

    @always_seq(clock.posedge, reset=reset)
    def hold():
        pending.next = busy and (pending or pulse_in)

    @always_comb
    def fire():
        pulse_out.next = (pulse_in or pending) and not busy

    return hold, fire


@block
def _register_write(q, strobe, addr, data, mask, offset: int, keep: int, clock, reset):
    """Store the written byte lanes (WSTRB) of a read-write register; pulse bits are never stored."""

    @always_seq(clock.posedge, reset=reset)
    def write():
        if strobe and addr == offset:
            q.next = ((q & ~mask) | (data & mask)) & keep

    return write


@block
def _pulse(pulse, strobe, addr, data, mask, offset: int, bit: int, clock, reset):
    """A one-cycle pulse when a write sets ``bit`` of the register at word ``offset`` in a byte lane WSTRB writes."""

    @always_seq(clock.posedge, reset=reset)
    def fire():
        pulse.next = strobe and addr == offset and data[bit] and mask[bit]

    return fire


@block
def _write_pulse(pulse, strobe, addr, offset: int, clock, reset):
    @always_seq(clock.posedge, reset=reset)
    def fire():
        pulse.next = strobe and addr == offset

    return fire


@block
def _write_window(strobe, addr, data, write_strobe, write_addr, write_data):
    """A window's write port: the register file's decoded write, passed on as it is."""

    @always_comb
    def forward():
        strobe.next = write_strobe
        addr.next = write_addr
        data.next = write_data

    return forward


@block
def _hold_bound(read_hold, held, waited, hold_cycles: int):
    """``read_hold`` = the read register is held and fewer than ``hold_cycles`` wait states have passed.

    ``<``, not ``!=``: the bound then holds from any value of ``waited``, so a proof by induction sees it (with
    ``!=`` a counter past the bound would wrap around and wait again).
    """

    @always_comb
    def bound():
        read_hold.next = held and waited < hold_cycles

    return bound


@block
def _byte_bits(y, awaddr, araddr):
    """``y`` = bits 1:0 of both addresses (which the word decode does not use)."""

    @always_comb
    def pick():
        y.next = concat(awaddr[2:0], araddr[2:0])

    return pick


@block
def _constant_zero(y, unused):
    @always_comb
    def zero():
        y.next = unused & 0

    return zero


@block
def _read_signal(y, previous, addr, offset: int, source):
    @always_comb
    def select():
        if addr == offset:
            y.next = source
        else:
            y.next = previous

    return select


@block
def _read_constant(y, previous, addr, offset: int, value: int):
    @always_comb
    def select():
        if addr == offset:
            y.next = value
        else:
            y.next = previous

    return select
