"""Ctrl-C and SIGTERM stop a training run at its next step boundary, with a checkpoint and a summary.

An agent's ``train`` enters :class:`StopOnSignal` just before its loop. While it is active, the first SIGINT or
SIGTERM only records the signal; the loop asks :meth:`StopOnSignal.requested` at each step boundary (an environment
step in DQN, an iteration in PPO, an episode in Sarsa) and leaves, so the checkpoint it then saves is consistent: no
half-written replay slot, no optimizer step cut in two, no core left in the middle of a register transaction. The
agent writes its checkpoint and ``summary.json`` (``"interrupted": true``) and raises :class:`TrainingInterrupted`, a
``KeyboardInterrupt`` that carries the summary, so a script still stops on Ctrl-C and the command line can print the
summary and exit with ``128 + signal`` (130 for SIGINT, 143 for SIGTERM). A second signal aborts at once (a plain
``KeyboardInterrupt``, no checkpoint), for a step that takes too long.

Signal handlers can only be set from the main thread; elsewhere :class:`StopOnSignal` does nothing and signals keep
their usual effect.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Any

__all__ = ["SIGNALS", "StopOnSignal", "TrainingInterrupted", "finish"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""the signals that stop a run at its next step boundary"""


class TrainingInterrupted(KeyboardInterrupt):
    """A run stopped by SIGINT or SIGTERM after saving its checkpoint and summary.

    Attributes
    ----------
    summary : dict
        What ``train`` would have returned (``"interrupted": True``, ``global_step`` the step reached, ``checkpoint``).
    signum : int
        The signal that stopped it.
    """

    def __init__(self, summary: dict[str, Any], signum: int) -> None:
        super().__init__(f"training stopped by {signal.Signals(signum).name} at step {summary.get('global_step')}")
        self.summary = summary
        self.signum = signum

    @property
    def exit_status(self) -> int:
        """The shell's convention for a process ended by the signal: 128 + its number (130 SIGINT, 143 SIGTERM)."""
        return 128 + int(self.signum)


class StopOnSignal:
    """While active (a context manager), SIGINT and SIGTERM set :attr:`signum` instead of interrupting; a second
    signal raises ``KeyboardInterrupt``. :meth:`close` (also on exit) restores the previous handlers.

    Attributes
    ----------
    signum : int or None
        The first signal received, None while none has been.
    stopped : bool
        Whether the loop left early because of it (:meth:`requested` said so); a signal that comes after the last
        step leaves a complete run.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self.stopped = False
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def signal_name(self) -> str | None:
        """``"SIGINT"`` or ``"SIGTERM"`` once one was received, else None."""
        return None if self.signum is None else signal.Signals(self.signum).name

    def requested(self) -> bool:
        """True once a signal was received: the loop that asks leaves now (and the run counts as interrupted)."""
        self.stopped = self.stopped or self.signum is not None
        return self.stopped

    def summary_fields(self) -> dict[str, Any]:
        """The entries a run's summary gets: ``interrupted`` (bool: it stopped early), and ``signal`` (its name)
        when a signal came."""
        return {"interrupted": self.stopped, **({"signal": self.signal_name} if self.signum is not None else {})}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            raise KeyboardInterrupt
        self.signum = signum
        print(
            f"\n{signal.Signals(signum).name}: stopping after this step to save a checkpoint (again to abort at once)",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        """Restore the handlers that were set before (idempotent); :attr:`signum` keeps its value."""
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()


def finish(summary: dict[str, Any], stop: StopOnSignal) -> dict[str, Any]:
    """``summary`` if no signal came; raise :class:`TrainingInterrupted` with it if one did (a caller's loop over runs
    stops on Ctrl-C as it would without this module, even if the signal came after the last step).

    Call it after the run directory is closed (an exception inside ``Run``'s context would remove a directory that
    recorded nothing yet, the checkpoint with it).
    """
    if stop.signum is not None:
        raise TrainingInterrupted(summary, stop.signum)
    return summary
