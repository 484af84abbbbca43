r"""In-network flow control with the ParSa core: per-flow DDoS mitigation in OPaL's policy shape.

A small, self-contained gymnasium task modelled on OPaL's use case (Simpson & Pezaros, per-host DDoS mitigation by
direct-control RL): a router in front of a bottleneck link sees ``n_flows`` flows per episode, some legitimate
(light interactive ones, and heavy bulk transfers above their fair share) and some attackers (high-rate floods
that start at a random tick). Every tick the router picks, per flow, a drop fraction (10 actions:
``DROP_LEVELS = 0, 1/9, ..., 1``); one policy is shared by all flows and every flow is one key of the ParSa core,
so a tick is **one** ``act_batch`` call (one DMA transfer) for all flows: the core chooses each flow's action and
updates the policy with each flow's reward, in order.

Link model, per tick, in units of the fair share ``C / n_flows`` (capacity ``C = n_flows``):

.. math::

    p_i = x_i (1 - \mathrm{drop}_i), \quad P = \sum_i p_i, \quad d_i = p_i \min(1, C / P), \quad
    o = \max(0, P / C - 1)

and each flow's reward is its legitimate goodput minus the harm it does:

.. math::

    r_i = \ell_i d_i - \beta (1 - \ell_i) d_i - \kappa \, o \, p_i

(``l_i = 1`` for a legitimate flow; ``beta`` prices attack traffic that reaches the server, ``kappa`` the overload
each flow's passed traffic contributes to). The environment's scalar reward is the mean over flows; ``info``
carries the per-flow rewards the agent sends to the core. Legitimacy is never observed: the policy must infer it.

Observation per flow: 20 features in ``[OBS_LOW, OBS_HIGH]`` (:data:`FEATURES`), shaped for OPaL's tiling layout
(:data:`~pynq_rl.host.drivers.tiling_config.OPAL_DDOS_TILING`: bias, 1-D sets over features 0-6, 2-D sets over
(7, 8) ... (17, 18), (0, 1), (2, 3), a 4-D set over (4, 5, 6, 19); 8 tilings per set, 6 tiles per dim: 136
tilings, 22,744 tiles x 10 actions). Rates, loads and link state are informative for everyone; the traffic
signatures (reply ratio, packet size, new-connection ratio, port entropy, TTL spread, flag anomalies) differ between
legitimate and attack flows in distribution only (per-flow offsets plus per-tick noise).

This layout needs the ZCU106 build (8 workers x 4096 rows = 32,768 rows >= 22,744); the Pynq-Z2 build (4 x 1024
= 4,096 rows) cannot hold it, and ``configure`` refuses it with the row count (:func:`check_fits`).

Episode ends are truncations (a fixed number of ticks): the last tick's rewards are sent as a normal step
(bootstrapped), and the next episode's first tick carries no rewards, so no update crosses episodes (see
:mod:`.sarsa`). The host sets epsilon per episode (a linear schedule) rather than using the core's per-action
decay, whose UQ1.16 rounding stops at small epsilon.

Run ``python -m pynq_rl.host.agents.sarsa.netdemo --episodes 100`` (emulated ZCU106 build, a few minutes on one core).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import gymnasium as gym
import numpy as np

from ...drivers.tiling_config import OPAL_DDOS_TILING, load_tiling
from ..common.argparsing import Parser
from ..common.checks import FieldValueError, check_backend
from ..common.options import add_options, given
from ..common.run import BACKENDS
from .learners import make_learner

__all__ = [
    "EnvConfig",
    "FlowControlEnv",
    "Args",
    "FEATURES",
    "OBS_LOW",
    "OBS_HIGH",
    "DROP_LEVELS",
    "N_ACTIONS",
    "pass_all_policy",
    "fair_share_policy",
    "random_policy",
    "run_episode",
    "evaluate_policy",
    "check_fits",
    "train",
    "main",
]

N_ACTIONS = 10
DROP_LEVELS = np.linspace(0.0, 1.0, N_ACTIONS)
"""drop fraction of each action"""
FEATURES = (
    ("link_offered_load", 0.0, 3.0),
    ("link_delivered_load", 0.0, 1.5),
    ("flow_rate", 0.0, 6.0),
    ("flow_passed_rate", 0.0, 6.0),
    ("last_drop", 0.0, 1.0),
    ("reply_ratio", 0.0, 1.0),
    ("packet_size", 0.0, 1.0),
    ("rate_ema_short", 0.0, 6.0),
    ("rate_ema_long", 0.0, 6.0),
    ("new_conn_ratio", 0.0, 1.0),
    ("port_entropy", 0.0, 1.0),
    ("flow_age", 0.0, 1.0),
    ("rate_cv", 0.0, 2.0),
    ("link_load_ema", 0.0, 3.0),
    ("overload_ema", 0.0, 2.0),
    ("ttl_spread", 0.0, 1.0),
    ("flag_anomaly", 0.0, 1.0),
    ("rate_share", 0.0, 0.5),
    ("rate_rank", 0.0, 1.0),
    ("drop_ema", 0.0, 1.0),
)
"""(name, low, high) of the 20 observation features, in order (rates in fair shares, loads in capacities)"""
OBS_LOW = np.array([f[1] for f in FEATURES])
OBS_HIGH = np.array([f[2] for f in FEATURES])
# mean of each traffic signature (reply, size, new_conn, ports, ttl, flags) for light, heavy legitimate and attack
_SIGNATURES = np.array(
    [[0.65, 0.45, 0.20, 0.40, 0.20, 0.15], [0.60, 0.80, 0.10, 0.30, 0.20, 0.15], [0.30, 0.30, 0.45, 0.60, 0.40, 0.35]]
)
_SIGNATURE_COLUMNS = (5, 6, 9, 10, 15, 16)
LIGHT, HEAVY, ATTACK = 0, 1, 2


@dataclass(frozen=True)
class EnvConfig:
    """The flow-control task's parameters."""

    n_flows: int = 32
    """flows per episode (one core key each)"""
    ticks: int = 60
    """ticks per episode (then truncated)"""
    attack_fraction: tuple[float, float] = (0.2, 0.4)
    """range of the fraction of flows that attack (drawn per episode)"""
    heavy_fraction: float = 0.25
    """fraction of legitimate flows that are heavy bulk transfers"""
    light_rate: tuple[float, float] = (0.2, 0.6)
    """base rate range of light legitimate flows (fair shares)"""
    heavy_rate: tuple[float, float] = (1.5, 2.5)
    """base rate range of heavy legitimate flows"""
    attack_rate: tuple[float, float] = (2.0, 5.0)
    """rate range of an attack flow once it starts"""
    rate_noise: float = 0.25
    """log-normal AR(1) rate noise (stationary std of the log rate)"""
    signature_noise: float = 0.15
    """per-tick noise of the traffic signatures"""
    signature_offset: float = 0.08
    """per-flow offset of the traffic signatures"""
    beta: float = 0.5
    """cost of one fair share of attack traffic delivered"""
    kappa: float = 1.0
    """overload penalty per fair share passed, per unit of overload"""


