"""Atari-sized experiences on the replay service (uint8 frames, gRPC gzip/deflate), the emulated-host links
(tbf rate, delay relay, namespaces and their cleanup) and a smoke cell of ``benchmarks/apex_topology.py``.

The namespace tests need root and iproute2 and skip elsewhere; the Redis ones need ``redis-server``.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from pynq_rl.host.agents.distributed import codec
from pynq_rl.host.agents.distributed.client import ReplayClient
from pynq_rl.host.agents.distributed.redis_baseline import RedisActorPusher, RedisLearnerReplay, start_redis
from pynq_rl.host.agents.distributed.server import ReplayServer
from pynq_rl.host.agents.distributed.service import serve
from tests.agents.distributed.replay_testing import free_port

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
import _netns
import apex_topology

SCRIPT = ROOT / "benchmarks" / "apex_topology.py"
needs_netns = pytest.mark.skipif(_netns.check_host() is not None, reason=str(_netns.check_host()))
needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server")


def frame_batch(start: int, n: int) -> dict:
    """n Atari-shaped transitions; transition i's frames are filled with (i mod 251) and its reward is i."""
    ids = np.arange(start, start + n)
    frames = (ids % 251).astype(np.uint8)[:, None, None, None] * np.ones((1, 4, 84, 84), np.uint8)
    return {
        "observations": frames,
        "next_observations": frames[:, ::-1] // 2,
        "actions": (ids % 4).astype(np.int64),
        "rewards": ids.astype(np.float32),
        "discounts": np.full(n, 0.97, np.float32),
    }


def check_frames(batch: dict) -> None:
    """Every sampled row carries the frames its reward names, as uint8."""
    assert batch["observations"].dtype == np.uint8 and batch["next_observations"].dtype == np.uint8
    ids = batch["rewards"].astype(np.int64)
    expected = frame_batch(0, int(ids.max()) + 1)
    for name in codec.TRANSITION_FIELDS:
        np.testing.assert_array_equal(batch[name], expected[name][ids], err_msg=name)


@pytest.mark.parametrize("compression", [None, "gzip", "deflate"])
def test_uint8_frames_round_trip_over_grpc(compression):
    replay = ReplayServer(512, (4, 84, 84), "emu", seed=3, obs_dtype="uint8")
    server, port = serve(replay, "127.0.0.1:0", compression=compression)
    try:
        client = ReplayClient(f"127.0.0.1:{port}", actor=True, compression=compression)
        client.push(frame_batch(0, 40), np.linspace(0.1, 2.0, 40))
        replay.flush()
        check_frames(client.sample(16))
        assert replay.observations.dtype == np.uint8 and replay.stats()["obs_dtype"] == "uint8"
        with pytest.raises(
            ValueError,
            match=r"transitions\.observations must be uint8 frames on this server, "
            r"not dtype float32$",
        ):
            client.push(
                {**frame_batch(40, 2), "observations": frame_batch(40, 2)["observations"].astype(np.float32)},
                np.ones(2),
            )
        client.close()
    finally:
        server.stop(0).wait()
        replay.close()


def test_a_frame_server_fits_four_times_the_rows_of_float32_in_a_reply():
    assert codec.max_sample_rows((4, 84, 84), 1) > 3.9 * codec.max_sample_rows((4, 84, 84))
    assert ReplayServer(8, (4, 84, 84), "host", obs_dtype="uint8").max_sample == 8
    with pytest.raises(ValueError, match=r"^obs_dtype must be one of \('float32', 'uint8', 'zlib'\), not 'int16'$"):
        ReplayServer(8, (4,), "host", obs_dtype="int16")
    with pytest.raises(ValueError, match=r"^compression must be None or one of \('gzip', 'deflate'\), not 'lz4'$"):
        ReplayClient("127.0.0.1:1", compression="lz4")


def test_frame_checkpoint_restores_and_refuses_another_obs_dtype(tmp_path):
    replay = ReplayServer(64, (4, 84, 84), "host", seed=1, obs_dtype="uint8", checkpoint_dir=tmp_path)
    replay.push(frame_batch(0, 20), np.ones(20), actor_id=replay.open_session(), sequence=1)
    replay.checkpoint()
    replay.close()
    restored = ReplayServer(64, (4, 84, 84), "host", seed=1, obs_dtype="uint8", checkpoint_dir=tmp_path)
    assert restored.restored["checkpoint"] and restored.size() == 20
    check_frames(restored.sample(8))
    restored.close()
    with pytest.raises(
        ValueError,
        match=r"obs_dtype\) = \(64, \(4, 84, 84\), 'uint8'\), this server is "
        r"\(64, \(4, 84, 84\), 'float32'\)$",
    ):
        ReplayServer(64, (4, 84, 84), "host", checkpoint_dir=tmp_path)


