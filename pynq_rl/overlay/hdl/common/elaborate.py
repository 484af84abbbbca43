"""Elaborate a MyHDL design on a shallow call stack.

MyHDL records where every ``@block``, ``@always``, ``@always_comb``, ``@always_seq`` and ``@instance`` was made with
``inspect.stack()``, which builds a frame record, with its source lines, for *every* frame on the stack, only to use
the first four. Elaboration therefore costs (design instances) x (stack depth): called from under pytest (about 40
frames), and worse under pytest-xdist (the worker's code runs from a string, so each of those frames costs a scan of
``sys.modules``), elaborating the Pynq-Z2 overlay took several times as long as the same call in a plain script.
:func:`elaborate` runs the block function on a fresh thread, whose stack starts empty, so the cost stays that of the
design alone wherever the caller is. ``Block.convert`` elaborates the design a second time (MyHDL's ``_clear`` calls
the block function again), so conversions run through :func:`elaborate` as well: converting the Pynq-Z2 cores took
740 s in a pytest-xdist worker without that, 88 s in a plain script.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def elaborate(build: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Return ``build(*args, **kwargs)`` computed on a fresh thread (see the module docstring for why).

    The caller waits for it, so nothing runs concurrently; an exception raised by ``build`` is raised here.
    """
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="myhdl-elaborate") as pool:
        return pool.submit(build, *args, **kwargs).result()
