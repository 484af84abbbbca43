"""The Ape-X replay server: gRPC round trips, back-pressure, malformed requests, de-duplication, concurrent clients
and the prefetching sampler (its restarts from checkpoint and log: ``test_replay_restart.py``).

No Ray here: the server is in-process (``serve``) or a ``python -m ...service`` subprocess that the tests SIGKILL.
"""

import re
import signal
import threading
import time

import grpc
import numpy as np
import pytest

from pynq_rl.host.agents.distributed import codec
from pynq_rl.host.agents.distributed import replay_pb2 as pb
from pynq_rl.host.agents.distributed import replay_pb2_grpc as pb_grpc
from pynq_rl.host.agents.distributed.client import NotReady, ReplayClient, ReplayUnavailable
from pynq_rl.host.agents.distributed.server import Backpressure, ReplayServer
from pynq_rl.host.agents.distributed.service import serve
from pynq_rl.host.agents.replay.buffer import NumpySumTree
from tests.agents.distributed.replay_testing import (
    OBS,
    check_rows,
    free_port,
    make_batch,
    push_request,
    start_service,
)


@pytest.fixture(params=["emu", "host"])
def served(request):
    """An in-process replay server (capacity 256) on a free loopback port, and a client."""
    replay = ReplayServer(256, OBS, request.param, seed=3)
    server, port = serve(replay, "127.0.0.1:0")
    client = ReplayClient(f"127.0.0.1:{port}", actor=True, retry_s=5.0)
    yield replay, client, port
    client.close()
    server.stop(0).wait()
    replay.close()


def test_grpc_round_trip(served):
    replay, client, _ = served
    with pytest.raises(NotReady, match="nothing to sample: 0 transitions"):
        client.sample(8, 0.4)
    for k in range(4):
        ack = client.push(make_batch(50 * k, 50), np.full(50, 1.0))
        assert ack == {"accepted": 50, "duplicate": False, "log_sequence": k + 1, "queued": ack["queued"]}
    replay.flush()
    stats = client.stats()
    assert stats["size"] == 200 and stats["pushed_transitions"] == 200 and stats["inserted_transitions"] == 200
    batch = client.sample(64, 0.4)
    assert batch["indices"].shape == (64,) and batch["weights"].dtype == np.float32
    check_rows(batch)
    np.testing.assert_array_equal(batch["rewards"].astype(np.int64), batch["indices"])  # slot i holds transition i
    # priorities steer sampling: only slot 7 keeps a nonzero priority
    result = client.update_priorities(
        np.arange(200), np.where(np.arange(200) == 7, 2.0, 0.0), np.ones(200, dtype=np.uint64)
    )
    assert result == {"updated": 200, "stale": 0}
    again = client.sample(16, 1.0)
    assert set(again["indices"].tolist()) == {7}
    np.testing.assert_allclose(again["weights"], 1.0)


def test_ring_wraps_and_stale_updates_are_dropped(served):
    replay, client, _ = served
    client.push(make_batch(0, 200), np.ones(200))
    replay.flush()
    sampled = client.sample(32, 0.4)
    client.push(make_batch(200, 100), np.ones(100))  # overwrites slots 200..255 and 0..43
    replay.flush()
    assert client.stats()["size"] == 256
    result = client.update_priorities(sampled["indices"], np.full(32, 5.0), sampled["versions"])
    overwritten = int(np.sum(sampled["indices"] < 44))
    assert result == {"updated": 32 - overwritten, "stale": overwritten}
    check_rows(client.sample(128, 0.4))


def test_duplicate_push_is_acknowledged_not_stored(served):
    replay, _, _ = served
    batch, priorities, actor = make_batch(0, 10), np.ones(10), replay.open_session()
    first = replay.push(batch, priorities, actor_id=actor, sequence=1)
    retry = replay.push(batch, priorities, actor_id=actor, sequence=1)
    replay.push(make_batch(10, 10), priorities, actor_id=actor, sequence=2)
    replay.flush()
    assert first["duplicate"] is False and retry["duplicate"] is True and retry["accepted"] == 0
    assert replay.size() == 20 and replay.stats()["push_duplicates"] == 1


