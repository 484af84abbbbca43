r"""Ape-X (Horgan et al., 2018) on Ray: many actors, one prioritized replay between them and the learner, one learner.

Layout (in-network experience sampling): actors push n-step transitions with initial priorities to the replay
server, the node the traffic passes through (:mod:`.server`: the replay core + storage behind gRPC); only sampled
batches travel on to the learner, which sends new priorities back. The replay server is a Ray actor when it runs on a
Ray node (:class:`ReplayServerActor`, restarted by Ray from its checkpoint directory), or an external gRPC address
when it runs on a PYNQ board (``replay_address``; start it there with
``python -m pynq_rl.host.agents.distributed.service``).

* **Actors** (:class:`ApexActor`, Ray actors restarted by Ray if they die): actor ``i`` of ``N`` explores with
  ``epsilon_i = epsilon_base ** (1 + epsilon_alpha * i / (N - 1))`` (Ape-X's schedule: 0.4 ** 1 ... 0.4 ** 8), builds
  n-step transitions in a local buffer, computes their initial priorities ``|delta| + per_eps`` from its own copy of
  the network, pushes every ``local_buffer_size`` transitions and pulls the newest weights every
  ``weight_sync_steps`` environment steps.
* **Learner** (:class:`Learner`): Double DQN on prioritized n-step batches,

  .. math::

      y_i = R_i + \gamma_i \, Q_{\bar\theta}\big(s'_i, \arg\max_a Q_\theta(s'_i, a)\big), \qquad
      L = \frac{1}{B} \sum_i w_i \, \mathrm{Huber}\big(y_i - Q_\theta(s_i, a_i)\big)

  with ``R_i = sum_k gamma**k r_{t+k}`` and ``gamma_i = gamma**k`` (0 when ``s'_i`` is terminal; a time-limit cut
  bootstraps), ``w_i`` the importance-sampling weights (``beta`` annealed to 1 over ``max_updates``). It writes
  ``|delta_i| + per_eps`` back as priorities and publishes its weights every ``publish_every`` updates to a
  :class:`ParameterServer` the actors pull from.
* **Driver** (:func:`train`): starts Ray locally unless it is already initialized, launches everything, resubmits
  work chunks (an actor or the learner that died is restarted by Ray and gets its next chunk; the learner resumes
  from the state it saved after its last chunk), evaluates the greedy policy between
  learner chunks, and stops at ``target_return`` (mean of the last ``eval_window`` evaluation episodes), at
  ``max_updates`` or at ``max_seconds``.

Outputs go to ``out_dir/run_name/``: ``args.json``, ``learner.csv`` (one row per learner chunk), ``episodes.csv``
(actor and evaluation episodes) and ``summary.json``.
"""
from __future__ import annotations

import collections
import csv
import io
import json
import os
import random
import socket
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import ray
import torch
import torch.nn.functional as F
import torch.optim as optim

from ..dqn import linear_schedule
from ..torch_nets import QNetwork
from .client import NotReady, PrefetchingSampler, ReplayClient
from ..priorities import PRIORITY_BACKENDS
from .server import ReplayServer
from .service import serve

__all__ = ["Args", "ApexActor", "Learner", "ParameterServer", "ReplayServerActor", "actor_epsilon", "NStepBuilder",
           "train"]


