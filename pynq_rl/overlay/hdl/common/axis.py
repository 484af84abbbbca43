"""AXI4-Stream port signals, named by the AXI spec so cocotbext-axi's ``from_prefix`` binds them."""

from myhdl import Signal, intbv

__all__ = ["AxiStream"]


class AxiStream:
    """One AXI4-Stream: ``tdata`` (width bits), ``tvalid``, ``tready``, ``tlast``."""

    def __init__(self, width: int) -> None:
        if width < 8 or width % 8:
            raise ValueError(f"AXI-Stream width must be a positive multiple of 8 bits, not {width!r}")
        self.tdata = Signal(intbv(0)[width:])
        self.tvalid, self.tready, self.tlast = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
