"""Give MyHDL a call-stack lookup that costs a frame walk, not a source read per frame.

MyHDL records where every ``@block``, ``@always``, ``@always_comb``, ``@always_seq`` and ``@instance`` was made with
``inspect.stack()`` (``_getCallInfo`` in ``myhdl._block`` and ``myhdl._instance``), which builds a record with source
lines for *every* frame on the stack (``getframeinfo``, then ``getmodule``, a scan of ``sys.modules`` for each frame
whose code came from a string, as a pytest-xdist worker's does) only for MyHDL to read the frame and the function name
of the first six. Profiling the conversion of the Pynq-Z2 GAE core put 31.4 s of its 34.8 s there (5,879 calls, 171k
frame records): elaboration and conversion cost (design instances) x (stack depth) x (a source lookup).

:func:`install` gives those two modules a view of :mod:`inspect` whose ``stack()`` returns the same records, made only
when read and without source (``code_context`` and ``index`` ``None``, as with ``inspect.stack(context=0)``). Every
field MyHDL reads is the same, so designs elaborate and convert to the same Verilog byte for byte, and a deep caller
costs a frame walk. It is installed when :mod:`pynq_rl.overlay.hdl` is imported, before any block runs; a MyHDL
release whose modules no longer look call sites up this way is left as released.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from types import FrameType, ModuleType
from typing import Any, overload

#: The MyHDL modules whose ``_getCallInfo`` walks the stack with ``inspect.stack()``.
PATCHED_MODULES = ("myhdl._block", "myhdl._instance")


class FrameRecords(Sequence[inspect.FrameInfo]):
    """``inspect.stack()``'s records from a frame outward, made when read and without source lines: each is the frame,
    its file name, line number and function name, ``code_context`` and ``index`` ``None``. MyHDL reads the first six
    and the length, so walking the frames is all a lookup costs."""

    def __init__(self, frame: FrameType | None) -> None:
        self._frames: list[tuple[FrameType, int]] = []  # with the line each frame is at now, as inspect records it
        while frame is not None:
            self._frames.append((frame, frame.f_lineno))
            frame = frame.f_back

    def __len__(self) -> int:
        return len(self._frames)

    @overload
    def __getitem__(self, index: int) -> inspect.FrameInfo: ...

    @overload
    def __getitem__(self, index: slice) -> list[inspect.FrameInfo]: ...

    def __getitem__(self, index: int | slice) -> inspect.FrameInfo | list[inspect.FrameInfo]:
        if isinstance(index, slice):
            return [_record(*entry) for entry in self._frames[index]]
        return _record(*self._frames[index])


def _record(frame: FrameType, lineno: int) -> inspect.FrameInfo:
    code = frame.f_code
    return inspect.FrameInfo(frame, code.co_filename, lineno, code.co_name, None, None)


class _InspectWithFrameWalk(ModuleType):
    """The :mod:`inspect` module as MyHDL sees it once :func:`install` ran: every name is the standard one except
    ``stack``, which walks frames (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__("inspect", inspect.__doc__)

    def __getattr__(self, name: str) -> Any:
        return getattr(inspect, name)

    @staticmethod
    def stack(context: int = 1) -> FrameRecords:
        """``inspect.stack()`` seen from the caller, records without source lines (``context`` is ignored)."""
        return FrameRecords(sys._getframe(1))


def install() -> bool:
    """Point MyHDL's call-site lookups at the frame-walking ``stack()``; return whether it is in place.

    Idempotent. Leaves MyHDL untouched (and returns ``False``) if either module no longer has an ``inspect`` global
    and a ``_getCallInfo`` function, so a MyHDL that changed how it finds call sites runs as released.
    """
    import myhdl  # noqa: F401  (imports both patched modules)

    modules = [sys.modules[name] for name in PATCHED_MODULES]
    if not all(hasattr(module, "inspect") and hasattr(module, "_getCallInfo") for module in modules):
        return False
    view = next((m.inspect for m in modules if isinstance(m.inspect, _InspectWithFrameWalk)), _InspectWithFrameWalk())
    for module in modules:
        module.inspect = view  # type: ignore[attr-defined]
    return True


def installed() -> bool:
    """Whether MyHDL's call-site lookups use the frame-walking ``stack()``."""
    return all(
        isinstance(getattr(sys.modules.get(name), "inspect", None), _InspectWithFrameWalk) for name in PATCHED_MODULES
    )
