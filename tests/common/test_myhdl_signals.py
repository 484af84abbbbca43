"""MyHDL's signal registry keeps only live signals (``hdl.common.myhdl_signals``): dead ones go, live ones stay in
creation order, and a simulation started after a pruning behaves as one started without it."""

import warnings

import myhdl
import myhdl._simulator
import pytest
from myhdl import Signal, StopSimulation, always, always_comb, block, delay, instance, intbv

import pynq_rl.overlay.hdl  # noqa: F401  (installs the pruning)
from pynq_rl.overlay.hdl.common import myhdl_signals


def _registered(signals) -> list[int]:
    """Positions of ``signals`` in MyHDL's registry (-1: not there)."""
    position = {id(s): i for i, s in enumerate(myhdl._simulator._signals)}
    return [position.get(id(s), -1) for s in signals]


def _dead_signals(count: int) -> list[int]:
    """Make ``count`` signals, half of them with a slice (a reference cycle), and drop them; return their ids."""
    made = [Signal(intbv(0)[8:]) for _ in range(count)]
    slices = [signal(4, 0) for signal in made[::2]]
    return [id(s) for s in made + slices]


@block
def low_nibble_counter(low, clock):
    """``low`` = the low four bits of a free-running 8-bit count, through a slice (a shadow signal and its waiter)."""
    count = Signal(intbv(0)[8:])
    nibble = count(4, 0)

    @always(clock.posedge)
    def step():
        count.next = (count + 3) % 256

    @always_comb
    def show():
        low.next = nibble

    return step, show


def _run_counter(cycles: int = 12, before_run=lambda: None) -> list[int]:
    """Simulate :func:`low_nibble_counter` for ``cycles`` clocks (``before_run`` called once it is elaborated)."""
    low, clock = Signal(intbv(0)[4:]), Signal(bool(0))
    seen: list[int] = []

    @block
    def bench():
        dut = low_nibble_counter(low, clock)

        @instance
        def drive():
            for _ in range(cycles):
                yield delay(5)
                clock.next = 1
                yield delay(5)
                clock.next = 0
                seen.append(int(low))
            raise StopSimulation

        return dut, drive

    elaborated = bench()
    before_run()
    elaborated.run_sim(quiet=1)
    return seen


def test_importing_the_hdl_package_installs_the_pruning():
    assert myhdl_signals.installed()
    assert myhdl_signals.install() is True  # idempotent
    assert myhdl_signals.installed()


def test_dead_signals_go_and_live_ones_stay_in_creation_order():
    first = [Signal(intbv(0)[8:]) for _ in range(3)]
    dead = _dead_signals(200)
    shadow = first[1](3, 1)
    last = Signal(bool(0))
    assert myhdl_signals.forget_dead_signals() >= len(dead)
    kept = _registered([*first, shadow, last])
    assert -1 not in kept and kept == sorted(kept)
    assert not {id(s) for s in myhdl._simulator._signals} & set(dead) - {id(s) for s in (*first, shadow, last)}


def test_a_design_elaborated_before_a_pruning_keeps_its_shadow_signals():
    want = [(3 * (i + 1)) % 16 for i in range(12)]
    assert _run_counter() == want

    def prune():
        _dead_signals(500)
        assert myhdl_signals.forget_dead_signals() >= 750

    assert _run_counter(before_run=prune) == want  # its slice kept its waiter


def test_a_simulation_prunes_first_once_the_registry_has_grown(monkeypatch):
    monkeypatch.setattr(myhdl_signals, "PRUNE_AFTER", 1000)
    pruning = myhdl._Simulation._makeWaiters
    registry = myhdl._simulator._signals

    def room() -> int:
        """Signals that can still be made before the next simulation prunes."""
        grown = len(registry) - pruning.alive_after_last
        return max(myhdl_signals.PRUNE_AFTER, pruning.alive_after_last) - grown

    _run_counter(1)
    before = len(registry)
    kept = _dead_signals(max(0, room() - 100) * 2 // 3)  # 1.5 ids per signal made: half get a slice
    _run_counter(1)
    assert len(registry) >= before + len(kept)  # under the threshold: kept
    _dead_signals(room() + 100)
    _run_counter(1)
    assert len(registry) < before + 50  # past it: the dead ones went, before the simulation started


@block
def picked_from_memory(q, sel, memory):
    """``q`` = ``memory[sel]``: a list of signals, which MyHDL records as a memory when it elaborates."""

    @always_comb
    def read():
        q.next = memory[sel]

    return read


def _memory_design():
    memory = [Signal(intbv(i)[8:]) for i in range(4)]
    return picked_from_memory(Signal(intbv(0)[8:]), Signal(intbv(0, min=0, max=4)), memory), memory


def test_the_memories_of_dead_designs_go_and_those_of_live_ones_stay():
    import myhdl._extractHierarchy as hierarchy

    live, live_memory = _memory_design()
    dead_memory_ids = [id(_memory_design()[1]) for _ in range(3)]  # elaborated, then dropped
    myhdl_signals.forget_dead_signals()
    recorded = {id(record.mem) for record in hierarchy._memInfoMap.values()}
    assert id(live_memory) in recorded and hierarchy._isMem(live_memory)
    assert hierarchy._getMemInfo(live_memory) is live.memdict["memory"]
    assert _registered(live_memory) == sorted(_registered(live_memory)) and -1 not in _registered(live_memory)
    assert len(recorded & set(dead_memory_ids)) == 0  # their records went, and with them their signals


def test_a_myhdl_without_the_registry_hook_is_left_alone(monkeypatch):
    monkeypatch.delattr(myhdl._Simulation, "_makeWaiters")
    assert myhdl_signals.install() is False
    assert not myhdl_signals.installed()


class _WarnsOnClass:
    """Like torch's deprecated module attributes: reading ``__class__`` warns (isinstance falls back to it)."""

    @property
    def __class__(self):
        warnings.warn("__class__ read", FutureWarning, stacklevel=2)
        return type(self)


def test_a_pruning_reads_no_other_objects_class():
    """The pruning walks every object the collector tracks and looks at the type of signals and memory records
    only, so an object whose ``__class__`` warns (torch.distributed.reduce_op, once torch is imported) says nothing."""
    bystander = _WarnsOnClass()
    with pytest.warns(FutureWarning, match="__class__ read"):
        isinstance(bystander, myhdl.SignalType)  # what the walk did with every object
    _dead_signals(10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert myhdl_signals.forget_dead_signals() >= 10