class HeldTree(NumpySumTree):
    """A priority backend whose insertions, once ``hold`` is set, wait for ``release`` (a core that is busy for as
    long as the test says); ``entered`` is set when the adding thread is inside one."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity, seed=0)
        self.hold = False
        self.entered = threading.Event()
        self.release = threading.Event()

    def update(self, indices, priorities) -> None:
        if self.hold:
            self.entered.set()
            self.release.wait()
        super().update(indices, priorities)


def _wait_until(condition, timeout_s: float = 30.0) -> bool:
    """Poll ``condition`` every 5 ms until it holds (True) or ``timeout_s`` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _release_when(tree: HeldTree, condition) -> threading.Thread:
    """A thread that releases ``tree``'s held insertions once ``condition`` holds (or after :func:`_wait_until`'s
    timeout, so that a failing test ends)."""

    def watch() -> None:
        _wait_until(condition)
        tree.release.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def test_backpressure_bounded_queue_and_pushes_do_not_wait_for_insertion():
    """The adding thread is held inside an insertion (a busy core) for the whole burst: a batch stays queued until it is
    inserted, so with a queue of two the batch being inserted and one more are accepted and the next three pushes are
    refused, each at once."""
    tree = HeldTree(1024)
    replay = ReplayServer(1024, OBS, tree, queue_batches=2)
    server, port = serve(replay, "127.0.0.1:0", push_timeout_s=0.0)
    watchdog = threading.Timer(30.0, tree.release.set)  # a push that waited for the insertion would return only now
    try:
        replay.push(make_batch(0, 8), np.ones(8))
        replay.flush()
        tree.hold = True
        watchdog.start()
        replay.push(make_batch(8, 8), np.ones(8), timeout_s=0.0)
        assert tree.entered.wait(10.0), "the adding thread never took the batch"
        accepted, refused = [1], 0
        for k in range(2, 6):
            try:
                replay.push(make_batch(8 * k, 8), np.ones(8), timeout_s=0.0)
                accepted.append(k)
            except Backpressure as error:
                assert re.match(r"^replay (insertion queue full \(2 batches\)|server busy)", str(error))
                refused += 1
        assert not tree.release.is_set(), "a push waited for the held insertion (released by the watchdog)"
        assert accepted == [1, 2] and refused == 3
        assert replay.stats()["queued_batches"] == 2
        # over gRPC the refusal is RESOURCE_EXHAUSTED, retried by the client until its budget runs out
        client = ReplayClient(f"127.0.0.1:{port}", retry_s=0.05)
        with pytest.raises(ReplayUnavailable, match="RESOURCE_EXHAUSTED: replay insertion queue full"):
            client.push(make_batch(100, 8), np.ones(8))
        # a patient client gets through once the queue drains: back-pressure slows it down, nothing is lost
        patient = ReplayClient(f"127.0.0.1:{port}", retry_s=30.0)
        refused = replay.stats()["push_rejected"]
        watcher = _release_when(tree, lambda: replay.stats()["push_rejected"] > refused)  # the patient's first try
        assert patient.push(make_batch(200, 8), np.ones(8))["accepted"] == 8
        watcher.join()
        replay.flush(timeout_s=10)
        assert replay.size() == 8 * (2 + len(accepted))
        assert patient.retries > 0
        client.close()
        patient.close()
    finally:
        watchdog.cancel()
        tree.release.set()
        server.stop(0).wait()
        replay.close()


def test_an_actor_opening_its_session_during_a_long_checkpoint_waits_it_out(tmp_path):
    """A checkpoint holds the push lock while it drains the queue and writes its file (on a loaded CI machine once
    longer than a call's deadline, and an Ape-X actor's first push died on it): issuing an id waits a bounded time
    and answers "busy", and the actor's client retries until the checkpoint is done instead of failing the run. The
    insertions are held until the actor's client has retried, so the checkpoint lasts exactly that long."""
    tree = HeldTree(1024)
    replay = ReplayServer(1024, OBS, tree, checkpoint_dir=tmp_path)
    server, port = serve(replay, "127.0.0.1:0", push_timeout_s=0.1)
    actor = ReplayClient(f"127.0.0.1:{port}", actor=True, timeout_s=0.3, retry_s=20.0)
    try:
        replay.push(make_batch(0, 8), np.ones(8))
        replay.flush()
        tree.hold = True
        for k in range(1, 3):  # queued behind the held insertion, which the checkpoint waits for
            replay.push(make_batch(8 * k, 8), np.ones(8))
        assert tree.entered.wait(10.0), "the adding thread never took a batch"
        checkpoint = threading.Thread(target=replay.checkpoint)
        checkpoint.start()
        assert _wait_until(replay._push_lock.locked), "the checkpoint never took the push lock"
        busy = r"^replay server busy \(checkpointing or 64 batches queued\) for 0.1 s: no actor id issued$"
        with pytest.raises(Backpressure, match=busy):
            replay.open_session(timeout_s=0.1)
        watcher = _release_when(tree, lambda: actor.retries > 0)
        assert actor.push(make_batch(100, 8), np.ones(8))["accepted"] == 8
        watcher.join()
        assert actor.retries > 0  # it waited the checkpoint out
        checkpoint.join(timeout=20)
        assert replay.stats()["checkpoints"] == 1
        replay.flush(timeout_s=10)
        assert replay.size() == 32
    finally:
        tree.release.set()
        actor.close()
        server.stop(0).wait()
        replay.close()