@dataclass
class Args:
    exp_name: str = "apex"
    """the name of this experiment"""
    seed: int = 0
    """seed of the experiment (actor i uses seed + 1000 (i + 1) + restarts)"""
    out_dir: str = "runs"
    """directory under which the run directory `run_name` is created"""
    progress: bool = True
    """if toggled, print one line per learner chunk to stderr"""
    env_id: str = "CartPole-v1"
    """the id of the environment"""

    # Distribution
    num_actors: int = 2
    """number of Ape-X actors (Ray actors)"""
    replay_backend: str = "emu"
    """where the replay server keeps the priorities: `numpy`, `emu`, `rtl` or `board` (the replay core)"""
    board: str | None = None
    """the overlay's board for the replay server's core"""
    replay_address: str | None = None
    """host:port of an external replay server (e.g. on a PYNQ board); None: run it as a Ray actor"""
    replay_bind: str = "127.0.0.1"
    """interface the Ray-hosted replay server listens on (0.0.0.0 for actors on other nodes)"""
    checkpoint_dir: str | None = None
    """replay server write-ahead log + checkpoints (Ray-hosted server; None: `out_dir/run_name/replay`)"""
    checkpoint_every_s: float = 30.0
    """replay server checkpoint period"""
    queue_batches: int = 64
    """replay server insertion queue depth (back-pressure beyond it)"""
    ray_num_cpus: int = 4
    """logical CPUs of the local Ray instance started by `train` (actors ask for 1 each, the learner for 1)"""
    ray_address: str | None = None
    """an existing Ray cluster to join (None: start one locally)"""
    actor_max_restarts: int = 10
    """how often Ray restarts a dead actor (and the replay server actor, and the learner)"""

    # Actors
    epsilon_base: float = 0.4
    """Ape-X epsilon schedule base"""
    epsilon_alpha: float = 7.0
    """Ape-X epsilon schedule exponent spread"""
    n_step: int = 3
    """n of the n-step returns"""
    local_buffer_size: int = 50
    """transitions an actor collects before one push"""
    weight_sync_steps: int = 200
    """environment steps between an actor's weight pulls"""
    actor_chunk_steps: int = 500
    """environment steps per Ray task of an actor"""
    actor_max_sps: float = 200.0
    """throttle of each actor in environment steps per second (0: none; the machine here has 2 shared cores)"""

    # Learner
    total_timesteps: int = 0
    """unused by Ape-X (actors run until the learner stops); kept for CLI symmetry"""
    max_updates: int = 30_000
    """learner gradient steps at most"""
    max_seconds: float = 900.0
    """wall-clock budget of the run"""
    learning_starts: int = 1_000
    """transitions in the replay before the learner starts"""
    batch_size: int = 64
    """the batch size sampled from the replay server"""
    sample_prefetch: int = 0
    """batches the learner keeps in flight (`PrefetchingSampler`: drawn while it trains, one batch of priority
    staleness each); 0: sample synchronously"""
    learning_rate: float = 5e-4
    """the learning rate of the optimizer (annealed linearly to 10% over `max_updates`)"""
    gamma: float = 0.99
    """the discount factor gamma"""
    target_network_frequency: int = 250
    """learner updates between hard target-network copies"""
    publish_every: int = 50
    """learner updates between weight publications"""
    learner_chunk_updates: int = 200
    """updates per Ray task of the learner (the driver evaluates between chunks)"""
    max_grad_norm: float = 10.0
    """the maximum norm for the gradient clipping"""
    hidden_sizes: tuple[int, ...] = (128, 128)
    """widths of the Q-network's hidden ReLU layers"""
    per_alpha: float = 0.6
    """the priority exponent alpha"""
    per_beta: float = 0.4
    """the initial importance-sampling exponent, annealed to 1 over `max_updates`"""
    per_eps: float = 1e-3
    """added to |TD error| so that no transition gets priority 0"""
    buffer_size: int = 50_000
    """replay capacity (at most the replay core's K**LEVELS)"""
    torch_threads: int = 1
    """torch intra-op threads per process"""

    # Evaluation and stopping
    target_return: float = 450.0
    """stop once the mean of the last `eval_window` greedy evaluation episodes reaches this (inf: never)"""
    eval_window: int = 20
    """evaluation episodes averaged for `target_return`"""
    eval_episodes_per_chunk: int = 2
    """greedy evaluation episodes the driver runs after each learner chunk"""

    extra: dict = field(default_factory=dict)
    """free-form notes stored with the run"""


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

    def step(self, obs: np.ndarray, action: int, reward: float, next_obs: np.ndarray, terminated: bool,
             truncated: bool) -> list[tuple]:
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
            ret += (self.gamma ** j) * r
        obs, action, _ = self._window[0]
        discount = self.gamma ** len(self._window) if bootstrap else 0.0
        return obs, action, ret, next_obs, discount


