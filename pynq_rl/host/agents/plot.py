"""Learning curves from run directories (``pynq-rl plot RUN_DIR... --out curves.png``): several runs overlaid, and
runs that differ only in their seed drawn as one mean with its min-max band.

Reads what every agent writes (:mod:`.run`): ``args.json`` and ``episodes.csv``. Each run's curve is the mean
return of its last ``smooth`` episodes against the environment step; runs are grouped by their arguments without
the seed, the run directory and the other bookkeeping fields, and a group's curves are put on a common step grid
(linear interpolation inside each run's range) before the mean and band are taken. A run resumed from another's
checkpoint (``--resume``, its ``args.json``'s ``resume``) continues that run's curve: the two are drawn as one run
(:func:`chain_resumed`), so an interrupted run and its continuation plot together. Needs matplotlib.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["RunCurve", "current_names", "load_run", "chain_resumed", "group_runs", "group_label", "plot_runs"]

_NOT_A_SETTING = {
    "seed",
    "out_dir",
    "progress",
    "save_checkpoint",
    "checkpoint_path",
    "checkpoint_every",
    "resume",
    "tensorboard",
    "exp_name",
    "batch_size",
    "minibatch_size",
    "num_iterations",
    "torch_threads",
    "torch_deterministic",
}
"""argument names that do not change what a run learns (or are derived); ignored when grouping"""
_LABEL_KEYS = ("env_id", "nn", "backend", "quantize", "reward_norm")
"""the arguments a curve's label shows when they are present"""
_FORMER_BACKEND_FIELDS = ("gae_backend", "replay_backend")
"""what PPO, DQN and Ape-X called ``backend`` in the ``args.json`` of older run directories"""
_FORMER_HOST_NAMES = ("numpy", "float")
"""what DQN / Ape-X and Sarsa called the ``host`` backend there"""


def current_names(args: dict) -> dict:
    """``args.json`` of a run directory in today's names: an older run's ``gae_backend`` or ``replay_backend`` is
    ``backend``, and its host reference (``"numpy"``, ``"float"``) is ``"host"``, so old and new runs group and label
    alike."""
    args = dict(args)
    for name in _FORMER_BACKEND_FIELDS:
        if name in args:
            args["backend"] = args.pop(name)
    if args.get("backend") in _FORMER_HOST_NAMES:
        args["backend"] = "host"
    return args


class RunCurve:
    """One run's smoothed learning curve.

    Attributes
    ----------
    path : Path
        The run directory.
    args : dict
        Its ``args.json``.
    steps, returns : numpy.ndarray
        Environment step at each finished episode, and the mean return of the last ``smooth`` episodes there.
    episode_returns : numpy.ndarray
        Each episode's own return (what ``returns`` smooths).
    smooth : int
        The episodes ``returns`` averages over.
    agent : str
        The experiment name (``ppo``, ``dqn``, ``sarsa``...).
    """

    def __init__(self, path: Path, args: dict, steps: np.ndarray, episode_returns: np.ndarray, smooth: int) -> None:
        self.path, self.args, self.steps, self.smooth = path, args, steps, smooth
        self.episode_returns = episode_returns
        self.returns = _smoothed(episode_returns, smooth)
        self.agent = str(args.get("exp_name", path.name.split("__")[1] if "__" in path.name else "run"))

    @property
    def setting(self) -> tuple:
        """The arguments that define the experiment (everything but the seed and bookkeeping), hashable."""
        return tuple(
            sorted((k, json.dumps(v, sort_keys=True)) for k, v in self.args.items() if k not in _NOT_A_SETTING)
        )

    @property
    def label(self) -> str:
        """``agent env (nn=..., backend=...)`` from the arguments present."""
        parts = [f"{k}={self.args[k]}" for k in _LABEL_KEYS[1:] if k in self.args and self.args[k] is not None]
        return f"{self.agent} {self.args.get('env_id', '')}" + (f" ({', '.join(parts)})" if parts else "")


def load_run(path: str | Path, smooth: int = 20) -> RunCurve:
    """Read one run directory's ``args.json`` and ``episodes.csv``.

    Raises
    ------
    ValueError
        If the directory lacks either file, or no episode finished in it.
    """
    path = Path(path)
    args_file, episodes_file = path / "args.json", path / "episodes.csv"
    if not args_file.is_file() or not episodes_file.is_file():
        raise ValueError(f"{str(path)!r} is not a run directory (needs args.json and episodes.csv)")
    if smooth < 1:
        raise ValueError(f"smooth must be >= 1, not {smooth!r}")
    args = current_names(json.loads(args_file.read_text(encoding="utf-8")))
    with open(episodes_file, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"no episode finished in {str(path)!r}")
    steps = np.array([int(r["global_step"]) for r in rows], dtype=np.int64)
    returns = np.array([float(r["charts/episodic_return"]) for r in rows])
    return RunCurve(path, args, steps, returns, smooth)


