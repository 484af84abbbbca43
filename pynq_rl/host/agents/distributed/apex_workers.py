"""Ape-X's workers (see :mod:`.apex` for the algorithm and the driver): the n-step builder, the Ray actors (parameter
server, replay server, Ape-X actors, learner) and the driver-side greedy evaluator.

Every class takes the run's :class:`~.apex_args.Args`; the Ray-remote versions are :data:`ParameterServer`,
:data:`ReplayServerActor`, :data:`ApexActor` and :data:`Learner` (the underscored classes are not constructed
directly), and the handles they start are typed by :class:`ParameterServerHandle`, :class:`ReplayServerHandle`,
:class:`ApexActorHandle` and :class:`LearnerHandle` (Ray itself is reached through :mod:`.ray_api`). Needs Ray and
torch (``pip install 'pynq-rl[distributed]'``).
"""

from __future__ import annotations

import collections
import io
import os
import random
import time
import uuid
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
import torch.optim as optim

from ..common.run import linear_schedule
from ..nets.torch_nets import QNetwork
from . import ray_api
from .apex_args import Args
from .client import NotReady, PrefetchingSampler, ReplayClient
from .pacing import FixedRate, ReplayRatio
from .ray_api import ActorClass, RemoteMethod
from .server import ReplayServer
from .service import serve

__all__ = [
    "ApexActor",
    "Learner",
    "ParameterServer",
    "ReplayServerActor",
    "ApexActorHandle",
    "LearnerHandle",
    "ParameterServerHandle",
    "ReplayServerHandle",
    "actor_epsilon",
    "NStepBuilder",
    "Evaluator",
    "env_spaces",
    "parameter_server_handle",
    "td_errors",
]


def actor_epsilon(index: int, num_actors: int, base: float = 0.4, alpha: float = 7.0) -> float:
    """Ape-X exploration of actor ``index``: ``base ** (1 + alpha * index / (num_actors - 1))`` (``base`` if alone)."""
    if num_actors <= 1:
        return float(base)
    return float(base ** (1.0 + alpha * index / (num_actors - 1)))


class NStepBuilder:
    """Turns one environment's steps into n-step transitions ``(s_t, a_t, R, s_{t+k}, gamma**k or 0)``.

    ``R = sum_{j<k} gamma**j r_{t+j}`` with ``k = n`` inside an episode and ``k < n`` at its end: a terminated episode
    gives discount 0, a truncated one bootstraps from its real last observation with ``gamma**k``.
    """

    def __init__(self, n: int, gamma: float) -> None:
        if n < 1:
            raise ValueError(f"n_step must be >= 1, not {n!r}")
        self.n, self.gamma = int(n), float(gamma)
        self._window: collections.deque = collections.deque()

    def step(
        self, obs: np.ndarray, action: int, reward: float, next_obs: np.ndarray, terminated: bool, truncated: bool
    ) -> list[tuple]:
        """Record one step; return the transitions it completes (0 or 1 inside an episode, the rest at its end)."""
        self._window.append((obs, action, reward))
        out = []
        if len(self._window) == self.n and not (terminated or truncated):
            out.append(self._emit(next_obs, bootstrap=True))
            self._window.popleft()
        if terminated or truncated:
            while self._window:
                out.append(self._emit(next_obs, bootstrap=not terminated))
                self._window.popleft()
        return out

    def _emit(self, next_obs: np.ndarray, bootstrap: bool) -> tuple:
        ret = 0.0
        for j, (_, _, r) in enumerate(self._window):
            ret += (self.gamma**j) * r
        obs, action, _ = self._window[0]
        discount = self.gamma ** len(self._window) if bootstrap else 0.0
        return obs, action, ret, next_obs, discount


