"""A core slot's spec, typed: what the build tools read of ``CoreSlot.spec``.

:class:`~pynq_rl.overlay.spec.CoreSlot` declares its ``spec`` as ``object`` (it holds a GaeSpec, a ReplaySpec or
a ParsaSpec). The build modules read attributes of it, so they take it through :func:`core_spec` (any of the three,
:data:`CoreSpec`: what every core spec has, ``stream_bytes`` and ``parameter_registers()``) or :func:`slot_spec`
(the one a slot of that core holds), which check the type instead of assuming it; :func:`spec_as` does the same for
a spec held elsewhere.
"""

from __future__ import annotations

from typing import TypeAlias, TypeVar

from .. import spec as S

__all__ = ["CoreSpec", "core_spec", "slot_spec", "spec_as"]

CoreSpec: TypeAlias = S.GaeSpec | S.ReplaySpec | S.ParsaSpec
"""the spec of any core"""

SpecT = TypeVar("SpecT", S.GaeSpec, S.ReplaySpec, S.ParsaSpec)


def core_spec(slot: S.CoreSlot) -> CoreSpec:
    """``slot.spec``, a GaeSpec, ReplaySpec or ParsaSpec.

    Raises
    ------
    TypeError
        If it is none of them.
    """
    spec = slot.spec
    if not isinstance(spec, (S.GaeSpec, S.ReplaySpec, S.ParsaSpec)):
        raise TypeError(f"core slot {slot.name!r} holds a {type(spec).__name__}, not a core spec")
    return spec


def slot_spec(slot: S.CoreSlot, kind: type[SpecT]) -> SpecT:
    """``slot.spec``, which must be a ``kind`` (``slot_spec(board.slot("gae"), S.GaeSpec)``).

    Raises
    ------
    TypeError
        If it is not.
    """
    return spec_as(slot.spec, kind, f"core slot {slot.name!r}")


def spec_as(spec: object, kind: type[SpecT], holder: str = "the build") -> SpecT:
    """``spec``, which must be a ``kind``; ``holder`` names what holds it in the error.

    Raises
    ------
    TypeError
        If it is not.
    """
    if not isinstance(spec, kind):
        raise TypeError(f"{holder} holds a {type(spec).__name__}, not a {kind.__name__}")
    return spec
