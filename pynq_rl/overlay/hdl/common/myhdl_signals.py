"""Keep MyHDL's registry of signals to the signals still alive.

MyHDL appends every ``Signal`` it makes to one process-wide list (``myhdl._simulator._signals``) and never takes one
out. Each ``Simulation`` walks the whole list twice: when it starts (a waiter for every shadow signal) and when it
ends (every signal reset to its initial value, two ``deepcopy`` calls each). A process that elaborates many designs
(a test worker, a notebook, a parameter sweep, the ``rtl`` backend opened again and again) so pays, for every new
simulation, for every signal of every design since it started, and keeps them all in memory. Measured: with 300,000
signals of earlier designs in the list, simulating one GAE processing element for 40 cycles took 2.4 s instead of
0.08 s, 90 % of it resetting signals nothing could reach any more; a pytest worker that had run the full-size
``rtl`` tests spent 31-38 s on eight such simulations.

Dead designs do not die by themselves either: every elaboration records each list of signals (a memory) in another
process-wide table (``myhdl._extractHierarchy._memInfoMap``, keyed by the list's ``id``), which only MyHDL's old
hierarchy extractor ever empties, so every memory of every design simulated or converted, with all its signals, stays
alive (after converting the three Pynq-Z2 cores, 45,600 of their 48,000 signals). A pruning drops those records too,
unless something else (the ``memdict`` of a block still alive) holds them, so a design still alive converts as before.

:func:`install` wraps the function ``Simulation`` calls first (``myhdl._Simulation._makeWaiters``): when the list
has grown by :data:`PRUNE_AFTER` signals (or by as many as were alive at the last pruning, if more) since it was last
pruned, :func:`forget_dead_signals` drops the signals nothing else references before the new simulation looks at
the list. The design being simulated is alive (the simulation's arguments hold it), so every signal it can read
stays, in creation order; what goes could never be read, reset or waited on again, so simulations behave the same.
A signal cannot be weakly referenced (``Signal`` has ``__slots__`` without ``__weakref__``), so which are alive is
found the way the garbage collector finds it: drop the list's references, collect, and keep the signals still
tracked. A MyHDL release without ``_makeWaiters`` or the list is left as released.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any

#: signals added since the last pruning that make the next simulation prune first (a pruning costs one garbage
#: collection and one walk over the tracked objects, ~1 s in a test worker of 3.7 million objects; a dead signal
#: costs ~10 us per simulation, so fewer than this are cheaper kept than pruned)
PRUNE_AFTER = 50_000


class _Pruning:
    """The wrapped ``_makeWaiters``, with what the last pruning left (so the threshold follows the live set)."""

    def __init__(self, make_waiters: Callable[[Any], Any]) -> None:
        self.make_waiters = make_waiters
        self.alive_after_last = 0

    def __call__(self, arglist: Any) -> Any:
        registry = sys.modules["myhdl._simulator"]._signals
        if len(registry) - self.alive_after_last >= max(PRUNE_AFTER, self.alive_after_last):
            forget_dead_signals()
            self.alive_after_last = len(registry)
        return self.make_waiters(arglist)


def forget_dead_signals() -> int:
    """Drop from MyHDL's signal registry every signal nothing else references, and from its memory table every record
    nothing else references (which frees the memories and their signals); return how many signals went.

    What is kept stays in creation order (the order MyHDL adds the shadow signals' waiters in).
    """
    import myhdl._extractHierarchy
    import myhdl._Signal
    import myhdl._simulator

    registry: list[Any] = myhdl._simulator._signals
    memories: dict[int, Any] = myhdl._extractHierarchy._memInfoMap
    position = {id(signal): index for index, signal in enumerate(registry)}
    record_key = {id(record): (index, key) for index, (key, record) in enumerate(memories.items())}
    del registry[:]  # the registry's and the table's references were what kept the dead ones
    memories.clear()
    gc.collect()  # and cycles among them (a slice and its parent, a shadow signal and its generator)
    made_meanwhile = {id(obj) for obj in (*registry, *memories.values())}  # by a finalizer the collection ran
    signals, records = [], []
    for obj in gc.get_objects():  # the id first: isinstance reads __class__, which some objects warn on (torch's)
        if id(obj) in made_meanwhile:
            continue
        if id(obj) in position and isinstance(obj, myhdl._Signal._Signal):
            signals.append(obj)
        elif id(obj) in record_key and isinstance(obj, myhdl._extractHierarchy._MemInfo):
            records.append(obj)
    signals.sort(key=lambda signal: position[id(signal)])
    registry[:0] = signals
    records.sort(key=lambda record: record_key[id(record)][0])
    for record in records:
        memories.setdefault(record_key[id(record)][1], record)
    return len(position) - len(signals)


def install() -> bool:
    """Make every new simulation prune MyHDL's signal registry first when it has grown; return whether it is in place.

    Idempotent. Leaves MyHDL untouched (and returns ``False``) if ``myhdl._Simulation`` has no ``_makeWaiters``,
    ``myhdl._simulator`` no ``_signals`` list or ``myhdl._extractHierarchy`` no ``_memInfoMap`` table.
    """
    import myhdl  # noqa: F401  (imports the modules below)

    simulation = sys.modules["myhdl._Simulation"]
    make_waiters = getattr(simulation, "_makeWaiters", None)
    registry = getattr(sys.modules["myhdl._simulator"], "_signals", None)
    memories = getattr(sys.modules["myhdl._extractHierarchy"], "_memInfoMap", None)
    if make_waiters is None or not isinstance(registry, list) or not isinstance(memories, dict):
        return False
    if not isinstance(make_waiters, _Pruning):
        simulation._makeWaiters = _Pruning(make_waiters)  # type: ignore[attr-defined]
    return True


def installed() -> bool:
    """Whether new simulations prune MyHDL's signal registry."""
    return isinstance(getattr(sys.modules.get("myhdl._Simulation"), "_makeWaiters", None), _Pruning)
