r"""RLlib (new API stack) learner connector: PPO's GAE step on the GAE core.

Import path ``pynq_rl.host.integrations.rllib``. Needs the ``rllib`` extra (``pip install ".[rllib]"`` in a venv
of its own): ``ray[rllib]==2.60.0`` pins ``gymnasium==1.2.2`` (the other extras resolve to a newer one) and would
pull the newest pyarrow, which needs NumPy 2 at import while this project pins ``numpy<2``; the extra pins pyarrow
20.0.0. ``tools/rllib_check.sh`` is CI's run of it::

    from ray.rllib.algorithms.ppo import PPOConfig
    from pynq_rl.host.integrations.rllib import GaeCorePPOTorchLearner

    config = (PPOConfig().environment("CartPole-v1")
              .training(learner_class=GaeCorePPOTorchLearner,
                        learner_config_dict={"pynq_rl_gae": {"backend": "emu", "quantize": True}}))

:class:`GaeCorePPOTorchLearner` is RLlib's ``PPOTorchLearner`` with RLlib's ``GeneralAdvantageEstimation``
connector piece replaced by :class:`GaeCoreAdvantageEstimation`.

RLlib's conventions on the core
-------------------------------
RLlib's learner pipeline concatenates episodes, each elongated by one phantom step, into 1-D arrays, and computes
(``compute_value_targets``)

.. math::

    \delta_t = r_t + \gamma (1 - \mathrm{term}_t) V_{t+1} - V_t, \qquad
    A_t = \delta_t + \gamma\lambda (1 - \mathrm{term}_t)(1 - \mathrm{trunc}_t) A_{t+1},

with ``V_L = 0`` after the last element. The core has one flag for both gates, so a truncated step bootstraps by
folding the value into the reward, as the core's contract says:

.. math::

    d_t = \mathrm{term}_t \lor \mathrm{trunc}_t, \qquad
    r'_t = r_t + \gamma\,\mathrm{trunc}_t (1 - \mathrm{term}_t) V_{t+1}, \qquad
    \mathrm{values} = [V_0, \dots, V_{L-1}, 0].

Value targets are ``A + V``; advantages are ``A`` standardized over the batch, as RLlib does. The sequence runs as
one lane (the driver chunks it at T_MAX with the carry handled). Stateful (recurrent) modules are not supported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    from ray.rllib.algorithms.ppo.torch.ppo_torch_learner import PPOTorchLearner
    from ray.rllib.connectors.common.numpy_to_tensor import NumpyToTensor
    from ray.rllib.connectors.connector_v2 import ConnectorV2
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
    from ray.rllib.evaluation.postprocessing import Postprocessing
    from ray.rllib.utils.numpy import convert_to_numpy
    from ray.rllib.utils.postprocessing.zero_padding import unpad_data_if_necessary
except ImportError as error:  # pragma: no cover - exercised only without RLlib
    # a ModuleNotFoundError naming the missing module, so tools/check_install.py reports it as an absent extra
    raise ModuleNotFoundError(
        "pynq_rl.host.integrations.rllib needs RLlib: pip install 'ray[rllib]==2.60.0' 'pyarrow==20.0.0' "
        f"(it pins gymnasium==1.2.2) ({error})",
        name=error.name,
    ) from error

from ..agents.ppo.advantages import GaeCompute

__all__ = ["GaeCoreAdvantageEstimation", "GaeCorePPOTorchLearner", "rllib_to_core", "value_targets_on_core"]

CONFIG_KEY = "pynq_rl_gae"
"""key of ``learner_config_dict`` holding the connector's keywords (``backend``, ``board``, ``quantize``)"""


