"""Narrowing a core spec to the one core it must be: what the build tools that handle one kind of core read.

:class:`~pynq_rl.overlay.spec.CoreSlot` holds any core's spec (:data:`~pynq_rl.overlay.spec.CoreSpec`); a report
that builds only the GAE PE, or only the replay tree, takes it through :func:`slot_spec` (the spec a slot of that
core holds) or :func:`spec_as` (a spec held elsewhere), which check the type instead of assuming it.
"""

from __future__ import annotations

from typing import TypeVar

from .. import spec as S

__all__ = ["slot_spec", "spec_as"]

SpecT = TypeVar("SpecT", S.GaeSpec, S.ReplaySpec, S.ParsaSpec)


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