def td_errors(
    q_network: QNetwork, target_network: QNetwork, batch: dict[str, np.ndarray], double_q: bool = True
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(delta, q(s, a))`` of a batch: Double DQN target with the batch's per-transition discounts."""
    observations, next_observations, actions, rewards, discounts = (
        torch.tensor(np.asarray(batch[name]))
        for name in (  # copies: arrays decoded from messages are read-only
            "observations",
            "next_observations",
            "actions",
            "rewards",
            "discounts",
        )
    )
    with torch.no_grad():
        next_online = q_network(next_observations)
        next_actions = next_online.argmax(dim=1, keepdim=True)
        next_values = (target_network(next_observations) if double_q else next_online).gather(1, next_actions)
        targets = rewards + discounts * next_values.squeeze(1)
    q_values = q_network(observations).gather(1, actions.unsqueeze(1)).squeeze(1)
    return targets - q_values, q_values


def replay_ratio(args: Args, client: ReplayClient) -> ReplayRatio:
    """The run's :class:`~.pacing.ReplayRatio` over ``client``'s view of the replay server's counters."""
    return ReplayRatio(
        args.updates_per_insert,
        args.learning_starts,
        args.rate_limit_tolerance,
        client.stats,  # as patient as the client's pushes: a restarting server does not end the run
        max_push=args.local_buffer_size + args.n_step,
    )


def _weights_to_numpy(network: torch.nn.Module) -> dict[str, np.ndarray]:
    return {name: tensor.detach().cpu().numpy().copy() for name, tensor in network.state_dict().items()}


def _load_numpy_weights(network: torch.nn.Module, weights: dict[str, np.ndarray]) -> None:
    network.load_state_dict({name: torch.tensor(array) for name, array in weights.items()})


def parameter_server_handle(parameter_server: str | ParameterServerHandle) -> ParameterServerHandle:
    """The :data:`ParameterServer` handle, from the handle itself or from the name the driver gave the actor.

    The driver passes the name to the actors' and the learner's constructors: a handle there is an object reference
    among the arguments of an actor that Ray may restart, which Ray cannot keep alive for the restart and reports
    with an error-level log line on every run ("has constructor arguments in the object store and max_restarts >
    0"); a named actor is looked up again by each new incarnation.
    """
    if isinstance(parameter_server, str):
        handle: ParameterServerHandle = ray_api.get_actor(parameter_server)
        return handle
    return parameter_server


def env_spaces(env_id: str) -> tuple[tuple[int, ...], int]:
    """Observation shape and number of actions of ``env_id`` (discrete actions only: ValueError otherwise)."""
    env = gym.make(env_id)
    try:
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise ValueError(f"Ape-X here needs a discrete action space; {env_id} has {env.action_space}")
        shape = env.observation_space.shape
        if shape is None:
            raise ValueError(
                f"Ape-X here needs an observation space with a shape; {env_id} has {env.observation_space}"
            )
        return tuple(shape), int(env.action_space.n)
    finally:
        env.close()


# ---------------------------------------------------------------------------------------------------------------------
# Ray actors
# ---------------------------------------------------------------------------------------------------------------------
class _ParameterServer:
    """The learner's latest weights, versioned; actors and the driver pull them. Use :data:`ParameterServer`."""

    def __init__(self) -> None:
        self.version = 0
        self.weights: dict[str, np.ndarray] | None = None

    def publish(self, version: int, weights: dict[str, np.ndarray]) -> None:
        """Store ``weights`` if ``version`` is newer than the stored one."""
        if version > self.version or self.weights is None:
            self.version, self.weights = int(version), weights

    def pull(self, known_version: int = -1) -> tuple[int, dict[str, np.ndarray] | None]:
        """``(version, weights)``, with ``weights`` None if the caller's ``known_version`` is already the newest."""
        return self.version, (self.weights if self.version > known_version else None)

    def save_learner(self, state: bytes) -> None:
        """Keep the learner's training state (``torch.save`` bytes), which a restarted learner resumes from."""
        self.learner = state

    def learner_state(self) -> bytes | None:
        """The last state :meth:`save_learner` kept (None before the first)."""
        return getattr(self, "learner", None)


class _ReplayServerActor:
    """A :class:`~.server.ReplayServer` and its gRPC server inside a Ray actor. Use :data:`ReplayServerActor`.

    Ray restarts it with the same arguments, so it binds the same port and restores from ``checkpoint_dir``.
    """

    def __init__(
        self,
        capacity: int,
        obs_shape: tuple[int, ...],
        backend: str,
        alpha: float,
        bind: str,
        port: int,
        checkpoint_dir: str | None,
        checkpoint_every_s: float | None,
        queue_batches: int,
        board: Any = None,
        seed: int | None = None,
    ) -> None:
        self.replay = ReplayServer(
            capacity,
            obs_shape,
            backend,
            alpha,
            queue_batches,
            checkpoint_dir,
            checkpoint_every_s if checkpoint_dir else None,
            board=board,
            seed=seed,
        )
        self.server, self.port = serve(self.replay, f"{bind}:{port}")
        host = bind if bind not in ("0.0.0.0", "[::]") else ray_api.node_ip_address()
        self._address = f"{host}:{self.port}"

    def address(self) -> str:
        """``host:port`` clients connect to."""
        return self._address

    def stats(self) -> dict[str, Any]:
        """The server's statistics."""
        return self.replay.stats()

    def pid(self) -> int:
        """The process id (tests kill it)."""
        return os.getpid()

    def shutdown(self) -> None:
        """Stop serving, drain the queue, checkpoint (if it has a checkpoint directory)."""
        self.server.stop(grace=1.0).wait()
        self.replay.close(checkpoint=self.replay.checkpoint_dir is not None)


class _ApexActor:
    """One Ape-X actor: epsilon-greedy with its own epsilon, n-step local buffer, own initial priorities.

    Use :data:`ApexActor`. Its environment survives across :meth:`run` calls (episodes continue), not across a
    restart: Ray re-runs ``__init__`` in a new process, which starts a new episode with a new seed and a new push id.
    """

    def __init__(self, index: int, args: Args, address: str, parameter_server: str | ParameterServerHandle) -> None:
        torch.set_num_threads(args.torch_threads)
        self.index, self.args = index, args
        self.epsilon = actor_epsilon(index, args.num_actors, args.epsilon_base, args.epsilon_alpha)
        self.incarnation = uuid.uuid4().hex[:8]
        seed = args.seed + 1000 * (index + 1) + int(self.incarnation, 16) % 997
        self.rng = np.random.default_rng(seed)
        torch.manual_seed(seed)
        self.env = gym.make(args.env_id)
        obs_shape, self.n_actions = env_spaces(args.env_id)
        self.q_network = QNetwork(int(np.prod(obs_shape)), self.n_actions, args.hidden_sizes)
        self.parameter_server = parameter_server_handle(parameter_server)
        self.weight_version = -1
        self._pull_weights()
        self.client = ReplayClient(address, actor=True, retry_s=args.replay_retry_s)
        self.limiter = replay_ratio(args, self.client)
        self.builder = NStepBuilder(args.n_step, args.gamma)
        self.local: list[tuple] = []
        self.obs, _ = self.env.reset(seed=seed)
        self.episode_return, self.episode_length = 0.0, 0
        self.steps = self.pushes = self.rate_limit_timeouts = 0

    def _pull_weights(self) -> None:
        version, weights = ray_api.get(self.parameter_server.pull.remote(self.weight_version))
        if weights is not None:
            _load_numpy_weights(self.q_network, weights)
            self.weight_version = version

    def _flush(self) -> None:
        if not self.local:
            return
        obs, actions, rewards, next_obs, discounts = (np.asarray(column) for column in zip(*self.local))
        batch: dict[str, np.ndarray] = {
            "observations": obs.astype(np.float32),
            "actions": actions.astype(np.int64),
            "rewards": rewards.astype(np.float32),
            "next_observations": next_obs.astype(np.float32),
            "discounts": discounts.astype(np.float32),
        }
        with torch.no_grad():  # the actor's own copy is both networks: Ape-X's initial priorities
            delta, _ = td_errors(self.q_network, self.q_network, batch)
        if not self.limiter.wait_to_insert(len(self.local), timeout_s=30.0):
            self.rate_limit_timeouts += 1  # the learner is gone or restarting: push anyway, as without a limit
        self.client.push(batch, np.abs(delta.numpy()).astype(np.float64) + self.args.per_eps)
        self.pushes += 1
        self.local = []

    def run(self, steps: int) -> dict[str, Any]:
        """Act for ``steps`` environment steps; returns the finished episodes and counters.

        Raises
        ------
        ReplayUnavailable
            The replay server stayed unreachable for the client's retry budget.
        """
        episodes = []
        pace = FixedRate(self.args.actor_max_sps)
        for _ in range(int(steps)):
            if self.rng.random() < self.epsilon:
                action = int(self.rng.integers(self.n_actions))
            else:
                with torch.no_grad():
                    q = self.q_network(torch.as_tensor(np.asarray(self.obs, dtype=np.float32)).unsqueeze(0))
                action = int(q.argmax(dim=1).item())
            next_obs, reward, terminated, truncated, _ = self.env.step(action)
            self.local.extend(
                self.builder.step(
                    np.asarray(self.obs, dtype=np.float32),
                    action,
                    float(reward),
                    np.asarray(next_obs, dtype=np.float32),
                    terminated,
                    truncated,
                )
            )
            self.episode_return += float(reward)
            self.episode_length += 1
            self.steps += 1
            if terminated or truncated:
                episodes.append(
                    {
                        "actor": self.index,
                        "epsilon": self.epsilon,
                        "return": self.episode_return,
                        "length": self.episode_length,
                        "weight_version": self.weight_version,
                    }
                )
                self.episode_return, self.episode_length = 0.0, 0
                self.obs, _ = self.env.reset()
            else:
                self.obs = next_obs
            if len(self.local) >= self.args.local_buffer_size:
                self._flush()
            if self.steps % self.args.weight_sync_steps == 0:
                self._pull_weights()
            pace.wait()
        return {
            "actor": self.index,
            "incarnation": self.incarnation,
            "pid": os.getpid(),
            "episodes": episodes,
            "steps": self.steps,
            "pushes": self.pushes,
            "epsilon": self.epsilon,
            "retries": self.client.retries,
            "rate_limited_s": self.limiter.waited_s,
            "rate_limit_timeouts": self.rate_limit_timeouts,
        }

    def pid(self) -> int:
        """The process id (tests kill it)."""
        return os.getpid()


class _Learner:
    """The Double-DQN learner: samples from the replay server, writes priorities back, publishes weights.

    After every chunk it leaves its training state (networks, optimizer, update count) with the parameter server; a
    learner that Ray restarts after a crash resumes from there, losing at most the chunk it was running (whose
    priority updates the replay server has kept). Use :data:`Learner`.
    """

    def __init__(self, args: Args, address: str, parameter_server: str | ParameterServerHandle) -> None:
        torch.set_num_threads(args.torch_threads)
        random.seed(args.seed)
        np.random.seed(args.seed)
        torch.manual_seed(args.seed)
        self.args = args
        obs_shape, n_actions = env_spaces(args.env_id)
        self.q_network = QNetwork(int(np.prod(obs_shape)), n_actions, args.hidden_sizes)
        self.target_network = QNetwork(int(np.prod(obs_shape)), n_actions, args.hidden_sizes)
        self.target_network.load_state_dict(self.q_network.state_dict())
        self.optimizer = optim.Adam(self.q_network.parameters(), lr=args.learning_rate)
        self.client = ReplayClient(address, retry_s=args.replay_retry_s)
        self.sampler = (
            PrefetchingSampler(self.client, args.batch_size, args.sample_prefetch) if args.sample_prefetch else None
        )
        self.parameter_server = parameter_server_handle(parameter_server)
        self.limiter = replay_ratio(args, self.client)
        self.updates = 0
        saved = ray_api.get(self.parameter_server.learner_state.remote())
        self.resumed = saved is not None
        if saved is None:
            self.publish()
        else:
            self._load(saved)

    def _save(self) -> None:
        buffer = io.BytesIO()
        torch.save(
            {
                "q_network": self.q_network.state_dict(),
                "target_network": self.target_network.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "updates": self.updates,
            },
            buffer,
        )
        ray_api.get(self.parameter_server.save_learner.remote(buffer.getvalue()))

    def _load(self, saved: bytes) -> None:
        state = torch.load(io.BytesIO(saved), weights_only=True)
        self.q_network.load_state_dict(state["q_network"])
        self.target_network.load_state_dict(state["target_network"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.updates = int(state["updates"])

    def pid(self) -> int:
        """The process id (tests kill it)."""
        return os.getpid()

    def publish(self) -> int:
        """Publish the online network's weights (version = updates so far); returns the version."""
        ray_api.get(self.parameter_server.publish.remote(self.updates, _weights_to_numpy(self.q_network)))
        return self.updates

    def train(self, updates: int) -> dict[str, Any]:
        """Run up to ``updates`` gradient steps (fewer if ``max_updates`` is reached); returns chunk statistics.

        Waits (up to 10 minutes) for ``learning_starts`` transitions in the replay first, and before each update
        for the actors' inserts the ``updates_per_insert`` rate limit asks for (a chunk whose actors stay 5 s behind
        returns early, so the driver can evaluate and check its clock).
        """
        args = self.args
        if self.updates == 0:
            self.client.wait_ready(timeout_s=600.0, min_size=args.learning_starts)
        losses, q_means, stale = [], [], 0
        sample_s = update_s = 0.0
        start = time.perf_counter()
        waited_before = self.limiter.waited_s
        done = 0
        for _ in range(int(updates)):
            if self.updates >= args.max_updates:
                break
            if not self.limiter.wait_to_update(timeout_s=5.0):
                break  # the actors are behind (or stalled): hand the chunk back, the driver checks its clock
            fraction = self.updates / max(1, args.max_updates)
            beta = linear_schedule(args.per_beta, 1.0, 1.0, fraction)
            for group in self.optimizer.param_groups:
                group["lr"] = args.learning_rate * linear_schedule(1.0, 0.1, 1.0, fraction)
            t0 = time.perf_counter()
            try:
                batch = self.sampler.sample(beta) if self.sampler else self.client.sample(args.batch_size, beta)
            except NotReady:
                time.sleep(0.05)
                continue
            sample_s += time.perf_counter() - t0
            delta, q_values = td_errors(self.q_network, self.target_network, batch)
            weights = torch.tensor(np.asarray(batch["weights"]))
            loss = (weights * F.smooth_l1_loss(delta, torch.zeros_like(delta), reduction="none")).mean()
            self.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.q_network.parameters(), args.max_grad_norm)
            self.optimizer.step()
            t0 = time.perf_counter()
            result = self.client.update_priorities(
                batch["indices"], np.abs(delta.detach().numpy()) + args.per_eps, batch["versions"]
            )
            update_s += time.perf_counter() - t0
            stale += result["stale"]
            self.updates += 1
            self.limiter.record_update()
            done += 1
            losses.append(float(loss.item()))
            q_means.append(float(q_values.mean().item()))
            if self.updates % args.target_network_frequency == 0:
                self.target_network.load_state_dict(self.q_network.state_dict())
            if self.updates % args.publish_every == 0:
                self.publish()
        elapsed = time.perf_counter() - start
        self._save()
        return {
            "updates": self.updates,
            "chunk_updates": done,
            "pid": os.getpid(),
            "resumed": self.resumed,
            "losses/td_loss": float(np.mean(losses)) if losses else float("nan"),
            "losses/q_values": float(np.mean(q_means)) if q_means else float("nan"),
            "charts/updates_per_s": done / elapsed if elapsed > 0 else 0.0,
            "latency/sample_ms": 1e3 * sample_s / max(1, done),
            "latency/update_ms": 1e3 * update_s / max(1, done),
            "replay/stale_priorities": stale,
            "replay/client_retries": self.client.retries,
            "replay/prefetch_fallbacks": self.sampler.fallbacks if self.sampler else 0,
            "charts/rate_limited_s": self.limiter.waited_s - waited_before,
        }


# the handles the actor classes start: the methods the driver, the tests and the other actors call remotely (keep
# them in step with the classes above; mypy checks the constructors' arguments, not these)
class ParameterServerHandle(Protocol):
    """A :data:`ParameterServer` actor (:class:`_ParameterServer`'s methods, remote)."""

    publish: RemoteMethod[[int, dict[str, np.ndarray]], None]
    pull: RemoteMethod[[int], tuple[int, dict[str, np.ndarray] | None]]
    save_learner: RemoteMethod[[bytes], None]
    learner_state: RemoteMethod[[], bytes | None]


class ReplayServerHandle(Protocol):
    """A :data:`ReplayServerActor` actor (:class:`_ReplayServerActor`'s methods, remote)."""

    address: RemoteMethod[[], str]
    stats: RemoteMethod[[], dict[str, Any]]
    pid: RemoteMethod[[], int]
    shutdown: RemoteMethod[[], None]


class ApexActorHandle(Protocol):
    """An :data:`ApexActor` actor (:class:`_ApexActor`'s methods, remote)."""

    run: RemoteMethod[[int], dict[str, Any]]
    pid: RemoteMethod[[], int]


class LearnerHandle(Protocol):
    """A :data:`Learner` actor (:class:`_Learner`'s methods, remote)."""

    train: RemoteMethod[[int], dict[str, Any]]
    publish: RemoteMethod[[], int]
    pid: RemoteMethod[[], int]


ParameterServer: ActorClass[[], ParameterServerHandle] = ray_api.actor_class(_ParameterServer, num_cpus=0)
"""Ray actor class of :class:`_ParameterServer`."""
ReplayServerActor: ActorClass[
    [int, tuple[int, ...], str, float, str, int, str | None, float | None, int, Any, int | None], ReplayServerHandle
] = ray_api.actor_class(_ReplayServerActor, num_cpus=0)
"""Ray actor class of :class:`_ReplayServerActor` (``.options(max_restarts=...)`` to have Ray restart it)."""
ApexActor: ActorClass[[int, Args, str, str | ParameterServerHandle], ApexActorHandle] = ray_api.actor_class(
    _ApexActor, num_cpus=1
)
"""Ray actor class of :class:`_ApexActor`."""
Learner: ActorClass[[Args, str, str | ParameterServerHandle], LearnerHandle] = ray_api.actor_class(_Learner, num_cpus=1)
"""Ray actor class of :class:`_Learner`."""


class Evaluator:
    """Greedy episodes with the latest published weights, in the driver process (between learner chunks)."""

    def __init__(self, args: Args, parameter_server: ParameterServerHandle) -> None:
        obs_shape, n_actions = env_spaces(args.env_id)
        self.q_network = QNetwork(int(np.prod(obs_shape)), n_actions, args.hidden_sizes)
        self.env = gym.make(args.env_id)
        self.parameter_server = parameter_server
        self.version = -1
        self.seed = args.seed + 10_000

    def episode(self) -> dict[str, Any]:
        """One greedy episode with the newest weights: ``{"return", "length", "weight_version"}``."""
        version, weights = ray_api.get(self.parameter_server.pull.remote(self.version))
        if weights is not None:
            _load_numpy_weights(self.q_network, weights)
            self.version = version
        obs, _ = self.env.reset(seed=self.seed)
        self.seed += 1
        total, length, done = 0.0, 0, False
        while not done:
            with torch.no_grad():
                action = int(self.q_network(torch.as_tensor(obs, dtype=torch.float32).unsqueeze(0)).argmax().item())
            obs, reward, terminated, truncated, _ = self.env.step(action)
            total += float(reward)
            length += 1
            done = terminated or truncated
        return {"return": total, "length": length, "weight_version": self.version}