def _td_errors(q_network: QNetwork, target_network: QNetwork, batch: dict[str, np.ndarray],
               double_q: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """``(delta, q(s, a))`` of a batch: Double DQN target with the batch's per-transition discounts."""
    observations, next_observations, actions, rewards, discounts = (
        torch.tensor(np.asarray(batch[name])) for name in  # copies: arrays decoded from messages are read-only
        ("observations", "next_observations", "actions", "rewards", "discounts"))
    with torch.no_grad():
        next_online = q_network(next_observations)
        next_actions = next_online.argmax(dim=1, keepdim=True)
        next_values = (target_network(next_observations) if double_q else next_online).gather(1, next_actions)
        targets = rewards + discounts * next_values.squeeze(1)
    q_values = q_network(observations).gather(1, actions.unsqueeze(1)).squeeze(1)
    return targets - q_values, q_values


def _weights_to_numpy(network: torch.nn.Module) -> dict[str, np.ndarray]:
    return {name: tensor.detach().cpu().numpy().copy() for name, tensor in network.state_dict().items()}


def _load_numpy_weights(network: torch.nn.Module, weights: dict[str, np.ndarray]) -> None:
    network.load_state_dict({name: torch.tensor(array) for name, array in weights.items()})


def _env_spaces(env_id: str) -> tuple[tuple[int, ...], int]:
    env = gym.make(env_id)
    try:
        if not isinstance(env.action_space, gym.spaces.Discrete):
            raise ValueError(f"Ape-X here needs a discrete action space; {env_id} has {env.action_space}")
        return tuple(env.observation_space.shape), int(env.action_space.n)
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

    def __init__(self, capacity: int, obs_shape: tuple[int, ...], backend: str, alpha: float, bind: str, port: int,
                 checkpoint_dir: str | None, checkpoint_every_s: float | None, queue_batches: int,
                 board: Any = None, seed: int | None = None) -> None:
        self.replay = ReplayServer(capacity, obs_shape, backend, alpha, queue_batches, checkpoint_dir,
                                   checkpoint_every_s if checkpoint_dir else None, board=board, seed=seed)
        self.server, self.port = serve(self.replay, f"{bind}:{port}")
        host = bind if bind not in ("0.0.0.0", "[::]") else ray.util.get_node_ip_address()
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

    def __init__(self, index: int, args: Args, address: str, parameter_server: Any) -> None:
        torch.set_num_threads(args.torch_threads)
        self.index, self.args = index, args
        self.epsilon = actor_epsilon(index, args.num_actors, args.epsilon_base, args.epsilon_alpha)
        self.incarnation = uuid.uuid4().hex[:8]
        seed = args.seed + 1000 * (index + 1) + int(self.incarnation, 16) % 997
        self.rng = np.random.default_rng(seed)
        torch.manual_seed(seed)
        self.env = gym.make(args.env_id)
        obs_shape, n_actions = _env_spaces(args.env_id)
        self.q_network = QNetwork(int(np.prod(obs_shape)), n_actions, args.hidden_sizes)
        self.parameter_server = parameter_server
        self.weight_version = -1
        self._pull_weights()
        self.client = ReplayClient(address, actor_id=f"actor{index}-{self.incarnation}")
        self.builder = NStepBuilder(args.n_step, args.gamma)
        self.local: list[tuple] = []
        self.obs, _ = self.env.reset(seed=seed)
        self.episode_return, self.episode_length = 0.0, 0
        self.steps = self.pushes = 0

    def _pull_weights(self) -> None:
        version, weights = ray.get(self.parameter_server.pull.remote(self.weight_version))
        if weights is not None:
            _load_numpy_weights(self.q_network, weights)
            self.weight_version = version

    def _flush(self) -> None:
        if not self.local:
            return
        obs, actions, rewards, next_obs, discounts = (np.asarray(column) for column in zip(*self.local))
        batch = {"observations": obs.astype(np.float32), "actions": actions.astype(np.int64),
                 "rewards": rewards.astype(np.float32), "next_observations": next_obs.astype(np.float32),
                 "discounts": discounts.astype(np.float32)}
        with torch.no_grad():  # the actor's own copy is both networks: Ape-X's initial priorities
            delta, _ = _td_errors(self.q_network, self.q_network, batch)
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
        period = 1.0 / self.args.actor_max_sps if self.args.actor_max_sps > 0 else 0.0
        next_time = time.monotonic()
        for _ in range(int(steps)):
            if self.rng.random() < self.epsilon:
                action = int(self.rng.integers(self.env.action_space.n))
            else:
                with torch.no_grad():
                    q = self.q_network(torch.as_tensor(np.asarray(self.obs, dtype=np.float32)).unsqueeze(0))
                action = int(q.argmax(dim=1).item())
            next_obs, reward, terminated, truncated, _ = self.env.step(action)
            self.local.extend(self.builder.step(np.asarray(self.obs, dtype=np.float32), action, float(reward),
                                                np.asarray(next_obs, dtype=np.float32), terminated, truncated))
            self.episode_return += float(reward)
            self.episode_length += 1
            self.steps += 1
            if terminated or truncated:
                episodes.append({"actor": self.index, "epsilon": self.epsilon, "return": self.episode_return,
                                 "length": self.episode_length, "weight_version": self.weight_version})
                self.episode_return, self.episode_length = 0.0, 0
                self.obs, _ = self.env.reset()
            else:
                self.obs = next_obs
            if len(self.local) >= self.args.local_buffer_size:
                self._flush()
            if self.steps % self.args.weight_sync_steps == 0:
                self._pull_weights()
            if period:
                next_time += period
                delay = next_time - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                else:
                    next_time = time.monotonic()
        return {"actor": self.index, "incarnation": self.incarnation, "pid": os.getpid(), "episodes": episodes,
                "steps": self.steps,
                "pushes": self.pushes, "epsilon": self.epsilon, "retries": self.client.retries}

    def pid(self) -> int:
        """The process id (tests kill it)."""
        return os.getpid()


class _Learner:
    """The Double-DQN learner: samples from the replay server, writes priorities back, publishes weights.

    After every chunk it leaves its training state (networks, optimizer, update count) with the parameter server; a
    learner that Ray restarts after a crash resumes from there, losing at most the chunk it was running (whose
    priority updates the replay server has kept). Use :data:`Learner`.
    """

    def __init__(self, args: Args, address: str, parameter_server: Any) -> None:
        torch.set_num_threads(args.torch_threads)
        random.seed(args.seed)
        np.random.seed(args.seed)
        torch.manual_seed(args.seed)
        self.args = args
        obs_shape, n_actions = _env_spaces(args.env_id)
        self.q_network = QNetwork(int(np.prod(obs_shape)), n_actions, args.hidden_sizes)
        self.target_network = QNetwork(int(np.prod(obs_shape)), n_actions, args.hidden_sizes)
        self.target_network.load_state_dict(self.q_network.state_dict())
        self.optimizer = optim.Adam(self.q_network.parameters(), lr=args.learning_rate)
        self.client = ReplayClient(address)
        self.sampler = PrefetchingSampler(self.client, args.batch_size, args.sample_prefetch) \
            if args.sample_prefetch else None
        self.parameter_server = parameter_server
        self.updates = 0
        saved = ray.get(parameter_server.learner_state.remote())
        self.resumed = saved is not None
        if saved is None:
            self.publish()
        else:
            self._load(saved)

    def _save(self) -> None:
        buffer = io.BytesIO()
        torch.save({"q_network": self.q_network.state_dict(), "target_network": self.target_network.state_dict(),
                    "optimizer": self.optimizer.state_dict(), "updates": self.updates}, buffer)
        ray.get(self.parameter_server.save_learner.remote(buffer.getvalue()))

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
        ray.get(self.parameter_server.publish.remote(self.updates, _weights_to_numpy(self.q_network)))
        return self.updates

    def train(self, updates: int) -> dict[str, Any]:
        """Run up to ``updates`` gradient steps (fewer if ``max_updates`` is reached); returns chunk statistics.

        Waits (up to 10 minutes) for ``learning_starts`` transitions in the replay first.
        """
        args = self.args
        if self.updates == 0:
            self.client.wait_ready(timeout_s=600.0, min_size=args.learning_starts)
        losses, q_means, stale = [], [], 0
        sample_s = update_s = 0.0
        start = time.perf_counter()
        done = 0
        for _ in range(int(updates)):
            if self.updates >= args.max_updates:
                break
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
            delta, q_values = _td_errors(self.q_network, self.target_network, batch)
            weights = torch.tensor(np.asarray(batch["weights"]))
            loss = (weights * F.smooth_l1_loss(delta, torch.zeros_like(delta), reduction="none")).mean()
            self.optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.q_network.parameters(), args.max_grad_norm)
            self.optimizer.step()
            t0 = time.perf_counter()
            result = self.client.update_priorities(batch["indices"], np.abs(delta.detach().numpy()) + args.per_eps,
                                                   batch["versions"])
            update_s += time.perf_counter() - t0
            stale += result["stale"]
            self.updates += 1
            done += 1
            losses.append(float(loss.item()))
            q_means.append(float(q_values.mean().item()))
            if self.updates % args.target_network_frequency == 0:
                self.target_network.load_state_dict(self.q_network.state_dict())
            if self.updates % args.publish_every == 0:
                self.publish()
        elapsed = time.perf_counter() - start
        self._save()
        return {"updates": self.updates, "chunk_updates": done, "pid": os.getpid(), "resumed": self.resumed,
                "losses/td_loss": float(np.mean(losses)) if losses else float("nan"),
                "losses/q_values": float(np.mean(q_means)) if q_means else float("nan"),
                "charts/updates_per_s": done / elapsed if elapsed > 0 else 0.0,
                "latency/sample_ms": 1e3 * sample_s / max(1, done), "latency/update_ms": 1e3 * update_s / max(1, done),
                "replay/stale_priorities": stale, "replay/client_retries": self.client.retries,
                "replay/prefetch_fallbacks": self.sampler.fallbacks if self.sampler else 0}


