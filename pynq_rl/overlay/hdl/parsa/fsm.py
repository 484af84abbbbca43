"""The ParSa controller's shared vocabulary (:mod:`.control`, :mod:`.step`): its states, ACT's timing constants (the
controller counts them) and the registers its parts share."""

from myhdl import Signal, enum, intbv

from ...spec import ParsaMode
from . import positions as _pos
from . import reduce as _red
from . import worker as _wk
from .params import ParsaWidths

__all__ = [
    "t_state",
    "ControlRegisters",
    "ACT_DEPTH",
    "UPDATE_DEPTH",
    "ACT_GO_AFTER_DIMS",
    "act_go_cycle",
    "MODE_CONFIG",
    "MODE_LOAD",
    "MODE_DUMP",
    "MODE_CLEAR",
]

t_state = enum(
    "IDLE",
    "CFG",
    "CFG_CHECK",
    "LOAD",
    "DUMP_READ",
    "DUMP_WAIT",
    "DUMP_LOAD",
    "CLEAR",
    "RECV",
    "RUN",
    "HOLD",
    "UPD",
    "REJECT",
    "FINISH",
)

#: RUN cycle (after the n_dims positions) at which the workers start: u_0 is readable positions.LATENCY cycles after
#: the positions start and a worker reads positions in its S1, two cycles after act_go
ACT_GO_AFTER_DIMS = _pos.LATENCY - 3
#: CYCLES_ACT - n_dims - busiest: worker pipeline, sum tree, saturation, argmax, choice (2)
ACT_DEPTH = ACT_GO_AFTER_DIMS + _wk.ACT_LATENCY + _red.SUM_STAGES + 1 + _red.ARGMAX_STAGES + 2
#: CYCLES_UPDATE - busiest: 4 arithmetic stages, the go pulse, the workers' pass, saturation collection
UPDATE_DEPTH = 4 + _wk.UPDATE_LATENCY + 1

MODE_CONFIG, MODE_LOAD = int(ParsaMode.CONFIG), int(ParsaMode.LOAD_POLICY)
MODE_DUMP, MODE_CLEAR = int(ParsaMode.DUMP_POLICY), int(ParsaMode.CLEAR)


def act_go_cycle(n_dims: int) -> int:
    """RUN cycle of act_go for ``n_dims`` dimensions"""
    return n_dims + ACT_GO_AFTER_DIMS


class ControlRegisters:
    """The controller's own registers, shared by its parts (one instance per core): each has one owner.

    ``state`` (:func:`~.control._operation`); ``timer``, ``expected``, ``tilings_bad``, ``configured``,
    ``configured_dims`` (:func:`~.control._config_commit`); ``rec_words``, ``online`` (latched at START:
    :func:`~.start.run_parameters`); ``refuse`` (:func:`~.start.start_check`); ``busiest``, ``t_run``, ``t_last``,
    ``t_choose``, ``t_go``, ``held``, ``any_record``, ``any_accepted`` (:func:`~.step.act_timing`); ``has_reward``,
    ``prev_valid``, ``key_valid``, ``pend_valid`` (:func:`~.step.key_step`).
    """

    def __init__(self, widths: ParsaWidths) -> None:
        spec = widths.spec
        md, mt = spec.max_dims, spec.max_tilings
        self.state = Signal(t_state.IDLE)
        self.timer = Signal(intbv(0)[32:])
        self.expected = Signal(intbv(0)[34:])
        self.tilings_bad = Signal(bool(0))  # N_TILINGS at START is 0 or more than the workers hold
        self.configured, self.online, self.refuse = Signal(bool(0)), Signal(bool(0)), Signal(bool(0))
        self.configured_dims = Signal(intbv(0, min=0, max=md + 1))
        self.rec_words = Signal(intbv(0, min=0, max=md + 2))
        self.busiest = Signal(intbv(0, min=0, max=mt + 1))
        self.t_run, self.t_last, self.t_choose = (
            Signal(intbv(0, min=0, max=md + mt + ACT_DEPTH + 2)) for _ in range(3)
        )
        self.t_go = Signal(intbv(0, min=0, max=md + ACT_GO_AFTER_DIMS + 2))
        self.held = Signal(bool(0))  # an emitted record's final word waits for release
        self.any_record, self.any_accepted = Signal(bool(0)), Signal(bool(0))
        self.has_reward, self.prev_valid = Signal(bool(0)), Signal(bool(0))
        self.key_valid = Signal(intbv(0)[1 << widths.key_bits :])
        self.pend_valid = Signal(intbv(0)[1 << widths.key_bits :])
