"""The fixed-point format (:class:`QFormat`) in which every core's spec states its data, coefficient and code formats.

Its own module because it is a value type, not a register: the core modules and ``fixed.py`` use it, and it imports
nothing from the rest of the package.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class QFormat:
    """A two's-complement (or unsigned) fixed-point format: ``width`` bits, ``frac`` of them fractional.

    The represented value of integer code ``q`` is ``q * 2**-frac``. Rounding is round-half-up (add half an LSB,
    arithmetic shift right) everywhere: it costs one constant on a DSP48's carry input. Out-of-range results
    saturate and raise a flag; they never wrap.
    """

    width: int
    """total bits, sign included"""
    frac: int
    """fractional bits"""
    signed: bool = True
    """two's complement if True, unsigned otherwise"""

    def __post_init__(self) -> None:
        if not 1 <= self.width <= 62:
            raise ValueError(f"QFormat width must be 1..62 (int64 models), not {self.width!r}")
        if not 0 <= self.frac <= 62:
            raise ValueError(f"QFormat frac must be 0..62, not {self.frac!r}")

    @property
    def min_code(self) -> int:
        """smallest integer code"""
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def max_code(self) -> int:
        """largest integer code"""
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    @property
    def lsb(self) -> float:
        """value of one least significant bit"""
        return 2.0**-self.frac

    @property
    def min_value(self) -> float:
        """smallest representable value"""
        return self.min_code * self.lsb

    @property
    def max_value(self) -> float:
        """largest representable value"""
        return self.max_code * self.lsb

    def __str__(self) -> str:
        kind = "Q" if self.signed else "UQ"
        return f"{kind}{self.width - self.frac - int(self.signed)}.{self.frac}"
