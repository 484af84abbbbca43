"""What :meth:`ParsaCore.configure` writes, planned and checked before anything reaches the core.

A configuration is checked whole (dims, actions, fractional bits, bounds, coefficients, seed) and turned into the
codes the core takes: the dimension records (offset and reciprocal scale per dimension: the core never divides),
the tiling descriptors scheduled onto the workers (heaviest first), and the UQ1.16 coefficients. The driver writes
a plan only once every part of it is valid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...overlay import spec as S
from ...overlay.models import parsa as model
from .arguments import float_array, number
from .tiling_config import load_tiling

__all__ = ["ParsaConfig", "ConfigurationPlan", "plan_configuration", "coefficient_code"]


@dataclass(frozen=True)
class ParsaConfig:
    """The run-time configuration a ParSa core was given (kept by the driver, saved in ``state_dict``)."""

    layout: model.TilingLayout
    n_actions: int
    lows: tuple[float, ...]
    highs: tuple[float, ...]
    alpha: float
    gamma: float
    epsilon: float
    epsilon_decay: float
    frac_bits: int
    online: bool
    descriptors: tuple[model.Descriptor, ...]


def coefficient_code(name: str, x: float, fmt: S.QFormat) -> int:
    """``x`` (checked to lie in [0, 1]) as a code of the unsigned coefficient format ``fmt``, rounded half up."""
    return int(np.floor(number(name, x, 0.0, 1.0) * (1 << fmt.frac) + 0.5))


@dataclass(frozen=True)
class ConfigurationPlan:
    """A checked configuration and the codes that load it."""

    config: ParsaConfig
    """what the driver keeps once the core has it"""
    coefs: dict[str, int]
    """register name (ALPHA, GAMMA, EPSILON, EPSILON_DECAY) -> coefficient code"""
    words: np.ndarray
    """the CONFIG stream: the dimension records, then the tiling descriptors"""
    seed: int | None
    """the PRNG seed to write first (None: keep the core's)"""


def plan_configuration(
    spec: S.ParsaSpec,
    tiling,
    n_actions: int,
    bounds,
    alpha: float,
    gamma: float,
    epsilon: float,
    epsilon_decay: float,
    frac_bits: int,
    online: bool,
    seed: int | None,
) -> ConfigurationPlan:
    """Every check and every code of :meth:`ParsaCore.configure <pynq_rl.host.drivers.parsa.ParsaCore.configure>`
    for a core built as ``spec``, without touching the core: a refused configuration leaves the core as it was."""
    layout = load_tiling(tiling)
    if not 1 <= layout.n_dims <= spec.max_dims:
        raise ValueError(f"the layout has {layout.n_dims} state dims; this build allows 1..{spec.max_dims}")
    if not isinstance(n_actions, (int, np.integer)) or not 1 <= n_actions <= spec.max_actions:
        raise ValueError(f"n_actions must be in [1, {spec.max_actions}], not {n_actions!r}")
    if not isinstance(frac_bits, (int, np.integer)) or not 0 <= frac_bits <= spec.value_w - 2:
        raise ValueError(f"frac_bits must be in [0, {spec.value_w - 2}], not {frac_bits!r}")
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise ValueError(f"bounds must be (lows, highs), two sequences of {layout.n_dims} values")
    lows, highs = (float_array(f"bounds[{i}]", b, 1, f"({layout.n_dims},)") for i, b in enumerate(bounds))
    if lows.shape != (layout.n_dims,) or highs.shape != (layout.n_dims,):
        raise ValueError(f"bounds must be two sequences of {layout.n_dims} values")
    offsets, scales = model.dimension_codes(lows, highs)
    descriptors = model.schedule(layout, spec)
    coefs = {
        name.upper(): coefficient_code(name, value, spec.coef)
        for name, value in (
            ("alpha", alpha),
            ("gamma", gamma),
            ("epsilon", epsilon),
            ("epsilon_decay", epsilon_decay),
        )
    }
    if seed is not None and not (isinstance(seed, (int, np.integer)) and 0 <= int(seed) <= 0xFFFF_FFFF):
        raise ValueError(f"seed must be an integer in [0, 2**32), not {seed!r}")
    config = ParsaConfig(
        layout,
        int(n_actions),
        tuple(lows),
        tuple(highs),
        float(alpha),
        float(gamma),
        float(epsilon),
        float(epsilon_decay),
        int(frac_bits),
        bool(online),
        tuple(descriptors),
    )
    words = np.concatenate([model.pack_dimensions(offsets, scales), model.pack_descriptors(descriptors)])
    return ConfigurationPlan(config, coefs, words, seed)