@needs_redis
def test_redis_baseline_with_compressed_frames():
    port = free_port()
    with start_redis(port):
        pusher = RedisActorPusher("127.0.0.1", port, compress=True)
        learner = RedisLearnerReplay(
            "127.0.0.1", port, 256, (4, 84, 84), "emu", seed=2, obs_dtype="uint8", compressed=True
        )
        pusher.push(frame_batch(0, 30), np.ones(30))
        blob = learner.redis.lindex(learner.key, 0)
        assert len(blob) < 2 * 4 * 84 * 84 * 30 / 20  # packed rows shrink these frames more than 20x
        check_frames(learner.sample(12))
        assert learner.replay.size() == 30 and learner.replay.obs_dtype == "zlib"  # kept packed until sampled
        pusher.close()
        learner.close()


def test_synthetic_atari_frames_are_stacked_and_compress_like_screens():
    obs, next_obs = apex_topology.atari_frames(np.random.default_rng(0), 3)
    assert obs.shape == next_obs.shape == (3, 4, 84, 84) and obs.dtype == np.uint8
    np.testing.assert_array_equal(obs[:, 1:], next_obs[:, :3])  # frame stacking: shifted by one screen
    assert len(np.unique(obs)) > 10  # blended edges, not a handful of flat colours
    ratio = apex_topology.compression_ratio(np.random.default_rng(0))
    assert 20 < ratio < 300  # packed game screens (5 per transition) shrink well; noise would not, flat frames more
    noise = {**apex_topology.make_batch("atari", np.random.default_rng(0), 4)}
    noise["observations"] = np.random.default_rng(1).integers(0, 256, noise["observations"].shape, dtype=np.uint8)
    assert len(b"".join(codec.pack_batch(noise)["frames"])) > 4 * 4 * 84 * 84  # 16 noise screens do not shrink


def test_link_arguments():
    assert _netns.WAN.tbf()[:3] == ["tbf", "rate", "100mbit"] and _netns.WAN.delay_s == pytest.approx(0.01)
    assert int(_netns.LAN.tbf()[4]) == int(10e9 / 8 * 2e-3)  # 2 ms of burst at 10 Gbit/s
    assert _netns.WAN.relayed and not _netns.LAN.relayed
    with pytest.raises(ValueError, match=r"^rate must end in gbit, mbit, kbit or bit, not '10GB'$"):
        _netns.rate_bits("10GB")


def test_delay_relay_adds_the_delay_each_way_and_keeps_the_bytes():
    """An echo server behind a 30 ms relay: every round trip takes >= 60 ms, and 1 MB comes back intact."""
    echo = socket.socket()
    echo.bind(("127.0.0.1", 0))
    echo.listen()

    def serve_echo():
        conn, _ = echo.accept()
        with conn:
            while data := conn.recv(1 << 16):
                conn.sendall(data)

    threading.Thread(target=serve_echo, daemon=True).start()
    port = free_port()
    relay = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "_netns.py"),
            "--relay",
            str(port),
            f"127.0.0.1:{echo.getsockname()[1]}",
            "0.03",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert relay.stdout.readline().strip() == "relaying"
        with socket.create_connection(("127.0.0.1", port)) as conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for _ in range(3):
                start = time.perf_counter()
                conn.sendall(b"x")
                assert conn.recv(1) == b"x"
                assert 0.06 <= time.perf_counter() - start < 0.5
            payload = np.random.default_rng(0).bytes(1 << 20)
            conn.sendall(payload)
            received = b""
            while len(received) < len(payload):
                received += conn.recv(1 << 16)
            assert received == payload
    finally:
        relay.kill()
        relay.wait()
        echo.close()


ECHO_SERVER = """
import socket
s = socket.create_server(("0.0.0.0", 7777))
print("listening", flush=True)
conn, _ = s.accept()
conn.sendall(conn.recv(16))
"""
CONNECT = """
import socket, sys
with socket.create_connection((sys.argv[1], 7777), timeout=3) as c:
    c.sendall(b"ping")
    print(c.recv(16).decode())
"""