def _raw_stub(port: int):
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    return channel, pb_grpc.ReplayStub(channel)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (
            lambda r: setattr(r.transitions.observations, "dtype", "object"),
            r"^transitions\.observations: dtype must be one of .*, not 'object'$",
        ),
        (
            lambda r: setattr(r.transitions.rewards, "data", r.transitions.rewards.data[:-3]),
            r"^transitions\.rewards: 37 bytes of data do not hold a float32 array of shape \(10,\) \(40 bytes\)$",
        ),
        (lambda r: r.transitions.ClearField("discounts"), r"^transitions\.discounts is missing$"),
        (lambda r: r.ClearField("priorities"), r"^priorities is missing$"),
        (
            lambda r: codec.to_tensor(np.zeros((10, 5), np.float32), r.transitions.observations),
            r"^transitions\.observations must have shape \(n, 4\), not \(10, 5\)$",
        ),
        (
            lambda r: codec.to_tensor(np.zeros(9, np.int64), r.transitions.actions),
            r"^transitions\.actions must have shape \(10,\), not \(9,\)$",
        ),
        (lambda r: codec.to_tensor(np.full(10, np.nan), r.priorities), r"^priorities must be finite and >= 0$"),
        (lambda r: codec.to_tensor(-np.ones(10), r.priorities), r"^priorities must be finite and >= 0$"),
        (
            lambda r: codec.to_tensor(np.full(10, 1.5, np.float32), r.transitions.discounts),
            r"^transitions\.discounts must lie in \[0, 1\]",
        ),
        (
            lambda r: codec.to_tensor(np.zeros(10, np.float32), r.transitions.actions),
            r"^transitions\.actions must be integers, not dtype float32$",
        ),
    ],
)
def test_malformed_push_is_rejected_with_a_clear_message(served, mutate, message):
    replay, _, port = served
    request = push_request(make_batch(0, 10), np.ones(10))
    mutate(request)
    channel, stub = _raw_stub(port)
    with pytest.raises(grpc.RpcError) as info:
        stub.Push(request, timeout=5)
    channel.close()
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert re.match(message, info.value.details()), info.value.details()
    assert replay.stats()["log_sequence"] == 0  # nothing was logged or queued


def test_malformed_sample_and_update_are_rejected(served):
    replay, client, port = served
    client.push(make_batch(0, 20), np.ones(20))
    replay.flush()
    with pytest.raises(ValueError, match=r"refused Sample: batch_size must be an integer >= 1, not 0$"):
        client.sample(0, 0.4)
    with pytest.raises(ValueError, match=r"refused Sample: beta must be a number in \[0, 1\], not 2\.0$"):
        client.sample(4, 2.0)
    with pytest.raises(
        ValueError,
        match=r"refused UpdatePriorities: indices\[1\] = 20 holds no transition "
        r"\(stored: 20\)$",
    ):
        client.update_priorities(np.array([1, 20]), np.ones(2))
    with pytest.raises(ValueError, match=r"priorities must have the shape of indices \(2,\), not \(3,\)$"):
        client.update_priorities(np.array([1, 2]), np.ones(3))
    channel, stub = _raw_stub(port)
    request = pb.UpdateRequest()
    codec.to_tensor(np.array([1.0, 2.0]), request.indices)
    codec.to_tensor(np.ones(2), request.priorities)
    with pytest.raises(grpc.RpcError) as info:
        stub.UpdatePriorities(request, timeout=5)
    channel.close()
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details() == "indices must be a 1-D integer array, not float64 of shape (2,)"