class FlowControlEnv(gym.Env):
    """Per-flow drop control against a bottleneck link (see the module docstring).

    Observation ``(n_flows, 20)`` float64, action ``MultiDiscrete([10] * n_flows)``; ``info["flow_rewards"]``
    holds the per-flow rewards, ``info["legit_goodput"]`` the fraction of the tick's legitimate traffic delivered,
    ``info["overload"]`` the overload ``o``.
    """

    metadata = {"render_modes": []}

    def __init__(self, config: EnvConfig = EnvConfig()) -> None:
        if config.n_flows < 2 or config.ticks < 2:
            raise ValueError(f"n_flows and ticks must be >= 2, not {config.n_flows}, {config.ticks}")
        self.config = config
        n = config.n_flows
        self.observation_space = gym.spaces.Box(np.tile(OBS_LOW, (n, 1)), np.tile(OBS_HIGH, (n, 1)), dtype=np.float64)
        self.action_space = gym.spaces.MultiDiscrete([N_ACTIONS] * n)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        c, rng, n = self.config, self.np_random, self.config.n_flows
        n_attack = int(round(rng.uniform(*c.attack_fraction) * n))
        kinds = np.full(n, LIGHT)
        kinds[:n_attack] = ATTACK
        legit = np.arange(n_attack, n)
        kinds[legit[rng.random(len(legit)) < c.heavy_fraction]] = HEAVY
        self.kinds = rng.permutation(kinds)
        self.legit = (self.kinds != ATTACK).astype(np.float64)
        self.base = np.where(
            self.kinds == LIGHT,
            rng.uniform(*c.light_rate, n),
            np.where(self.kinds == HEAVY, rng.uniform(*c.heavy_rate, n), rng.uniform(*c.attack_rate, n)),
        )
        self.onset = np.where(self.kinds == ATTACK, rng.integers(0, c.ticks // 3, n), 0)
        self.offsets = rng.normal(0.0, c.signature_offset, (n, len(_SIGNATURE_COLUMNS)))
        self.log_noise = rng.normal(0.0, c.rate_noise, n)
        self.t = 0
        self.last_drop = np.zeros(n)
        self.drop_ema = np.zeros(n)
        self.passed = np.zeros(n)
        self.delivered_load = 0.0
        self.ema_short = np.zeros(n)
        self.ema_long = np.zeros(n)
        self.rate_sq = np.zeros(n)
        self.load_ema = 0.0
        self.overload_ema = 0.0
        self._draw_rates()
        return self._observe(), {}

    def _draw_rates(self) -> None:
        c, rng = self.config, self.np_random
        rho = 0.8
        self.log_noise = rho * self.log_noise + math.sqrt(1 - rho**2) * rng.normal(0.0, c.rate_noise, c.n_flows)
        active = np.where((self.kinds == ATTACK) & (self.t < self.onset), 0.02, 1.0)
        self.offered = self.base * active * np.exp(self.log_noise)
        self.ema_short = np.where(self.t == 0, self.offered, 0.5 * self.ema_short + 0.5 * self.offered)
        self.ema_long = np.where(self.t == 0, self.offered, 0.9 * self.ema_long + 0.1 * self.offered)
        self.rate_sq = np.where(self.t == 0, self.offered**2, 0.9 * self.rate_sq + 0.1 * self.offered**2)

    def _observe(self) -> np.ndarray:
        c, rng, n = self.config, self.np_random, self.config.n_flows
        obs = np.zeros((n, len(FEATURES)))
        load = self.offered.sum() / n
        obs[:, 0] = load
        obs[:, 1] = self.delivered_load
        obs[:, 2] = self.offered
        obs[:, 3] = self.passed
        obs[:, 4] = self.last_drop
        signatures = (
            _SIGNATURES[self.kinds] + self.offsets + rng.normal(0.0, c.signature_noise, (n, len(_SIGNATURE_COLUMNS)))
        )
        obs[:, _SIGNATURE_COLUMNS] = signatures
        obs[:, 7] = self.ema_short
        obs[:, 8] = self.ema_long
        obs[:, 11] = self.t / c.ticks
        obs[:, 12] = np.sqrt(np.maximum(self.rate_sq - self.ema_long**2, 0.0)) / np.maximum(self.ema_long, 1e-6)
        obs[:, 13] = self.load_ema
        obs[:, 14] = self.overload_ema
        obs[:, 17] = self.offered / max(self.offered.sum(), 1e-9)
        obs[:, 18] = np.argsort(np.argsort(self.offered)) / (n - 1)
        obs[:, 19] = self.drop_ema
        return np.clip(obs, OBS_LOW, OBS_HIGH)

    def step(self, action):
        c, n = self.config, self.config.n_flows
        action = np.asarray(action, dtype=np.int64)
        if action.shape != (n,) or np.any((action < 0) | (action >= N_ACTIONS)):
            raise ValueError(f"action must be {n} integers in [0, {N_ACTIONS}), not {action!r}")
        drop = DROP_LEVELS[action]
        passed = self.offered * (1.0 - drop)
        total = passed.sum()
        delivered = passed * min(1.0, n / total) if total > 0 else passed
        overload = max(0.0, total / n - 1.0)
        flow_rewards = self.legit * delivered - c.beta * (1 - self.legit) * delivered - c.kappa * overload * passed
        legit_offered = float((self.legit * self.offered).sum())
        info = {
            "flow_rewards": flow_rewards,
            "overload": overload,
            "legit_goodput": float((self.legit * delivered).sum()) / max(legit_offered, 1e-9),
            "attack_delivered": float(((1 - self.legit) * delivered).sum()) / n,
        }
        self.passed, self.last_drop = passed, drop
        self.drop_ema = 0.8 * self.drop_ema + 0.2 * drop
        self.delivered_load = float(delivered.sum()) / n
        self.load_ema = 0.8 * self.load_ema + 0.2 * total / n
        self.overload_ema = 0.8 * self.overload_ema + 0.2 * overload
        self.t += 1
        self._draw_rates()
        truncated = self.t >= c.ticks
        return self._observe(), float(flow_rewards.mean()), False, truncated, info


# ---------------------------------------------------------------------------------------------------------------------
# Fixed policies
# ---------------------------------------------------------------------------------------------------------------------
def pass_all_policy(obs: np.ndarray) -> np.ndarray:
    """No mitigation: drop nothing."""
    return np.zeros(len(obs), dtype=np.int64)


def fair_share_policy(obs: np.ndarray) -> np.ndarray:
    """The classic policer: while the link is offered more than its capacity, cut every flow above its fair share
    down to it (the smallest drop level that does)."""
    rate, load = obs[:, 2], obs[:, 0]
    needed = np.where((load > 1.0) & (rate > 1.0), 1.0 - 1.0 / np.maximum(rate, 1e-9), 0.0)
    return np.ceil(needed * (N_ACTIONS - 1) - 1e-9).astype(np.int64)


def random_policy(rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    """Uniformly random drop levels."""
    return lambda obs: rng.integers(0, N_ACTIONS, len(obs))


def run_episode(
    env: FlowControlEnv,
    policy: Callable[[np.ndarray], np.ndarray] | None = None,
    learner=None,
    seed: int | None = None,
    reward_scale: float = 1.0,
) -> dict[str, float]:
    """One episode with a fixed ``policy`` or with ``learner`` (all flows in one ``act_batch`` per tick; the
    learner gets the flow rewards times ``reward_scale``).

    Returns the episode's return (sum over ticks of the mean flow reward), the mean legitimate goodput fraction,
    the mean overload and the mean attack traffic delivered (fair shares per flow).
    """
    obs, _ = env.reset(seed=seed)
    n = env.config.n_flows
    keys = np.arange(n)
    rewards = np.full(n, np.nan)  # the first tick carries no reward: no update crosses episodes
    total, goodput, overload, attack = 0.0, 0.0, 0.0, 0.0
    while True:
        if learner is not None:
            actions, _ = learner.act_batch(obs, rewards, keys)
        elif policy is not None:
            actions = policy(obs)
        else:
            raise TypeError("run_episode needs a policy or a learner")
        obs, reward, _, truncated, info = env.step(actions)
        total += reward
        goodput += info["legit_goodput"]
        overload += info["overload"]
        attack += info["attack_delivered"]
        rewards = reward_scale * info["flow_rewards"]
        if truncated:
            if learner is not None:
                learner.act_batch(obs, rewards, keys)  # bootstrapped on q(s', a'); those actions are dropped
            ticks = env.config.ticks
            return {
                "return": total,
                "legit_goodput": goodput / ticks,
                "overload": overload / ticks,
                "attack_delivered": attack / ticks,
            }


def evaluate_policy(env: FlowControlEnv, seeds, policy=None, learner=None) -> dict[str, float]:
    """Mean episode metrics over ``seeds``; a learner acts greedily with updates off (then restored).

    ``saturated`` is the fraction of episodes in which the core clipped a q value (0 for the host reference).
    """
    if learner is not None:
        online, epsilon = learner.online, learner.epsilon
        learner.online, learner.epsilon = False, 0.0
    runs = []
    try:
        for s in seeds:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                runs.append(run_episode(env, policy, learner, seed=int(s)))
            runs[-1]["saturated"] = float(any(w.category.__name__ == "ParsaSaturationWarning" for w in caught))
            for w in caught:
                if w.category.__name__ != "ParsaSaturationWarning":
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    finally:
        if learner is not None:
            learner.online, learner.epsilon = online, epsilon
    return {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}


def check_fits(board: str) -> tuple[bool, str]:
    """Whether ``board``'s ParSa build can hold the OPaL layout, and why (rows needed vs rows available)."""
    from ....overlay import spec as S
    from ....overlay.models.parsa import schedule

    spec = S.board(board).slot("parsa").spec
    if not isinstance(spec, S.ParsaSpec):
        raise TypeError(f"{board}'s parsa slot holds a {type(spec).__name__}, not a ParsaSpec")
    layout = load_tiling(OPAL_DDOS_TILING)
    rows = spec.workers * spec.tiles_per_worker
    try:
        schedule(layout, spec)
    except ValueError as err:
        return (
            False,
            f"{board}: {layout.n_tiles} tiles needed, {spec.workers} x {spec.tiles_per_worker} = {rows} "
            f"rows available: {err}",
        )
    return True, f"{board}: {layout.n_tiles} tiles in {spec.workers} x {spec.tiles_per_worker} = {rows} rows"


# ---------------------------------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------------------------------
@dataclass
class Args:
    seed: int = 0
    """seed of the experiment (training episodes use seed + episode; evaluation seeds are disjoint)"""
    episodes: int = 100
    """training episodes"""
    backend: str = "emu"
    """where Sarsa runs: in the ParSa core on `emu`, `rtl`, `verilator` or `board`, or on the `host` (FloatSarsa, the
    float64 reference, no core)"""
    board: str = "ZCU106"
    """the board of the overlay (the OPaL layout fits only the ZCU106 build)"""
    alpha: float = 0.1
    """step size summed over tilings (each of the 136 tilings moves by alpha / 136 * delta); small, because every
    tick the 32 flows' updates pile up on the tiles of the global features (bias, link load, ...)"""
    reward_scale: float = 0.25
    """factor applied to the flow rewards the learner sees (keeps q within the 16-bit range at `frac_bits`)"""
    gamma: float = 0.5
    """the discount factor (the task is nearly myopic: a drop level acts within the tick)"""
    epsilon_start: float = 0.2
    """exploration probability of the first episode"""
    epsilon_end: float = 0.01
    """exploration probability from `exploration_fraction` of the episodes on"""
    exploration_fraction: float = 0.6
    """fraction of the episodes over which epsilon falls linearly"""
    frac_bits: int = 12
    """fractional bits of the core's 16-bit values (range +-8, step 1/4096)"""
    eval_every: int = 25
    """evaluate the greedy policy every this many episodes"""
    eval_episodes: int = 5
    """episodes per evaluation (fixed seeds 10**6 + i, shared by the baselines)"""
    env: EnvConfig = field(default_factory=EnvConfig)
    """the task's parameters (on the command line a JSON object of EnvConfig fields, e.g. '{"n_flows": 16}')"""


def train(args: Args, overlay=None) -> dict[str, Any]:
    """Learn per-flow drop control with Sarsa; evaluate against the fixed baselines.

    Returns
    -------
    dict
        ``train_returns`` (per episode), ``evaluations`` (list of ``{"episode", "return", "legit_goodput",
        "overload", "attack_delivered", "saturated"}`` of the greedy policy, episode 0 = before learning), ``baselines``
        (``pass_all``, ``fair_share``, ``random``: the same metrics on the same seeds), ``wall_time_s``,
        ``records_per_s`` (state records through the learner), ``saturated_episodes`` (training episodes in which
        the core clipped a value), ``learner`` (the trained learner), ``args``.

    Raises
    ------
    ValueError
        A bad argument, or a board whose ParSa build cannot hold the OPaL layout.
    """
    check_backend(args.backend)
    if args.episodes < 1 or args.eval_every < 1 or args.eval_episodes < 1:
        raise FieldValueError(
            "episodes, eval_every and eval_episodes must be >= 1", "episodes", "eval_every", "eval_episodes"
        )
    layout = load_tiling(OPAL_DDOS_TILING)
    env = FlowControlEnv(args.env)
    learner = make_learner(
        args.backend,
        layout,
        N_ACTIONS,
        (OBS_LOW, OBS_HIGH),
        args.alpha / layout.n_tilings,
        args.gamma,
        args.epsilon_start,
        1.0,
        args.frac_bits,
        args.seed,
        args.board,
        overlay,
    )
    eval_seeds = [10**6 + i for i in range(args.eval_episodes)]
    baselines = {
        "pass_all": evaluate_policy(env, eval_seeds, pass_all_policy),
        "fair_share": evaluate_policy(env, eval_seeds, fair_share_policy),
        "random": evaluate_policy(env, eval_seeds, random_policy(np.random.default_rng(args.seed))),
    }
    evaluations = [{"episode": 0, **evaluate_policy(env, eval_seeds, learner=learner)}]
    train_returns = []
    saturated_episodes = 0
    decay_episodes = max(1, int(args.exploration_fraction * args.episodes))
    start = time.perf_counter()
    for episode in range(args.episodes):
        frac = min(1.0, episode / decay_episodes)
        learner.epsilon = args.epsilon_start + frac * (args.epsilon_end - args.epsilon_start)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            train_returns.append(
                run_episode(env, learner=learner, seed=args.seed + episode, reward_scale=args.reward_scale)["return"]
            )
        saturated_episodes += any(w.category.__name__ == "ParsaSaturationWarning" for w in caught)
        for w in caught:
            if w.category.__name__ != "ParsaSaturationWarning":
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if (episode + 1) % args.eval_every == 0 or episode + 1 == args.episodes:
            evaluations.append({"episode": episode + 1, **evaluate_policy(env, eval_seeds, learner=learner)})
    wall_time_s = time.perf_counter() - start
    records = args.episodes * (args.env.ticks + 1) * args.env.n_flows
    return {
        "train_returns": train_returns,
        "evaluations": evaluations,
        "baselines": baselines,
        "wall_time_s": wall_time_s,
        "records_per_s": records / wall_time_s,
        "learner": learner,
        "saturated_episodes": saturated_episodes,
        "args": {**asdict(replace(args, env=args.env)), "tiling": "OPAL_DDOS_TILING"},
    }


def _env_config(text: str) -> EnvConfig:
    """argparse type of ``--env``: a JSON object of :class:`EnvConfig` fields (lists become tuples)."""
    try:
        fields = json.loads(text)
        config: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
        return EnvConfig(**config)
    except (ValueError, TypeError, AttributeError) as error:
        raise argparse.ArgumentTypeError(f"expected a JSON object of EnvConfig fields, not {text!r}: {error}") from None


def main(argv: list[str] | None = None) -> int:
    """``python -m pynq_rl.host.agents.sarsa.netdemo``: train, print the evaluations against the baselines as JSON.

    Every field of :class:`Args` is an option (``--field-name``, :mod:`.options`); ``--env`` takes a JSON object.
    """
    parser = Parser(prog="python -m pynq_rl.host.agents.sarsa.netdemo", description=__doc__.splitlines()[0])
    add_options(
        parser,
        Args,
        choices={"backend": BACKENDS},
        overrides={"env": {"type": _env_config, "metavar": "JSON"}},
    )
    result = train(Args(**given(parser.parse_args(argv), Args)))
    print(json.dumps({k: v for k, v in result.items() if k not in ("learner", "train_returns")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
