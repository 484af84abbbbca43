"""A status line with a running clock on stderr while an agent waits for something slow to start, so the user sees
what is happening instead of silence.

On the ``rtl`` backend, loading a core takes 10-20 s before the first step: importing the HDL (MyHDL reads the source
of every block), elaborating the design (about two thirds of it), resetting the simulation and the driver's first
register reads through the simulated bus. ``verilator`` builds or loads its compiled model. Ape-X waits for Ray to
start its processes. :func:`starting` shows ``starting the GAE core on rtl (MyHDL elaboration, simulation start)
[00:12]`` while that runs (a tqdm bar without a total, its clock refreshed twice a second on a terminal) and ends with
the time it took.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator

from tqdm.auto import tqdm

__all__ = ["SLOW_STARTS", "core_start_text", "starting"]

SLOW_STARTS = {
    "rtl": "MyHDL elaboration, simulation start",
    "verilator": "building or loading the Verilator model",
}
"""the backends whose core takes seconds to start, and what it does meanwhile"""


def core_start_text(core: str, backend: str) -> str | None:
    """What :func:`starting` says while ``core`` (``"GAE"``...) starts on ``backend``; None where that is quick."""
    doing = SLOW_STARTS.get(backend)
    return None if doing is None else f"starting the {core} core on {backend} ({doing})"


@contextlib.contextmanager
def starting(text: str | None, enabled: bool = True) -> Iterator[None]:
    """Show ``text`` with a running clock on stderr while the body runs, then ``text: ready [mm:ss]``.

    On a terminal the line is redrawn in place; where stderr is captured (a log, a pipe) it is written once, when the
    wait is over, as ``text: ready [mm:ss]``: a log gets one line per start, not a line for the start and another for
    its end. Nothing is shown when ``text`` is None or ``enabled`` is false (``--no-progress``).
    """
    if text is None or not enabled:
        yield
        return
    if not sys.stderr.isatty():
        started = time.monotonic()
        yield
        print(f"{text}: ready [{tqdm.format_interval(time.monotonic() - started)}]", file=sys.stderr, flush=True)
        return
    bar = tqdm(total=None, desc=text, bar_format="{desc} [{elapsed}]", file=sys.stderr, dynamic_ncols=True)
    done = threading.Event()

    def tick() -> None:
        while not done.wait(0.5):
            bar.refresh()

    clock = threading.Thread(target=tick, name="pynq-rl-startup-clock", daemon=True)
    clock.start()
    try:
        yield
        bar.set_description_str(f"{text}: ready", refresh=False)
    finally:
        done.set()
        clock.join()
        bar.close()