def test_concurrent_pushes_and_samples_stay_consistent(served):
    replay, client, port = served
    client.push(make_batch(0, 64), np.ones(64))
    replay.flush()
    errors = []

    def pusher(offset):
        try:
            c = ReplayClient(f"127.0.0.1:{port}", actor=True)
            for k in range(10):
                c.push(make_batch(64 + offset * 10 * 8 + 8 * k, 8), np.ones(8))
            c.close()
        except Exception as error:  # noqa: BLE001 - a thread's failure is reported by the test below
            errors.append(error)

    threads = [threading.Thread(target=pusher, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for _ in range(30):
        check_rows(client.sample(32, 0.4))
    for t in threads:
        t.join()
    replay.flush()
    assert not errors and replay.size() == 256


def test_prefetching_sampler_hands_out_batches_requested_one_call_earlier(served):
    replay, client, _ = served
    from pynq_rl.host.agents.distributed.client import PrefetchingSampler

    sampler = PrefetchingSampler(client, 16, depth=2)
    with pytest.raises(NotReady):
        sampler.sample(0.4)  # nothing stored: the server's FAILED_PRECONDITION, not a hang
    client.push(make_batch(0, 100), np.ones(100))
    replay.flush()
    calls = replay.stats().get("sample_calls", 0)
    for _ in range(5):
        batch = sampler.sample(0.4)
        assert len(batch["indices"]) == 16 and batch["weights"].dtype == np.float32
        check_rows(batch)
        assert client.update_priorities(batch["indices"], np.full(16, 2.0), batch["versions"])["stale"] == 0
    deadline = time.monotonic() + 5.0  # 5 handed out + 2 still in flight, all drawn by the server
    while replay.stats()["sample_calls"] < calls + 7 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert replay.stats()["sample_calls"] == calls + 7
    sampler.cancel()
    with pytest.raises(ValueError, match="depth"):
        PrefetchingSampler(client, 16, depth=0)


class SlowSampleTree(NumpySumTree):
    """A priority backend whose samples after the first wait for ``release`` (requests stay in flight until the
    test says so, however loaded the machine)."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self.release = threading.Event()
        self.calls = 0

    def sample(self, n, beta):
        self.calls += 1
        if self.calls > 1:
            self.release.wait(timeout=60)
        return super().sample(n, beta)


class StarvedSampleTree(NumpySumTree):
    """A priority backend whose first sample once ``hold`` is set waits for ``release``: a replay server starved past
    its client's deadline, for as long as the test says (not for a time: the test holds on any machine)."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity, seed=0)
        self.hold = False
        self.release = threading.Event()

    def sample(self, n, beta):
        if self.hold:
            self.hold = False
            self.release.wait(timeout=60)
        return super().sample(n, beta)


def test_a_sample_that_outlives_its_deadline_is_asked_again():
    """A learner whose Sample missed its deadline (a CI run of Ape-X on an overloaded machine failed this way, the
    prefetched sample and its fallback both starved) asks again instead of ending the run: a sample stores nothing,
    so the lost reply is only a batch the learner never sees."""
    tree = StarvedSampleTree(64)
    replay = ReplayServer(64, OBS, tree)
    server, port = serve(replay, "127.0.0.1:0")
    client = ReplayClient(f"127.0.0.1:{port}", timeout_s=0.5, retry_s=60.0)
    try:
        client.push(make_batch(0, 64), np.ones(64))
        replay.flush()
        tree.hold = True
        watcher = _release_when(tree, lambda: client.retries > 0)  # released once the client has asked again
        check_rows(client.sample(8, 0.4))
        watcher.join()
        assert client.retries >= 1 and not tree.hold
    finally:
        tree.release.set()
        client.close()
        server.stop(0).wait()
        replay.close()


def test_prefetching_sampler_survives_its_client_reopening_the_channel():
    """A client that lost its server reopens its channel, cancelling the sampler's requests in flight: the sampler
    serves the next batch through the client instead of failing."""
    from pynq_rl.host.agents.distributed.client import PrefetchingSampler

    tree = SlowSampleTree(64)
    replay = ReplayServer(64, OBS, tree)
    server, port = serve(replay, "127.0.0.1:0")
    client = ReplayClient(f"127.0.0.1:{port}", retry_s=5.0)
    try:
        client.push(make_batch(0, 64), np.ones(64))
        replay.flush()
        sampler = PrefetchingSampler(client, 8, depth=1)
        check_rows(sampler.sample(0.4))  # and the next one requested: in flight until released
        client._connect()  # what a call failing with UNAVAILABLE does
        tree.release.set()
        check_rows(sampler.sample(0.4))
        assert sampler.fallbacks == 1
        sampler.cancel()
    finally:
        client.close()
        server.stop(0).wait()
        replay.close()


def test_prefetching_sampler_survives_a_server_restart(tmp_path):
    """A batch in flight when the server dies: the sampler falls back to the client's retrying sample."""
    from pynq_rl.host.agents.distributed.client import PrefetchingSampler

    port = free_port()
    process = start_service(port, directory=tmp_path)
    try:
        client = ReplayClient(f"127.0.0.1:{port}", actor=True, retry_s=30.0)
        client.push(make_batch(0, 64), np.ones(64))
        client.wait_ready(timeout_s=30, min_size=64)
        sampler = PrefetchingSampler(client, 8)
        check_rows(sampler.sample(0.4))  # and one more requested
        time.sleep(0.5)  # ... and answered
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        check_rows(sampler.sample(0.4))  # the batch already received; the next request fails: no server
        process = start_service(port, directory=tmp_path)  # restored from its log
        batch = sampler.sample(0.4)  # the failed request falls back to the client's retrying sample
        check_rows(batch)
        assert len(batch["indices"]) == 8 and sampler.fallbacks == 1
        check_rows(sampler.sample(0.4))
        sampler.cancel()
    finally:
        process.kill()
        process.wait()