def rllib_to_core(
    values: np.ndarray, rewards: np.ndarray, terminateds: np.ndarray, truncateds: np.ndarray, gamma: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Map RLlib's concatenated 1-D episode arrays to the core's ``(rewards[L, 1], values[L + 1, 1], dones[L, 1])``.

    Parameters
    ----------
    values, rewards, terminateds, truncateds : numpy.ndarray
        Shape ``(L,)``, as RLlib's GAE connector sees them (phantom steps included).
    gamma : float
        Discount factor.

    Returns
    -------
    rewards, values, dones : numpy.ndarray
        float32 columns; see the module docstring for the equations.

    Raises
    ------
    ValueError
        If the arrays are not 1-D of one length.
    """
    values, rewards = np.asarray(values, np.float64), np.asarray(rewards, np.float64)
    terminateds, truncateds = np.asarray(terminateds, bool), np.asarray(truncateds, bool)
    shapes = {a.shape for a in (values, rewards, terminateds, truncateds)}
    if len(shapes) != 1 or values.ndim != 1:
        raise ValueError(f"values, rewards, terminateds and truncateds must be 1-D of one length, not {shapes}")
    next_values = np.append(values[1:], 0.0)
    bootstrap = truncateds & ~terminateds
    core_rewards = rewards + gamma * bootstrap * next_values
    core_values = np.append(values, 0.0)
    core_dones = terminateds | truncateds
    return (
        core_rewards.astype(np.float32)[:, None],
        core_values.astype(np.float32)[:, None],
        core_dones.astype(np.float32)[:, None],
    )


def value_targets_on_core(
    gae: GaeCompute, values, rewards, terminateds, truncateds, gamma: float, lambda_: float, quantize: bool = True
) -> np.ndarray:
    """RLlib's ``compute_value_targets`` (``A + V``, float32, shape ``(L,)``) computed by the GAE core."""
    r, v, d = rllib_to_core(values, rewards, terminateds, truncateds, gamma)
    _, returns = gae.compute(r, v, d, gamma=float(gamma), lam=float(lambda_), quantize=quantize)
    return np.asarray(returns, np.float32)[:, 0]


class GaeCoreAdvantageEstimation(ConnectorV2):
    """Learner connector piece: RLlib's GAE (advantages, value targets) with the recursion on the GAE core.

    Parameters
    ----------
    input_observation_space, input_action_space
        As for any ``ConnectorV2``.
    gamma, lambda_ : float
        Discount and GAE lambda.
    gae : object, optional
        Anything with the driver's ``compute``; if None, ``load_core("gae", backend, board)`` is built
        on first use (in the learner's process).
    backend, board : optional
        The overlay to build when ``gae`` is None (None: the overlay's default backend).
    quantize : bool
        8-bit codes in q8-runs mode (True) or raw Q15.16 words (False) in the core.

    Raises
    ------
    NotImplementedError
        On call, for a stateful (recurrent) RLModule.
    """

    def __init__(
        self,
        input_observation_space=None,
        input_action_space=None,
        *,
        gamma: float,
        lambda_: float,
        gae: GaeCompute | None = None,
        backend: str | None = None,
        board: Any = None,
        quantize: bool = True,
    ) -> None:
        super().__init__(input_observation_space, input_action_space)
        self.gamma, self.lambda_ = float(gamma), float(lambda_)
        self.backend, self.board, self.quantize = backend, board, bool(quantize)
        self._gae = gae
        self._to_tensor: NumpyToTensor | None = None

    @property
    def gae(self) -> GaeCompute:
        """The GAE core's driver (built on first use when none was given)."""
        if self._gae is None:
            from ..overlay import load_core

            self._gae = load_core("gae", self.backend, self.board)
        return self._gae

    def __call__(self, *, rl_module, episodes, batch, **kwargs):
        device = None
        episode_list = list(self.single_agent_episode_iterator(episodes, agents_that_stepped_only=False))
        vf_preds = rl_module.foreach_module(
            func=lambda mid, module: (
                module.compute_values(batch[mid]) if mid in batch and isinstance(module, ValueFunctionAPI) else None
            ),
            return_dict=True,
        )
        results = {}
        for module_id, preds in vf_preds.items():
            if preds is None:
                continue
            if rl_module[module_id].is_stateful():
                raise NotImplementedError("GaeCoreAdvantageEstimation does not support stateful RLModules")
            device = preds.device
            lens = [len(e) for e in episode_list if e.module_id in (None, module_id)]
            values = unpad_data_if_necessary(lens, convert_to_numpy(preds))
            columns = {
                name: unpad_data_if_necessary(lens, convert_to_numpy(batch[module_id][name]))
                for name in (Columns.REWARDS, Columns.TERMINATEDS, Columns.TRUNCATEDS)
            }
            value_targets = value_targets_on_core(
                self.gae,
                values,
                columns[Columns.REWARDS],
                columns[Columns.TERMINATEDS],
                columns[Columns.TRUNCATEDS],
                self.gamma,
                self.lambda_,
                self.quantize,
            )
            advantages = value_targets - values
            advantages = (advantages - advantages.mean()) / max(1e-4, advantages.std())
            results[module_id] = {
                Postprocessing.ADVANTAGES: advantages.astype(np.float32),
                Postprocessing.VALUE_TARGETS: value_targets,
            }
        if self._to_tensor is None:
            self._to_tensor = NumpyToTensor(as_learner_connector=True, device=device)
        tensors = self._to_tensor(rl_module=rl_module, batch=results, episodes=episodes)
        for module_id, module_batch in tensors.items():
            batch[module_id].update(module_batch)
        return batch


class GaeCorePPOTorchLearner(PPOTorchLearner):
    """RLlib's ``PPOTorchLearner`` with the GAE connector piece replaced by :class:`GaeCoreAdvantageEstimation`.

    The connector's keywords come from ``config.learner_config_dict["pynq_rl_gae"]`` (``backend``, ``board``,
    ``quantize``).
    """

    def build(self) -> None:
        super().build()
        if self._learner_connector is not None and self.config.add_default_connectors_to_learner_pipeline:
            self._learner_connector.remove("GeneralAdvantageEstimation")
            options = dict(self.config.learner_config_dict.get(CONFIG_KEY, {}))
            self._learner_connector.append(
                GaeCoreAdvantageEstimation(gamma=self.config.gamma, lambda_=self.config.lambda_, **options)
            )
