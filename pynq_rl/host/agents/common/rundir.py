"""One training run's directory and the files it writes, the same for every agent.

A run writes to ``out_dir/run_name/`` with ``run_name = f"{env_id}__{exp_name}__{seed}__{int(time.time())}"``
(CleanRL's name; a second run of the same name started within the same second gets ``__2``, ``__3``, ...: a run
never writes into another's directory):

``args.json``
    every hyperparameter, the "filled in runtime" ones included;
``metrics.csv`` / ``metrics.jsonl``
    one row per log step, CleanRL keys (``charts/...``, ``losses/...``, ``time/...[ms]``); NaN is ``null`` in JSONL;
``episodes.csv``
    one row per finished episode (``global_step, charts/episodic_return, charts/episodic_length``);
``summary.json``
    the run's result (without the per-episode lists);
``checkpoint.npz``
    everything needed to resume (see :func:`save_checkpoint`);
``events.out.tfevents.*``
    with ``tensorboard=True``: every metrics row as TensorBoard scalars (``tensorboard --logdir out_dir``), written by
    tensorboardX (``pip install 'pynq-rl[tensorboard]'``; pure Python, so it works on a board too).

Checkpoints (:mod:`.checkpoints`) are ``.npz`` archives of arrays and a JSON header, never pickle.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import time
from dataclasses import asdict
from typing import Any

import numpy as np

from .checks import check_tensorboard

__all__ = ["Run", "json_safe"]


def json_safe(row: dict[str, Any]) -> dict[str, Any]:
    """NaN (no episode finished, no statistics yet) becomes JSON ``null``; numpy scalars become Python numbers."""
    out = {}
    for key, value in row.items():
        if isinstance(value, np.generic):
            value = value.item()
        out[key] = None if isinstance(value, float) and math.isnan(value) else value
    return out


def _new_run_dir(out_dir: str, prefix: str) -> tuple[str, str]:
    """Create ``out_dir/<prefix>__<unix time>`` (``__2``, ``__3``, ... appended while that name is taken) and return
    its name and path: created exclusively, so two runs started in the same second never share one. An ``out_dir``
    that is a file fails at the run directory's ``mkdir`` (``NotADirectoryError`` naming the run's path)."""
    if not os.path.exists(out_dir):
        os.makedirs(out_dir, exist_ok=True)
    base = name = f"{prefix}__{int(time.time())}"
    taken = 1
    while True:
        try:
            os.mkdir(os.path.join(out_dir, name))
            return name, os.path.join(out_dir, name)
        except FileExistsError:
            taken += 1
            name = f"{base}__{taken}"


class Run:
    """One training run's directory and its files (see the module docstring), opened by the agent's ``train``.

    Parameters
    ----------
    args : dataclass instance
        The agent's filled-in ``Args``; needs ``env_id``, ``exp_name``, ``seed`` and ``out_dir``.
    metric_keys : tuple of str
        Columns of ``metrics.csv`` (every row written must use exactly these keys).
    tensorboard : bool
        Also write every row as TensorBoard scalars (x axis: the row's ``global_step``) and every episode's return
        and length (``charts/episodic_return``, ``charts/episodic_length``).

    Attributes
    ----------
    name : str
        ``run_name``.
    dir : str
        ``out_dir/run_name``.
    episode_returns : list of float
        The return of every episode recorded so far (:meth:`episode`), in order.
    episode_lengths : list of int
        Their lengths, in steps.

    Notes
    -----
    A run is a context manager: leaving it closes the files, and leaving it with an exception before any metrics
    row or episode was recorded removes the directory (:meth:`abandon`), so a run that failed at its start leaves
    no directory holding only ``args.json`` behind.
    """

    EPISODE_COLUMNS = ("global_step", "charts/episodic_return", "charts/episodic_length")

    def __init__(self, args: Any, metric_keys: tuple[str, ...], tensorboard: bool = False) -> None:
        check_tensorboard(tensorboard)
        self.name, self.dir = _new_run_dir(args.out_dir, f"{args.env_id}__{args.exp_name}__{args.seed}")
        with open(self.path("args.json"), "w", encoding="utf-8") as f:
            json.dump(asdict(args), f, indent=2)
        self.start_time = time.time()
        self.rows_logged = 0
        self.episode_returns: list[float] = []
        self.episode_lengths: list[int] = []
        self._metrics_csv = open(self.path("metrics.csv"), "w", newline="", encoding="utf-8")
        self._metrics_jsonl = open(self.path("metrics.jsonl"), "w", encoding="utf-8")
        self._episodes_csv = open(self.path("episodes.csv"), "w", newline="", encoding="utf-8")
        self._metrics = csv.DictWriter(self._metrics_csv, fieldnames=metric_keys)
        self._metrics.writeheader()
        self._episodes = csv.writer(self._episodes_csv)
        self._episodes.writerow(self.EPISODE_COLUMNS)
        self._tensorboard = None
        if tensorboard:
            from tensorboardX import SummaryWriter

            self._tensorboard = SummaryWriter(self.dir)
            self._tensorboard.add_text("args", "\n".join(f"{k}: {v}" for k, v in asdict(args).items()))

    def path(self, name: str) -> str:
        """``name`` inside the run directory."""
        return os.path.join(self.dir, name)

    def episode(self, global_step: int, episode_return: float, episode_length: int) -> None:
        """Record one finished episode (kept in :attr:`episode_returns` / :attr:`episode_lengths` too)."""
        self.episode_returns.append(float(episode_return))
        self.episode_lengths.append(int(episode_length))
        self._episodes.writerow([int(global_step), float(episode_return), int(episode_length)])
        if self._tensorboard is not None:
            self._tensorboard.add_scalar("charts/episodic_return", float(episode_return), int(global_step))
            self._tensorboard.add_scalar("charts/episodic_length", int(episode_length), int(global_step))

    def log(self, row: dict[str, Any]) -> None:
        """Write one metrics row to ``metrics.csv`` and ``metrics.jsonl`` and flush every file."""
        self._metrics.writerow(row)
        self.rows_logged += 1
        self._metrics_jsonl.write(json.dumps(json_safe(row)) + "\n")
        if self._tensorboard is not None:
            step = int(row.get("global_step", 0))
            for key, value in row.items():
                # per-episode values go in with their own steps (episode()); NaN means "nothing this row"
                if (
                    key not in ("global_step", "charts/episodic_return", "charts/episodic_length")
                    and isinstance(value, (int, float, np.number))
                    and math.isfinite(value)
                ):
                    self._tensorboard.add_scalar(key, float(value), step)
            self._tensorboard.flush()
        for f in (self._metrics_csv, self._metrics_jsonl, self._episodes_csv):
            f.flush()

    def mean_return(self, last: int = 20) -> float:
        """Mean of the last ``last`` episode returns (NaN if none finished)."""
        tail = self.episode_returns[-last:]
        return float(np.mean(tail)) if tail else math.nan

    def sps(self, steps: int) -> int:
        """Environment steps per second since the run started, for ``steps`` steps taken in it."""
        return int(steps / max(time.time() - self.start_time, 1e-9))

    def finish(self, **summary: Any) -> dict[str, Any]:
        """Close the files, write ``summary.json`` and return the summary.

        The summary holds ``run_name``, ``run_dir``, ``episode_returns``, ``episode_lengths``,
        ``mean_return_last20`` and ``wall_time_s``, then the given entries (which may override those);
        ``summary.json`` leaves out the per-episode lists and counts them instead (``episodes``).
        """
        self.close()
        summary = {
            "run_name": self.name,
            "run_dir": self.dir,
            "episode_returns": self.episode_returns,
            "episode_lengths": self.episode_lengths,
            "mean_return_last20": self.mean_return(20),
            "wall_time_s": time.time() - self.start_time,
            **summary,
        }
        short = {k: v for k, v in summary.items() if k not in ("episode_returns", "episode_lengths")}
        short.setdefault("episodes", len(self.episode_returns))
        with open(self.path("summary.json"), "w", encoding="utf-8") as f:
            json.dump(json_safe(short), f, indent=2)
        return summary

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abandon()

    def abandon(self) -> None:
        """Close the files; remove the run directory if nothing was recorded in it yet (a run that failed at once)."""
        self.close()
        if not self.rows_logged and not self.episode_returns:
            shutil.rmtree(self.dir, ignore_errors=True)

    def close(self) -> None:
        """Close the metrics files (idempotent; :meth:`finish` calls it)."""
        for f in (self._metrics_csv, self._metrics_jsonl, self._episodes_csv):
            f.close()
        if self._tensorboard is not None:
            self._tensorboard.close()