@needs_netns
def test_topology_builds_links_and_cleans_up():
    stale = f"{_netns.PREFIX}999999999-test"  # no such process: a namespace left by a dead run
    subprocess.run(["ip", "netns", "add", stale], check=True)
    with _netns.Topology(2, _netns.LAN, _netns.WAN) as topology:
        names = set(_netns._namespaces())
        assert stale not in names  # swept on entry
        assert {topology.replay, topology.learner, *topology.actors} <= names
        # the learner reaches the replay node over its link (a TCP echo), and its tbf qdisc is there
        echo = subprocess.Popen(
            topology.command(topology.replay, sys.executable, "-c", ECHO_SERVER), stdout=subprocess.PIPE, text=True
        )
        try:
            assert echo.stdout.readline().strip() == "listening"
            out = subprocess.run(
                topology.command(topology.learner, sys.executable, "-c", CONNECT, topology.learner_replay_address()),
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert out.returncode == 0 and out.stdout.strip() == "ping", out.stderr
        finally:
            echo.kill()
            echo.wait()
        qdisc = subprocess.run(
            topology.command(topology.learner, "tc", "qdisc", "show", "dev", topology.learner_ifname),
            capture_output=True,
            text=True,
        ).stdout
        assert "tbf" in qdisc and "100Mbit" in qdisc
        counters = topology.interface_bytes(topology.learner, topology.learner_ifname)
        assert counters["rx_bytes"] > 0 and counters["tx_bytes"] > 0  # the echo crossed it
        # an actor is linked to the replay node only: the learner's address is unreachable from it
        out = subprocess.run(
            topology.command(topology.actors[0], sys.executable, "-c", CONNECT, "10.77.2.2"),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert out.returncode != 0 and "unreachable" in out.stderr
    assert not {topology.replay, topology.learner, *topology.actors} & set(_netns._namespaces())


@needs_netns
@needs_redis
def test_benchmark_smoke_cell_counts_the_learner_link_bytes(tmp_path):
    """One actor, WAN, raw Atari frames, in-network: the bytes on the learner's link per update are at least the
    sampled frames, and a sample takes at least their transfer time at 100 Mbit/s plus the 20 ms round trip."""
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--actors",
            "1",
            "--profiles",
            "WAN",
            "--payloads",
            "atari",
            "--layouts",
            "in-network",
            "--warmup-s",
            "0.5",
            "--duration-s",
            "1.5",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = json.loads((tmp_path / "apex_topology.json").read_text())["results"][0]
    frames_bytes = 32 * 2 * 4 * 84 * 84
    assert frames_bytes < row["bytes_per_update"] < 1.3 * frames_bytes
    assert row["sample_p50[ms]"] >= 1e3 * (frames_bytes * 8 / 100e6 + 0.02) * 0.95
    assert row["updates"] >= 3 and row["pushes"] >= 1
    assert "| WAN | atari | 1 | in-network |" in (tmp_path / "apex_topology.md").read_text()
    left = [
        n
        for n in _netns._namespaces()
        if n.startswith(_netns.PREFIX) and not _netns._alive(int(n[len(_netns.PREFIX) :].split("-")[0]))
    ]
    assert not left  # the finished run deleted its namespaces


def test_benchmark_refuses_without_root_with_one_line(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert _netns.check_host() == (
        "emulated hosts need root (ip netns, tc): run as root or skip the topology benchmark"
    )
    with pytest.raises(PermissionError, match="need root"):
        _netns.Topology(1)


def test_fixed_rate_sleeps_to_the_next_tick_and_rebases_when_late(monkeypatch):
    from pynq_rl.host.agents.distributed import pacing

    now, slept = [100.0], []
    monkeypatch.setattr(pacing.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(pacing.time, "sleep", lambda s: (slept.append(s), now.__setitem__(0, now[0] + s)))
    pace = pacing.FixedRate(4.0)  # ticks at 100.25, 100.5, ...
    now[0] += 0.05
    pace.wait()
    assert slept == [pytest.approx(0.2)]
    now[0] += 1.0  # an iteration 1 s late: no burst through the missed ticks
    pace.wait()
    assert len(slept) == 1
    pace.wait()  # the schedule restarted at "now"
    assert slept[-1] == pytest.approx(0.25)
    unpaced = pacing.FixedRate(0.0)
    unpaced.wait()
    assert len(slept) == 2
