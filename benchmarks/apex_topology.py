"""Ape-X data path on emulated hosts: actors, replay node and learner in separate network namespaces, LAN and WAN.

Each actor, the replay node (the board with the replay core; for the baseline the Redis server sits there, as in
the in-network experience-sampling paper) and the learner is a network namespace; veth pairs join every actor and
the learner to the replay node, rate-limited by ``tc tbf``, with a one-way delay of 1 ms or more added by a TCP
relay in the learner's namespace (this kernel has no ``netem``: :mod:`_netns`). Profiles:

* ``LAN``: every link 10 Gbit/s, 50 us one way (the 50 us are not added: below what the relay itself costs);
* ``WAN``: the actors' links as LAN, the replay node <-> learner link 100 Mbit/s, 10 ms one way (actors at the
  edge next to the replay node, the learner in the cloud).

Layouts (same actors, same pushes, same learner loop):

* ``in-network``: the replay server (:mod:`pynq_rl.host.agents.distributed.service`, replay core on ``emu``) runs on
  the replay node; actors push to it; the learner samples over its link and sends priorities back, so only sampled
  batches (and priorities) cross the learner's link;
* ``in-network+prefetch``: the same with one batch in flight (:class:`~pynq_rl.host.agents.distributed.client.
  PrefetchingSampler`);
* ``redis``: ``redis-server`` runs on the replay node; actors ``RPUSH``; the learner keeps the prioritized replay
  itself (:class:`~pynq_rl.host.agents.distributed.redis_baseline.RedisLearnerReplay`, the same storage and
  replay core on ``emu``): before each sample it pulls everything queued, so every transition crosses its link.

Payloads: ``cartpole`` (4 float32 per observation), ``atari`` (4x84x84 uint8 frame stacks, stored and shipped as
uint8) and ``atari-zlib`` (the same frames compressed once, by the actor, in both layouts: each transition's
observation and next observation as one zlib stream at level 6, ``codec.pack_batch``; the replay server
(``--obs-dtype zlib``) and the Redis learner's replay store the rows as they came, and the learner decompresses only
the batch it samples). The frames are synthetic Breakout-like screens (walls, brick rows with random gaps, paddle and
ball; four consecutive frames per stack), so that they compress like game screens rather than noise; the measured
compression ratio is in the results.

Each actor pushes ``--push-batch`` transitions ``--push-hz`` times a second (a fixed offered load). The learner
loops sample -> a modelled gradient step (``--step-ms`` of sleep: the paper's learner trains on a GPU, and this
2-core machine's CPU is needed for the data path) -> update priorities, for ``--duration-s`` after a warm-up.
Measured per cell: learner sample latency (p50, p99, count), actor push latency (p50, p99 over all pushes in the
learner's window), the bytes that crossed the learner's link (the kernel's rx+tx counters of the learner's veth,
read before and after the window) per learner update, and learner updates/s.

Needs root, iproute2 and ``redis-server``; refuses with one line otherwise. Cleanup (namespaces, processes) runs
in ``finally`` blocks, at exit, and as a sweep of namespaces left by dead runs.

Run::

    python benchmarks/apex_topology.py --out benchmarks/results          # the table (about 20 minutes here)
    python benchmarks/apex_topology.py --layouts in-network in-network+prefetch redis   # with the prefetching learner
    python benchmarks/apex_topology.py --actors 1 --profiles WAN --payloads atari --duration-s 2   # one smoke cell
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _netns
from _apex_topology_report import to_markdown

LAYOUTS = ("in-network", "in-network+prefetch", "redis")
PAYLOADS = ("cartpole", "atari", "atari-zlib")
OBS = {"cartpole": ((4,), "float32"), "atari": ((4, 84, 84), "uint8"), "atari-zlib": ((4, 84, 84), "zlib")}
"""per payload: observation shape and how the replay stores it (``zlib``: the actors' packed rows)"""
SERVER_PORT, REDIS_PORT = 50051, 6379


# ---------------------------------------------------------------------------------------------------------------------
# Payloads
# ---------------------------------------------------------------------------------------------------------------------
def atari_frames(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` synthetic Breakout-like transitions: observations and next observations, ``(n, 4, 84, 84)`` uint8.

    Each stack holds four consecutive screens of a ball moving over a playfield with walls, six brick rows with
    random gaps and a paddle, drawn at twice the resolution and averaged down 2x2 (as the 210x160 -> 84x84 resize of
    real Atari preprocessing blends edges into intermediate grays); the next observation is the stack shifted by one
    screen (as frame stacking does).
    """
    big = np.zeros((n, 5, 168, 168), dtype=np.uint16)
    big[:, :, 17:21, 7:161] = 142  # top wall
    big[:, :, 17:168, 7:11] = 142  # side walls
    big[:, :, 17:168, 157:161] = 142
    shades = np.array([200, 180, 160, 140, 120, 100])
    for i in range(n):
        bricks = rng.random((6, 18)) > 0.3  # which bricks are still there
        for row in range(6):
            for col in np.flatnonzero(bricks[row]):
                big[i, :, 37 + 6 * row : 42 + 6 * row, 11 + 8 * col : 18 + 8 * col] = shades[row]
        paddle = int(rng.integers(12, 140))
        big[i, :, 157:160, paddle : paddle + 15] = 180
        y, x = int(rng.integers(81, 140)), int(rng.integers(21, 140))
        dy, dx = int(rng.choice([-5, 5])), int(rng.choice([-3, 3]))
        for t in range(5):
            big[i, t, y + t * dy : y + t * dy + 3, x + t * dx : x + t * dx + 2] = 236
    frames = big.reshape(n, 5, 84, 2, 84, 2).mean(axis=(3, 5)).round().astype(np.uint8)
    return np.ascontiguousarray(frames[:, :4]), np.ascontiguousarray(frames[:, 1:])


def make_batch(payload: str, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """A batch of ``n`` transitions of ``payload`` with the replay service's field names."""
    if payload == "cartpole":
        obs, next_obs = (rng.standard_normal((n, 4)).astype(np.float32) for _ in range(2))
    else:
        obs, next_obs = atari_frames(rng, n)
    return {
        "observations": obs,
        "actions": rng.integers(0, 4, n).astype(np.int64),
        "rewards": rng.random(n).astype(np.float32),
        "next_observations": next_obs,
        "discounts": np.full(n, 0.99**3, dtype=np.float32),
    }


def compression_ratio(rng: np.random.Generator, n: int = 50) -> float:
    """Serialized size of one pushed Atari batch, raw / packed (:func:`codec.pack_batch`: what ``atari-zlib``
    saves)."""
    from pynq_rl.host.agents.distributed import codec
    from pynq_rl.host.agents.distributed import replay_pb2 as pb

    batch = make_batch("atari", rng, n)
    raw, packed = pb.Transitions(), pb.Transitions()
    codec.encode_transitions(batch, raw)
    codec.encode_transitions(codec.pack_batch(batch), packed)
    return raw.ByteSize() / packed.ByteSize()


# ---------------------------------------------------------------------------------------------------------------------
# Roles (each runs inside its namespace: python apex_topology.py --role actor|learner --config JSON)
# ---------------------------------------------------------------------------------------------------------------------
def _wait_redis(host: str, timeout_s: float = 30.0):
    import redis

    client = redis.Redis(host=host, port=REDIS_PORT)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.ping()
            return client
        except redis.exceptions.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def role_actor(config: dict) -> None:
    """Push at a fixed rate until SIGTERM; then write ``[(monotonic time, latency s), ...]`` to ``config["out"]``."""
    from pynq_rl.host.agents.distributed import codec
    from pynq_rl.host.agents.distributed.client import ReplayClient
    from pynq_rl.host.agents.distributed.pacing import FixedRate
    from pynq_rl.host.agents.distributed.redis_baseline import RedisActorPusher

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    rng = np.random.default_rng(1000 + config["index"])
    pool = [make_batch(config["payload"], rng, config["push_batch"]) for _ in range(4)]  # generated up front
    compressed = config["payload"].endswith("zlib")
    if config["layout"] == "redis":
        _wait_redis(config["host"]).close()
        pusher = RedisActorPusher(config["host"], REDIS_PORT, compress=compressed)
    else:
        pusher = ReplayClient(
            f"{config['host']}:{SERVER_PORT}",
            actor=True,
            pack_frames=codec.FRAME_LEVEL if compressed else None,
        )
    records, pace, k = [], FixedRate(config["push_hz"]), 0
    while not stop:
        batch = pool[k % len(pool)]
        k += 1
        priorities = rng.random(len(batch["actions"])) + 0.01
        t0 = time.perf_counter()
        pusher.push(batch, priorities)
        records.append((time.monotonic(), time.perf_counter() - t0))
        pace.wait()
    pusher.close()
    Path(config["out"]).write_text(json.dumps(records))


def _link_bytes(ifname: str) -> int:
    root = Path(f"/sys/class/net/{ifname}/statistics")
    return int((root / "rx_bytes").read_text()) + int((root / "tx_bytes").read_text())


def role_learner(config: dict) -> None:
    """Wait for data, warm up, then sample -> step -> update for ``duration_s``; print one JSON line of results."""
    from pynq_rl.host.agents.distributed.client import NotReady, PrefetchingSampler, ReplayClient, ReplayUnavailable
    from pynq_rl.host.agents.distributed.redis_baseline import RedisLearnerReplay
    from pynq_rl.host.agents.distributed.server import EmptyReplayError

    layout, payload, batch_size = config["layout"], config["payload"], config["batch"]
    obs_shape, obs_dtype = OBS[payload]
    compressed = payload.endswith("zlib")
    rng = np.random.default_rng(config["seed"])
    if layout == "redis":
        _wait_redis(config["host"]).close()
        replay = RedisLearnerReplay(
            config["host"],
            REDIS_PORT,
            config["capacity"],
            obs_shape,
            "emu",
            seed=1,
            obs_dtype=obs_dtype,
            compressed=compressed,
        )
        sample, update, close = replay.sample, replay.update_priorities, replay.close
    else:
        client = ReplayClient(f"{config['host']}:{SERVER_PORT}", timeout_s=60.0)
        if layout == "in-network+prefetch":
            sampler = PrefetchingSampler(client, batch_size)

            def sample(n, beta):
                return sampler.sample(beta)

            def close():
                sampler.cancel()
                client.close()
        else:
            sample, close = client.sample, client.close
        update = client.update_priorities
    deadline = time.monotonic() + 60
    while True:  # until the replay holds something
        try:
            sample(batch_size, 0.4)
            break
        except (NotReady, EmptyReplayError, ReplayUnavailable):  # nothing stored yet, or a server still starting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)

    def one_update():
        t0 = time.perf_counter()
        batch = sample(batch_size, 0.4)
        t1 = time.perf_counter()
        time.sleep(config["step_ms"] / 1e3)  # the modelled gradient step
        update(batch["indices"], rng.random(len(batch["indices"])) + 0.01, batch["versions"])
        return t1 - t0

    warm_end = time.monotonic() + config["warmup_s"]
    while time.monotonic() < warm_end:
        one_update()
    ifname, sample_s = config["ifname"], []
    bytes0, start = _link_bytes(ifname), time.monotonic()
    end = start + config["duration_s"]
    while time.monotonic() < end:
        sample_s.append(one_update())
    stop = time.monotonic()
    link_bytes = _link_bytes(ifname) - bytes0
    close()
    print(json.dumps({"window": [start, stop], "sample_s": sample_s, "link_bytes": link_bytes}), flush=True)


# ---------------------------------------------------------------------------------------------------------------------
# Runner (root namespace)
# ---------------------------------------------------------------------------------------------------------------------
def _script_command(role: str, config: dict) -> list[str]:
    return [
        "nice",
        "-n",
        "5",
        sys.executable,
        str(Path(__file__).resolve()),
        "--role",
        role,
        "--config",
        json.dumps(config),
    ]


def _start_replay_node(topology: _netns.Topology, layout: str, payload: str, capacity: int) -> subprocess.Popen:
    """The server of ``layout`` on the replay node, listening on every link; returns once it accepts requests."""
    if layout == "redis":
        process = subprocess.Popen(
            topology.command(
                topology.replay,
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(REDIS_PORT),
                "--bind",
                "0.0.0.0",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "no",
                "--loglevel",
                "warning",
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return process  # clients wait until it answers PING
    obs_shape, obs_dtype = OBS[payload]
    argv = [
        sys.executable,
        "-m",
        "pynq_rl.host.agents.distributed.service",
        "--address",
        f"0.0.0.0:{SERVER_PORT}",
        "--backend",
        "emu",
        "--capacity",
        str(capacity),
        "--obs-shape",
        *map(str, obs_shape),
        "--obs-dtype",
        obs_dtype,
        "--seed",
        "1",
    ]
    process = subprocess.Popen(
        topology.command(topology.replay, *argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    line = process.stdout.readline()
    if not line.startswith("listening"):
        process.kill()
        raise RuntimeError(f"replay server did not start on the replay node: {line!r}")
    return process


def _stop(process: subprocess.Popen, timeout_s: float = 20.0) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout_s)


def _quantiles(values_ms: list[float]) -> dict[str, float]:
    if not values_ms:
        return {"p50": float("nan"), "p99": float("nan"), "n": 0}
    return {"p50": float(np.percentile(values_ms, 50)), "p99": float(np.percentile(values_ms, 99)), "n": len(values_ms)}


def run_cell(topology: _netns.Topology, profile: str, layout: str, payload: str, args: argparse.Namespace) -> dict:
    """One layout with one payload on a built topology; returns its measurements."""
    capacity = args.capacity if payload == "cartpole" else args.frame_capacity
    processes, actor_outs = [], []
    with tempfile.TemporaryDirectory(prefix="apex_topology_") as tmp:
        server = _start_replay_node(topology, layout, payload, capacity)
        try:
            for k, namespace in enumerate(topology.actors):
                out = Path(tmp) / f"actor{k}.json"
                actor_outs.append(out)
                config = {
                    "index": k,
                    "layout": layout,
                    "payload": payload,
                    "host": topology.replay_address(k),
                    "push_batch": args.push_batch,
                    "push_hz": args.push_hz,
                    "out": str(out),
                }
                processes.append(
                    subprocess.Popen(
                        topology.command(namespace, *_script_command("actor", config)),
                        stderr=subprocess.PIPE,
                        text=True,
                    )
                )
            learner_host = topology.learner_replay_address()
            if topology.learner_link.relayed:  # the link's one-way delay, in the learner's namespace
                port = REDIS_PORT if layout == "redis" else SERVER_PORT
                relay = subprocess.Popen(
                    topology.command(
                        topology.learner,
                        sys.executable,
                        _netns.__file__,
                        "--relay",
                        str(port),
                        f"{learner_host}:{port}",
                        str(topology.learner_link.delay_s),
                    ),
                    stdout=subprocess.PIPE,
                    text=True,
                )
                processes.append(relay)
                if relay.stdout.readline().strip() != "relaying":
                    raise RuntimeError("the delay relay did not start")
                learner_host = "127.0.0.1"
            config = {
                "layout": layout,
                "payload": payload,
                "host": learner_host,
                "batch": args.batch,
                "capacity": capacity,
                "step_ms": args.step_ms,
                "seed": args.seed,
                "warmup_s": args.warmup_s,
                "duration_s": args.duration_s,
                "ifname": topology.learner_ifname,
            }
            learner = subprocess.run(
                topology.command(topology.learner, *_script_command("learner", config)),
                capture_output=True,
                text=True,
                timeout=args.duration_s + args.warmup_s + 180,
            )
            if learner.returncode != 0:
                raise RuntimeError(f"learner failed ({learner.returncode}): {learner.stderr.strip()[-2000:]}")
            result = json.loads(learner.stdout.strip().splitlines()[-1])
        finally:
            for process in processes:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            for process in processes:
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
            _stop(server)
        failed = [p.stderr.read()[-1000:] for p in processes if p.returncode != 0 and p.stderr is not None]
        if failed:
            raise RuntimeError(f"{len(failed)} actor(s) failed: {failed[0]}")
        start, stop = result["window"]
        pushes_ms = [
            1e3 * latency for out in actor_outs for t, latency in json.loads(out.read_text()) if start <= t <= stop
        ]
    duration = stop - start
    updates = len(result["sample_s"])
    sample = _quantiles([1e3 * s for s in result["sample_s"]])
    push = _quantiles(pushes_ms)
    return {
        "profile": profile,
        "layout": layout,
        "payload": payload,
        "actors": topology.n_actors,
        "sample_p50[ms]": sample["p50"],
        "sample_p99[ms]": sample["p99"],
        "samples": sample["n"],
        "push_p50[ms]": push["p50"],
        "push_p99[ms]": push["p99"],
        "pushes": push["n"],
        "link_bytes": int(result["link_bytes"]),
        "bytes_per_update": result["link_bytes"] / max(1, updates),
        "updates": updates,
        "updates_per_s": updates / duration,
        "window[s]": duration,
    }


def _git(*cmd: str) -> str:
    from pynq_rl.overlay.build.provenance import git

    return git(*cmd) or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--role", choices=("actor", "learner"), default=None, help=argparse.SUPPRESS)
    parser.add_argument("--config", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4, 8], help="actor counts")
    parser.add_argument("--profiles", nargs="+", choices=tuple(_netns.PROFILES), default=list(_netns.PROFILES))
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=["in-network", "redis"])
    parser.add_argument("--payloads", nargs="+", choices=PAYLOADS, default=list(PAYLOADS))
    parser.add_argument("--push-batch", type=int, default=50, help="transitions per push (Ape-X's local buffer)")
    parser.add_argument("--push-hz", type=float, default=2.0, help="pushes per second per actor")
    parser.add_argument("--batch", type=int, default=32, help="learner sample batch")
    parser.add_argument("--step-ms", type=float, default=50.0, help="modelled learner gradient step")
    parser.add_argument("--capacity", type=int, default=50_000, help="replay slots, CartPole")
    parser.add_argument("--frame-capacity", type=int, default=4096, help="replay slots, Atari (56 KB each)")
    parser.add_argument("--warmup-s", type=float, default=1.0, help="unmeasured learner time per cell")
    parser.add_argument("--duration-s", type=float, default=3.0, help="measured learner time per cell")
    parser.add_argument("--seed", type=int, default=0, help="seed of the learner's simulated TD errors")
    parser.add_argument("--out", default=None, help="directory for apex_topology.json/.md (default: print only)")
    parser.add_argument("--render", default=None, help="only re-render the .md next to this apex_topology.json")
    args = parser.parse_args(argv)
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        markdown = to_markdown(saved["results"], saved["meta"])
        Path(args.render).with_suffix(".md").write_text(markdown)
        print(markdown)
        return 0
    if args.role is not None:
        (role_actor if args.role == "actor" else role_learner)(json.loads(args.config))
        return 0
    reason = _netns.check_host() or (
        None
        if shutil.which("redis-server")
        else "the Redis baseline needs redis-server (Debian: apt-get install redis-server)"
    )
    if reason is not None:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    results = []
    for profile in args.profiles:
        links = _netns.PROFILES[profile]
        for n in args.actors:
            with _netns.Topology(n, links["actors"], links["learner"]) as topology:
                for payload in args.payloads:
                    for layout in args.layouts:
                        row = run_cell(topology, profile, layout, payload, args)
                        print(json.dumps(row), flush=True)
                        results.append(row)
    meta = {
        "commit": _git("rev-parse", "--short", "HEAD"),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "profiles": {
            name: {
                end: f"{link.rate} (tbf), {link.delay} one way" + (" (delay relay)" if link.relayed else " (not added)")
                for end, link in links.items()
            }
            for name, links in _netns.PROFILES.items()
        },
        "push_batch": args.push_batch,
        "push_hz": args.push_hz,
        "batch": args.batch,
        "step_ms": args.step_ms,
        "warmup_s": args.warmup_s,
        "duration_s": args.duration_s,
        "atari_zlib_ratio": compression_ratio(np.random.default_rng(0)),
        "load_average": os.getloadavg(),
    }
    markdown = to_markdown(results, meta)
    print(markdown)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "apex_topology.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2))
        (out / "apex_topology.md").write_text(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