def _smoothed(returns: np.ndarray, smooth: int) -> np.ndarray:
    """The mean of the last ``smooth`` values at each position (fewer at the start)."""
    cumulative = np.concatenate([[0.0], np.cumsum(returns)])
    counts = np.minimum(np.arange(1, len(returns) + 1), smooth)
    return (cumulative[1:] - cumulative[np.arange(1, len(returns) + 1) - counts]) / counts


def _resumed_from(curve: RunCurve, curves: Sequence[RunCurve]) -> RunCurve | None:
    """The run among ``curves`` whose checkpoint ``curve`` resumed from (its ``resume`` names that run's directory or
    a file in it), or None."""
    resume = curve.args.get("resume")
    if not resume:
        return None
    target = Path(resume).resolve()
    for other in curves:
        if other is not curve and other.path.resolve() in (target, target.parent):
            return other
    return None


def chain_resumed(curves: Sequence[RunCurve]) -> list[RunCurve]:
    """``curves`` with every run that resumed from another's checkpoint joined to it: one curve holding the earlier
    run's episodes before the continuation's first one, then the continuation's (the smoothing runs across the
    join), in the earlier run's place and with its arguments. Chains of several resumptions join in order."""
    curves = list(curves)
    while True:
        pair = next(((c, e) for c in curves if (e := _resumed_from(c, curves)) is not None), None)
        if pair is None:
            return curves
        later, earlier = pair
        keep = earlier.steps < later.steps[0]
        joined = RunCurve(
            earlier.path,
            earlier.args,
            np.concatenate([earlier.steps[keep], later.steps]),
            np.concatenate([earlier.episode_returns[keep], later.episode_returns]),
            earlier.smooth,
        )
        curves = [joined if c is earlier else c for c in curves if c is not later]


def group_runs(curves: Sequence[RunCurve]) -> dict[tuple, list[RunCurve]]:
    """Runs grouped by :attr:`RunCurve.setting` (same experiment, any seed), in first-seen order."""
    groups: dict[tuple, list[RunCurve]] = defaultdict(list)
    for curve in curves:
        groups[curve.setting].append(curve)
    return dict(groups)


def group_label(group: Sequence[RunCurve]) -> str:
    """The legend entry of a group of runs: their label and the seeds they cover, counted as distinct values (a seed
    run twice is one seed; the runs are counted apart then): ``ppo CartPole-v1 (backend=emu), 3 seeds (4 runs)``."""
    seeds = list(dict.fromkeys(json.dumps(c.args.get("seed")) for c in group))
    if len(seeds) == 1:
        text = f"seed {json.loads(seeds[0])}"
    else:
        text = f"{len(seeds)} seeds"
    if len(group) > len(seeds):
        text += f" ({len(group)} runs)"
    return f"{group[0].label}, {text}"


def plot_runs(
    run_dirs: Sequence[str | Path], out: str | Path, smooth: int = 20, title: str | None = None, grid_points: int = 200
) -> Path:
    """Draw the learning curves of ``run_dirs`` into ``out`` (PNG, SVG or PDF, by its suffix).

    One line per group of runs that differ only in their seed: the mean over seeds of the smoothed return, with the
    min-max band when the group has more than one run (only over the steps every run of the group reached). A run
    and its continuations by ``--resume`` count as one run (:func:`chain_resumed`).

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    ValueError
        No run directory, or one that is not a run (see :func:`load_run`).
    """
    if not run_dirs:
        raise ValueError("give at least one run directory")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = chain_resumed([load_run(d, smooth) for d in run_dirs])
    fig, ax = plt.subplots(figsize=(7.0, 4.2), dpi=120)
    for group in group_runs(curves).values():
        label = group_label(group)
        if len(group) == 1:
            ax.plot(group[0].steps, group[0].returns, label=label, linewidth=1.5)
            continue
        lo = max(int(c.steps[0]) for c in group)
        hi = min(int(c.steps[-1]) for c in group)
        if hi <= lo:
            raise ValueError(f"the runs of {group[0].label!r} share no range of steps")
        grid = np.linspace(lo, hi, grid_points)
        ys = np.stack([np.interp(grid, c.steps, c.returns) for c in group])
        (line,) = ax.plot(grid, ys.mean(axis=0), label=label, linewidth=1.5)
        ax.fill_between(grid, ys.min(axis=0), ys.max(axis=0), color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel("environment steps")
    ax.set_ylabel(f"episodic return (mean of the last {smooth})")
    ax.set_title(title or ", ".join(sorted({c.args.get("env_id", "") for c in curves})))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out