ParameterServer = ray.remote(num_cpus=0)(_ParameterServer)
"""Ray actor class of :class:`_ParameterServer`."""
ReplayServerActor = ray.remote(num_cpus=0)(_ReplayServerActor)
"""Ray actor class of :class:`_ReplayServerActor` (``.options(max_restarts=...)`` to have Ray restart it)."""
ApexActor = ray.remote(num_cpus=1)(_ApexActor)
"""Ray actor class of :class:`_ApexActor`."""
Learner = ray.remote(num_cpus=1)(_Learner)
"""Ray actor class of :class:`_Learner`."""


# ---------------------------------------------------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------------------------------------------------
def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (the replay server actor keeps it across restarts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host if host not in ("0.0.0.0", "[::]") else "", 0))
        return s.getsockname()[1]


def _check_args(args: Args) -> None:
    if args.num_actors < 1:
        raise ValueError(f"num_actors must be >= 1, not {args.num_actors!r}")
    if args.replay_address is None and args.replay_backend not in PRIORITY_BACKENDS:
        raise ValueError(f"replay_backend must be one of {PRIORITY_BACKENDS}, not {args.replay_backend!r}")
    if args.n_step < 1 or args.batch_size < 1 or args.learner_chunk_updates < 1 or args.actor_chunk_steps < 1:
        raise ValueError("n_step, batch_size, learner_chunk_updates and actor_chunk_steps must be >= 1")


