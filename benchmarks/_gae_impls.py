"""The implementations :mod:`gae_emu` times, and what they share: the data (standard-normal rewards and values, 1%
dones), the float64 reference each output is checked against, and the implementations themselves (the bit-exact
model through numba and numpy, the driver on the emulated core of each board raw and q8, the CleanRL numpy loop,
torchrl's two GAE functions where torchrl imports, a pure Python loop and a numba float64 loop), each prepared on one
data set with its tolerance and note.

A helper module of ``benchmarks/gae_emu.py`` (imported as ``_gae_impls``: the script's own directory is first on
``sys.path``), split off so the script keeps the measurement and the page.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = [
    "GAMMA",
    "LAM",
    "DONE_PROB",
    "BASELINE",
    "FLOAT_TOL",
    "FIXED_TOL",
    "make_data",
    "reference_gae",
    "Prepared",
    "Impl",
    "cleanrl_numpy",
    "python_loop",
    "build_impls",
]

GAMMA = 0.99
LAM = 0.95
DONE_PROB = 0.01
BASELINE = "cleanrl_numpy"
FLOAT_TOL = 1e-4
FIXED_TOL = 1e-3


# ---------------------------------------------------------------------------------------------------------------
# Data and reference
# ---------------------------------------------------------------------------------------------------------------


def make_data(n_envs: int, n_steps: int, seed: int) -> dict[str, np.ndarray]:
    """float32 rewards (T, N), values (T + 1, N), dones (T, N) in {0, 1}."""
    rng = np.random.default_rng(seed)
    return {
        "rewards": rng.standard_normal((n_steps, n_envs)).astype(np.float32),
        "values": rng.standard_normal((n_steps + 1, n_envs)).astype(np.float32),
        "dones": (rng.random((n_steps, n_envs)) < DONE_PROB).astype(np.float32),
    }


def reference_gae(
    rewards: npt.ArrayLike, values: npt.ArrayLike, dones: npt.ArrayLike, gamma: float, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    """Float64 GAE: delta_t = r_t + gamma (1 - d_t) V_{t+1} - V_t, A_t = delta_t + gamma lam (1 - d_t) A_{t+1}."""
    rewards, values = np.asarray(rewards, np.float64), np.asarray(values, np.float64)
    alive = 1.0 - np.asarray(dones, np.float64)
    adv = np.zeros_like(rewards)
    last = np.zeros(rewards.shape[1])
    for t in range(rewards.shape[0] - 1, -1, -1):
        delta = rewards[t] + gamma * alive[t] * values[t + 1] - values[t]
        last = delta + gamma * lam * alive[t] * last
        adv[t] = last
    return adv, adv + values[:-1]


# ---------------------------------------------------------------------------------------------------------------
# Implementations
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Prepared:
    """One implementation bound to one data set: ``call()`` is timed, ``outputs(result)`` is not."""

    call: Callable[[], object]
    outputs: Callable[[object], tuple[np.ndarray, np.ndarray]]
    """(advantages, returns) as float64 (T, n) arrays from what ``call`` returned"""
    elements: int
    """elements one call processes"""
    n_envs: int
    """envs one call processes (the first ``n_envs`` of the data)"""
    tolerance: float | Callable[[], float]
    note: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class Impl:
    """One implementation: ``prepare`` binds it to a data set; ``None`` where it is unavailable (``unavailable`` says
    why)."""

    key: str
    label: str
    prepare: Callable[[dict], Prepared] | None
    unavailable: str = ""


def cleanrl_numpy(
    rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, gamma: float, lam: float
) -> tuple[np.ndarray, np.ndarray]:
    """cleanrl/ppo.py's advantage loop in numpy (float32 in, float32 out; this package's done convention)."""
    n_steps = rewards.shape[0]
    advantages = np.zeros_like(rewards)
    lastgaelam = 0
    for t in reversed(range(n_steps)):
        nextnonterminal = 1.0 - dones[t]
        nextvalues = values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * lam * nextnonterminal * lastgaelam
    returns = advantages + values[:-1]
    return advantages, returns


def python_loop(
    rewards: list[list[float]], values: list[list[float]], dones: list[list[float]], gamma: float, lam: float
) -> tuple[list[list[float]], list[list[float]]]:
    """Pure Python: lists per env (rewards[n][t], values[n][t], dones[n][t]); loop over envs, then back over t."""
    gl = gamma * lam
    all_adv, all_ret = [], []
    for r, v, d in zip(rewards, values, dones):
        n_steps = len(r)
        adv = [0.0] * n_steps
        ret = [0.0] * n_steps
        last = 0.0
        for t in range(n_steps - 1, -1, -1):
            alive = 1.0 - d[t]
            delta = r[t] + gamma * alive * v[t + 1] - v[t]
            last = delta + gl * alive * last
            adv[t] = last
            ret[t] = last + v[t]
        all_adv.append(adv)
        all_ret.append(ret)
    return all_adv, all_ret


def _numba_float64_loop(rewards, values, dones, gamma, lam):
    n_steps, n_envs = rewards.shape
    adv = np.empty((n_steps, n_envs))
    ret = np.empty((n_steps, n_envs))
    last = np.zeros(n_envs)
    gl = gamma * lam
    for t in range(n_steps - 1, -1, -1):
        for n in range(n_envs):
            alive = 1.0 - dones[t, n]
            delta = rewards[t, n] + gamma * alive * values[t + 1, n] - values[t, n]
            last[n] = delta + gl * alive * last[n]
            adv[t, n] = last[n]
            ret[t, n] = last[n] + values[t, n]
    return adv, ret


def build_impls(python_max_elements: int) -> tuple[list[Impl], dict]:
    """Every implementation, with import problems recorded instead of raised; also version/import notes."""
    import numba
    import torch

    from pynq_rl import RLOverlay
    from pynq_rl.overlay import fixed
    from pynq_rl.overlay.models import gae as model
    from pynq_rl.overlay.spec import GaeSpec

    info: dict = {}
    impls: list[Impl] = []
    spec = GaeSpec()
    gamma_code = int(fixed.quantize(GAMMA, spec.coef)[0][()])
    gl_code = int(fixed.quantize(GAMMA * LAM, spec.coef)[0][()])

    def model_impl(use_numba: bool) -> Callable[[dict], Prepared]:
        def prepare(data):
            r_codes = fixed.quantize(data["rewards"], spec.data)[0]
            v_codes = fixed.quantize(data["values"], spec.data)[0]
            d_codes = data["dones"].astype(np.int64)
            lsb = spec.data.lsb

            def call():
                return model.gae_fixed(spec, r_codes, v_codes, d_codes, gamma_code, gl_code, use_numba=use_numba)

            return Prepared(
                call=call,
                outputs=lambda res: (res.advantages * lsb, res.returns * lsb),
                elements=r_codes.size,
                n_envs=r_codes.shape[1],
                tolerance=FIXED_TOL,
                note=f"{spec.data} codes in, codes out; GaeSpec() lanes={spec.lanes}, lookahead={spec.lookahead}",
            )

        return prepare

    impls.append(
        Impl(
            "model_numba",
            "gae_fixed model (numba)",
            model_impl(True) if model.HAVE_NUMBA else None,
            "" if model.HAVE_NUMBA else "numba not installed",
        )
    )
    impls.append(Impl("model_numpy", "gae_fixed model (numpy)", model_impl(False)))

    for board in ("Pynq-Z2", "ZCU106"):
        try:
            overlay = RLOverlay(backend="emu", board=board)
        except Exception as err:  # noqa: BLE001 - recorded, not raised
            for q in DRIVER_MODES:
                impls.append(
                    Impl(f"driver_{_slug(board)}_{q}", f"driver emu {board} {q}", None, f"{type(err).__name__}: {err}")
                )
            continue
        core = overlay.gae
        info[f"emu_{_slug(board)}"] = {
            "lanes": core.spec.lanes,
            "t_max": core.spec.t_max,
            "stream_bytes": core.spec.stream_bytes,
            "fclk[mhz]": overlay.board_spec.fclk_mhz,
        }
        for q, (quantize, name) in DRIVER_MODES.items():
            impls.append(
                Impl(
                    f"driver_{_slug(board)}_{q}",
                    f"driver emu {board} ({core.spec.lanes} lanes) {name}",
                    _driver_impl(core, board, quantize, name, model, overlay.board_spec.fclk_mhz),
                )
            )

    impls.append(Impl(BASELINE, "CleanRL-style numpy loop (float32)", _cleanrl_prepare))

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torchrl
            from torchrl.objectives.value import functional as trl
        info["torchrl"] = torchrl.__version__
        if caught:
            info["torchrl_import_warnings"] = sorted({str(w.message)[:300] for w in caught})
        for key, name in (
            ("torchrl_gae", "generalized_advantage_estimate"),
            ("torchrl_vec_gae", "vec_generalized_advantage_estimate"),
        ):
            fn = getattr(trl, name, None)
            impls.append(
                Impl(
                    key,
                    f"torchrl {name} (float32)",
                    _torchrl_impl(fn, torch) if fn is not None else None,
                    "" if fn is not None else f"torchrl {torchrl.__version__} has no {name}",
                )
            )
    except Exception as err:  # noqa: BLE001 - recorded, not raised
        message = f"{type(err).__name__}: {err}"
        info["torchrl_import_error"] = message
        impls.append(Impl("torchrl_gae", "torchrl generalized_advantage_estimate", None, message))
        impls.append(Impl("torchrl_vec_gae", "torchrl vec_generalized_advantage_estimate", None, message))

    impls.append(Impl("python_loop", "pure Python loop (float64)", _python_impl(python_max_elements)))
    kernel = numba.njit(nogil=True)(_numba_float64_loop)
    impls.append(Impl("numba_float64", "numba loop (float64)", _numba_impl(kernel)))
    return impls, info


#: driver row suffix -> (``compute(quantize=...)``, the mode's name): raw fixed point, q8-runs (the default 8-bit
#: mode), q8 block
DRIVER_MODES = {"raw": (False, "raw"), "q8runs": ("runs", "q8-runs"), "q8block": ("block", "q8 block")}


def _slug(board: str) -> str:
    return board.lower().replace("-", "")


def _driver_impl(core, board, quantize, mode_name, model, fclk_mhz):
    def prepare(data):
        r, v, d = data["rewards"], data["values"], data["dones"]
        n_steps, n_envs = r.shape
        lanes = core.spec.lanes

        def call():
            return core.compute(r, v, d, gamma=GAMMA, lam=LAM, quantize=quantize)

        tolerance: float | Callable[[], float] = FIXED_TOL
        note = (
            f"float32 in/out; one operation: {math.ceil(n_envs / lanes)} batch(es) of {lanes} lanes"
            f" x {core.spec.chunking(n_steps)[0]} chained chunk(s) of <= {core.spec.t_max} steps"
        )
        if quantize:

            def tolerance():
                return _q8_bound(core.spec, model, r, v, d, quantize)

            note += f"; tolerance = models.gae.error_bound of the operation's {mode_name} codes"
        batches = math.ceil(n_envs / lanes)
        cycles = core.spec.cycles(n_steps, batches)
        extra = {
            "fclk[mhz]": fclk_mhz,
            "modeled_core_cycles": cycles,
            "modeled_core_compute[elements/s]": n_steps * n_envs / (cycles / (fclk_mhz * 1e6)),
        }
        return Prepared(
            call=call,
            outputs=lambda res: (res[0].astype(np.float64), res[1].astype(np.float64)),
            elements=r.size,
            n_envs=n_envs,
            tolerance=tolerance,
            note=note,
            extra=extra,
        )

    return prepare


def _q8_bound(spec, model, rewards, values, dones, quantize: str) -> float:
    """``models.gae.error_bound`` of the codes the driver sends in ``quantize`` mode for one operation (every env
    and step of the rollout, all lane-batches and chained T_MAX chunks): one q8 block (``"block"``), or runs of
    RUN_LENGTH per lane (``"runs"``; the largest coding error of any run)."""
    r, v, d = (np.asarray(x, np.float64) for x in (rewards, values, dones))
    absmax = float(max(np.abs(r).max(), np.abs(v).max()))
    unit = model.choose_unit(absmax, GAMMA, LAM, spec.data)
    if quantize == "runs":
        r_block, v_block = model.encode_rollout_runs(r, v, unit, spec)
    else:
        r_block, v_block = model.encode_q8(r, unit, spec), model.encode_q8(v, unit, spec)
    adv, _ = reference_gae(r, v, d, GAMMA, LAM)
    delta = r + GAMMA * (1.0 - d) * v[1:] - v[:-1]
    return model.error_bound(
        spec,
        GAMMA,
        LAM,
        unit,
        r_block.error,
        v_block.error,
        float(np.abs(delta).max()),
        float(max(np.abs(adv).max(), absmax)),
    )


def _cleanrl_prepare(data):
    r, v, d = data["rewards"], data["values"], data["dones"]
    return Prepared(
        call=lambda: cleanrl_numpy(r, v, d, GAMMA, LAM),
        outputs=lambda res: (res[0].astype(np.float64), res[1].astype(np.float64)),
        elements=r.size,
        n_envs=r.shape[1],
        tolerance=FLOAT_TOL,
        note="float32 (T, N) arrays",
    )


def _torchrl_impl(fn, torch):
    def prepare(data):
        def layout(x):  # (T, N) numpy -> (N, T, 1) tensor: batch first, time at dim -2, one feature
            return torch.from_numpy(np.ascontiguousarray(x.T)).unsqueeze(-1)

        v = data["values"]
        state_value, next_state_value, reward = layout(v[:-1]), layout(v[1:]), layout(data["rewards"])
        done = layout(data["dones"]).bool()

        def call():
            with torch.no_grad():
                return fn(GAMMA, LAM, state_value, next_state_value, reward, done, done)

        def outputs(res):
            adv, value_target = res
            return (adv.squeeze(-1).numpy().T.astype(np.float64), value_target.squeeze(-1).numpy().T.astype(np.float64))

        return Prepared(
            call=call,
            outputs=outputs,
            elements=data["rewards"].size,
            n_envs=data["rewards"].shape[1],
            tolerance=FLOAT_TOL,
            note="float32 tensors [N, T, 1] prepared outside the timed region; "
            "done = terminated; returns = value_target",
        )

    return prepare


def _python_impl(max_elements: int):
    def prepare(data):
        n_steps, n_envs = data["rewards"].shape
        n_sub = max(1, min(n_envs, max_elements // n_steps))
        r = data["rewards"][:, :n_sub].T.astype(np.float64).tolist()
        v = data["values"][:, :n_sub].T.astype(np.float64).tolist()
        d = data["dones"][:, :n_sub].T.astype(np.float64).tolist()

        def outputs(res):
            return np.asarray(res[0]).T, np.asarray(res[1]).T

        note = "lists of Python floats, built outside the timed region"
        if n_sub < n_envs:
            note += f"; first {n_sub} of {n_envs} envs only (elements/s is per element processed)"
        return Prepared(
            call=lambda: python_loop(r, v, d, GAMMA, LAM),
            outputs=outputs,
            elements=n_sub * n_steps,
            n_envs=n_sub,
            tolerance=FLOAT_TOL,
            note=note,
        )

    return prepare


def _numba_impl(kernel):
    def prepare(data):
        r, v, d = (data[k].astype(np.float64) for k in ("rewards", "values", "dones"))
        return Prepared(
            call=lambda: kernel(r, v, d, GAMMA, LAM),
            outputs=lambda res: res,
            elements=r.size,
            n_envs=r.shape[1],
            tolerance=FLOAT_TOL,
            note="float64 (T, N) arrays; serial, 1 thread",
        )

    return prepare