class _Evaluator:
    """Greedy episodes with the latest published weights, in the driver process (between learner chunks)."""

    def __init__(self, args: Args, parameter_server: Any) -> None:
        obs_shape, n_actions = _env_spaces(args.env_id)
        self.q_network = QNetwork(int(np.prod(obs_shape)), n_actions, args.hidden_sizes)
        self.env = gym.make(args.env_id)
        self.parameter_server = parameter_server
        self.version = -1
        self.seed = args.seed + 10_000

    def episode(self) -> dict[str, Any]:
        """One greedy episode with the newest weights: ``{"return", "length", "weight_version"}``."""
        version, weights = ray.get(self.parameter_server.pull.remote(self.version))
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


def train(args: Args, on_progress: Any = None) -> dict[str, Any]:
    """Run Ape-X: start (or join) Ray, launch replay server, parameter server, learner and actors; train; clean up.

    Parameters
    ----------
    args : Args
        The configuration.
    on_progress : callable, optional
        Called as ``on_progress(driver_state)`` about once a second, with a dict holding the actor handles
        (``actors``), their last reported process ids (``actor_pids``), ``replay_actor``, ``learner``, ``updates``,
        ``elapsed_s``; tests use it to kill processes mid-run.

    Returns
    -------
    dict
        ``solved``, ``updates``, ``actor_steps``, ``wall_time_s``, ``eval_mean_return`` (last ``eval_window``),
        ``eval_returns``, ``actor_episodes``, ``actor_restarts`` (tasks lost to a dead actor), ``replay_stats`` and
        the run directory.

    Raises
    ------
    ValueError
        Bad arguments.
    """
    _check_args(args)
    torch.set_num_threads(args.torch_threads)
    run_name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
    run_dir = Path(args.out_dir) / run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "args.json").write_text(json.dumps(asdict(args), indent=2, default=str))
    obs_shape, _ = _env_spaces(args.env_id)

    started_ray = False
    if not ray.is_initialized():
        if args.ray_address:
            ray.init(address=args.ray_address, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(num_cpus=args.ray_num_cpus, include_dashboard=False, log_to_driver=False,
                     object_store_memory=100 * 1024 * 1024)
        started_ray = True
    handles: list[Any] = []
    start = time.perf_counter()
    try:
        replay_actor = None
        if args.replay_address is None:
            checkpoint_dir = args.checkpoint_dir or str(run_dir / "replay")
            replay_actor = ReplayServerActor.options(max_restarts=args.actor_max_restarts).remote(
                args.buffer_size, obs_shape, args.replay_backend, args.per_alpha, args.replay_bind,
                free_port(args.replay_bind), checkpoint_dir, args.checkpoint_every_s, args.queue_batches, args.board,
                args.seed)
            handles.append(replay_actor)
            address = ray.get(replay_actor.address.remote(), timeout=120)
        else:
            address = args.replay_address
        ReplayClient(address).wait_ready(timeout_s=120)
        parameter_server = ParameterServer.remote()
        handles.append(parameter_server)
        learner = Learner.options(max_restarts=args.actor_max_restarts, max_task_retries=0).remote(
            args, address, parameter_server)
        handles.append(learner)
        actors = [ApexActor.options(max_restarts=args.actor_max_restarts, max_task_retries=0).remote(
            i, args, address, parameter_server) for i in range(args.num_actors)]
        handles.extend(actors)
        evaluator = _Evaluator(args, parameter_server)

        pending = {actor.run.remote(args.actor_chunk_steps): ("actor", i) for i, actor in enumerate(actors)}
        pending[learner.train.remote(args.learner_chunk_updates)] = ("learner", 0)
        actor_episodes: list[dict] = []
        eval_returns: list[float] = []
        learner_rows: list[dict] = []
        actor_steps = collections.Counter()
        actor_pids: dict[int, int] = {}
        lost_tasks = lost_learner_chunks = 0
        learner_pid = None
        updates = 0
        solved = False
        stop_reason = "max_updates"
        while True:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            elapsed = time.perf_counter() - start
            for ref in ready:
                kind, i = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as error:
                    if kind == "learner":  # Ray restarts it; it resumes from its last chunk's state
                        lost_learner_chunks += 1
                        if lost_learner_chunks > args.actor_max_restarts:
                            raise RuntimeError(f"the learner died {lost_learner_chunks} times: {error}") from error
                        pending[learner.train.remote(args.learner_chunk_updates)] = ("learner", 0)
                        continue
                    lost_tasks += 1  # Ray restarts the actor; give the new incarnation its next chunk
                    pending[actors[i].run.remote(args.actor_chunk_steps)] = ("actor", i)
                    continue
                if kind == "actor":
                    actor_steps[(i, result["incarnation"])] = result["steps"]
                    actor_pids[i] = result["pid"]
                    actor_episodes.extend(dict(e, time_s=elapsed) for e in result["episodes"])
                    pending[actors[i].run.remote(args.actor_chunk_steps)] = ("actor", i)
                    continue
                updates, learner_pid = result["updates"], result["pid"]
                for _ in range(args.eval_episodes_per_chunk):
                    episode = evaluator.episode()
                    eval_returns.append(episode["return"])
                    actor_episodes.append(dict(episode, actor="eval", epsilon=0.0, time_s=elapsed))
                window = eval_returns[-args.eval_window:]
                result.update({"time_s": elapsed, "eval/mean_return": float(np.mean(window)),
                               "actor_steps": sum(actor_steps.values())})
                learner_rows.append(result)
                if args.progress:
                    print(f"[apex {elapsed:6.1f} s] updates {updates} ({result['charts/updates_per_s']:.0f}/s), "
                          f"actor steps {result['actor_steps']}, loss {result['losses/td_loss']:.3f}, "
                          f"eval mean return {result['eval/mean_return']:.1f} over {len(window)}", file=sys.stderr)
                if len(window) >= args.eval_window and np.mean(window) >= args.target_return:
                    solved, stop_reason = True, "target_return"
                elif updates >= args.max_updates:
                    stop_reason = "max_updates"
                elif elapsed >= args.max_seconds:
                    stop_reason = "max_seconds"
                else:
                    pending[learner.train.remote(args.learner_chunk_updates)] = ("learner", 0)
            if on_progress is not None:
                on_progress({"actors": actors, "actor_pids": dict(actor_pids), "replay_actor": replay_actor,
                             "learner": learner, "learner_pid": learner_pid, "updates": updates,
                             "elapsed_s": elapsed})
            if not any(kind == "learner" for kind, _ in pending.values()):
                break
        wall_time = time.perf_counter() - start
        replay_stats = ReplayClient(address).stats(retry_s=10.0)
    finally:
        for handle in handles:
            try:
                ray.kill(handle, no_restart=True)
            except Exception:  # already gone
                pass
        if started_ray:
            ray.shutdown()

    window = eval_returns[-args.eval_window:]
    summary = {"solved": solved, "stop_reason": stop_reason, "updates": updates,
               "actor_steps": int(sum(actor_steps.values())), "wall_time_s": wall_time,
               "eval_mean_return": float(np.mean(window)) if window else float("nan"),
               "eval_episodes": len(eval_returns), "eval_returns": eval_returns,
               "actor_episodes": sum(1 for e in actor_episodes if e["actor"] != "eval"),
               "actor_restarts": lost_tasks, "learner_restarts": lost_learner_chunks,
               "actor_incarnations": len(actor_steps), "replay_address": address,
               "replay_backend": args.replay_backend if args.replay_address is None else "external",
               "replay_stats": replay_stats, "run_dir": str(run_dir)}
    _write_csv(run_dir / "learner.csv", learner_rows)
    _write_csv(run_dir / "episodes.csv", actor_episodes)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def _write_csv(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    names = sorted({key for row in rows for key in row})
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=names)
        writer.writeheader()
        writer.writerows(rows)
