"""Actor sessions nobody can exhaust: unused ids expire, each peer holds a few and opens them at a bounded rate, a
checkpoint keeps only the live ones, and the table's size is an option whose refusal says how to raise it.

Timing is a fake clock (no sleeps); the one gRPC flood runs on loopback.
"""

import grpc
import numpy as np
import pytest

from pynq_rl.host.agents.common import checkpoints
from pynq_rl.host.agents.distributed import replay_pb2 as pb
from pynq_rl.host.agents.distributed import replay_pb2_grpc as pb_grpc
from pynq_rl.host.agents.distributed import service
from pynq_rl.host.agents.distributed.actors import ActorSequences, ActorTableFull, SessionRateLimited, UnknownActor
from pynq_rl.host.agents.distributed.client import ReplayClient
from pynq_rl.host.agents.distributed.recovery import CHECKPOINT_AGENT
from pynq_rl.host.agents.distributed.server import ReplayServer
from pynq_rl.host.agents.distributed.service import main, peer_host, serve
from tests.agents.distributed.replay_testing import OBS, make_batch


class FakeClock:
    """A monotonic clock that moves only when a test sets :attr:`now`."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _known(table: ActorSequences, actor_id: str) -> bool:
    """Whether a first push under ``actor_id`` would pass the identity check."""
    try:
        table.is_duplicate(actor_id, 1)
    except UnknownActor:
        return False
    return True


# -- lifetime ----------------------------------------------------------------------------------------------------------
def test_an_unused_id_expires_after_session_ttl_and_a_live_one_never_does():
    clock = FakeClock()
    table = ActorSequences(window=8, session_ttl_s=10.0, clock=clock)
    unused, live = table.issue(), table.issue()
    table.acknowledge(live, 1)
    clock.now = 9.999
    assert table.is_duplicate(unused, 1) is False  # still inside its lifetime (the check itself uses nothing up)
    clock.now = 10.0
    with pytest.raises(UnknownActor, match=r"or unused for session_ttl_s = 10 s\): open a session"):
        table.is_duplicate(unused, 1)
    clock.now = 1e6
    assert table.is_duplicate(live, 1) is True and table.is_duplicate(live, 2) is False
    stats = table.stats()
    assert (stats["sessions_expired"], stats["sessions_live"], stats["sessions_unused"]) == (1, 1, 0)


def test_expired_ids_are_dropped_at_the_next_issue_not_evicted():
    clock = FakeClock()
    table = ActorSequences(window=8, max_actors=4, session_ttl_s=10.0, clock=clock)
    for second in range(4):
        clock.now = float(second)
        table.issue()
    clock.now = 11.5  # the ids issued at 0 s and 1 s are 10 s old or more
    table.issue()
    assert len(table) == 3
    stats = table.stats()
    assert (stats["sessions_expired"], stats["sessions_evicted"], stats["sessions_unused"]) == (2, 0, 3)


# -- per peer: a cap on unused ids, and a rate -------------------------------------------------------------------------
def test_a_peer_over_its_cap_evicts_only_its_own_oldest_unused_ids():
    table = ActorSequences(window=8, max_unused_per_peer=3, sessions_per_s=None)
    bystander = table.issue("ipv4:10.0.0.2")
    flood = [table.issue("ipv4:10.0.0.1") for _ in range(50)]
    assert _known(table, bystander)
    assert [_known(table, actor_id) for actor_id in flood] == [False] * 47 + [True] * 3
    stats = table.stats()
    assert (stats["sessions_evicted"], stats["sessions_unused"]) == (47, 4)


def test_a_full_table_reclaims_the_oldest_unused_id_and_refuses_only_when_every_id_is_live():
    table = ActorSequences(window=8, max_actors=4, sessions_per_s=None)
    live = table.issue("ipv4:10.0.0.1")
    table.acknowledge(live, 1)
    unused = [table.issue(f"ipv4:10.0.0.{host}") for host in (2, 3, 4)]
    newest = table.issue("ipv4:10.0.0.5")  # the table was full: the oldest unused id made room
    assert [_known(table, actor_id) for actor_id in [live, *unused, newest]] == [True, False, True, True, True]
    for actor_id in [*unused[1:], newest]:
        table.acknowledge(actor_id, 1)
    with pytest.raises(ActorTableFull, match=r"holds 4 live sessions .*max_actors = 4: restart it with a larger "):
        table.issue("ipv4:10.0.0.6")
    stats = table.stats()
    assert (stats["sessions_evicted"], stats["sessions_refused"], stats["sessions_live"]) == (1, 1, 4)


def test_sessions_are_rate_limited_per_peer_with_a_retry_hint():
    clock = FakeClock()
    table = ActorSequences(window=8, sessions_per_s=2.0, session_burst=3, clock=clock)
    for _ in range(3):
        table.issue("ipv4:10.0.0.1")
    limited = r"^ipv4:10\.0\.0\.1 opens actor sessions faster than sessions_per_s = 2 .* retry in 0\.500 s$"
    with pytest.raises(SessionRateLimited, match=limited):
        table.issue("ipv4:10.0.0.1")
    clock.now = 0.25
    with pytest.raises(SessionRateLimited) as refusal:
        table.issue("ipv4:10.0.0.1")
    assert refusal.value.retry_after_s == pytest.approx(0.25)
    table.issue("ipv4:10.0.0.2")  # another peer has a bucket of its own
    clock.now = 0.5
    table.issue("ipv4:10.0.0.1")  # one token back after 1 / sessions_per_s
    assert table.stats()["sessions_refused"] == 2


def test_rate_buckets_of_peers_gone_quiet_are_forgotten():
    """Many peers (an IPv6 prefix's addresses) cost memory only while their buckets refill, burst / rate seconds."""
    clock = FakeClock()
    table = ActorSequences(window=8, sessions_per_s=2.0, session_burst=3, clock=clock)
    for host in range(100):
        table.issue(f"ipv6:[2001:db8::{host:x}]")
    assert len(table._rate) == 100
    clock.now = 1.5  # every bucket is full again
    table.issue("ipv4:10.0.0.1")
    assert len(table._rate) == 1


@pytest.mark.parametrize(
    "peer, host",
    [
        ("ipv4:127.0.0.1:5555", "ipv4:127.0.0.1"),
        ("ipv6:[::1]:5555", "ipv6:[::1]"),
        ("ipv6:%5B2001:db8::7%5D:40001", "ipv6:%5B2001:db8::7%5D"),
        ("unix:/tmp/replay.sock", "unix:/tmp/replay.sock"),
    ],
)
def test_a_peer_is_its_host_without_the_port(peer, host):
    assert peer_host(peer) == host


def test_a_flood_of_open_sessions_over_grpc_leaves_room_for_another_actor():
    """500 ``OpenSession`` calls from one client into a 32-id table: the rate limit refuses most, the per-peer cap
    churns the rest among the flood's own ids, and a new actor (from the same host, even) still pushes."""
    replay = ReplayServer(256, OBS, "host", max_actors=32, max_unused_per_peer=8)
    server, port = serve(replay, "127.0.0.1:0", token="")
    try:
        local = [replay.open_session() for _ in range(2)]  # Python API callers are another peer than the flood
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stub, issued, refusals = pb_grpc.ReplayStub(channel), 0, []
        for _ in range(500):
            try:
                stub.OpenSession(pb.OpenSessionRequest(), timeout=5)
                issued += 1
            except grpc.RpcError as error:
                refusals.append((error.code(), error.details()))
        channel.close()
        assert issued >= 64  # the burst, whatever the timing
        assert {code for code, _ in refusals} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
        assert "opens actor sessions faster than sessions_per_s = 10" in refusals[-1][1]
        stats = replay.stats()
        assert (stats["sessions_evicted"], stats["sessions_unused"]) == (issued - 8, 8 + 2)
        assert stats["sessions_refused"] == 500 - issued
        with ReplayClient(f"127.0.0.1:{port}", actor=True, retry_s=10.0) as actor:
            ack = actor.push(make_batch(0, 4), np.ones(4))  # waits out the flood's spent bucket if it must
        assert ack["accepted"] == 4 and not ack["duplicate"]
        for k, actor_id in enumerate(local):
            assert replay.push(make_batch(4 + 4 * k, 4), np.ones(4), actor_id=actor_id, sequence=1)["accepted"] == 4
        stats = replay.stats()
        assert (stats["sessions_live"], stats["sessions_unused"], stats["sessions_evicted"]) == (3, 7, issued - 7)
    finally:
        server.stop(0).wait()
        replay.close()


# -- checkpoints and the table's size ----------------------------------------------------------------------------------
def test_a_checkpoint_keeps_only_the_live_sessions(tmp_path):
    """A table full of unused ids is checkpointed as its live ones: after the restart they still catch retries, the
    unused ones are unknown (their actors open new sessions), and there is room for new actors."""
    options = {"checkpoint_dir": tmp_path, "max_actors": 32, "max_unused_per_peer": 32}
    replay = ReplayServer(64, OBS, "host", **options)
    ids = [replay.open_session() for _ in range(32)]
    live, unused = ids[:3], ids[3:]
    for k, actor_id in enumerate(live):
        replay.push(make_batch(4 * k, 4), np.ones(4), actor_id=actor_id, sequence=1)
    replay.checkpoint()
    replay.close()
    assert checkpoints.load_checkpoint(tmp_path / "replay.ckpt", CHECKPOINT_AGENT)["actor_ids"] == sorted(live)
    again = ReplayServer(64, OBS, "host", **options)
    try:
        assert (again.stats()["sessions_live"], again.stats()["sessions_unused"]) == (3, 0)
        for k, actor_id in enumerate(live):
            assert again.push(make_batch(4 * k, 4), np.ones(4), actor_id=actor_id, sequence=1)["duplicate"]
        for actor_id in unused[:5]:
            with pytest.raises(UnknownActor):
                again.push(make_batch(40, 4), np.ones(4), actor_id=actor_id, sequence=1)
        new = [again.open_session() for _ in range(29)]  # the whole table but the live three
        assert again.push(make_batch(40, 4), np.ones(4), actor_id=new[-1], sequence=1)["accepted"] == 4
        assert again.stats()["sessions_evicted"] == 0
    finally:
        again.close()


def test_unused_ids_an_older_checkpoint_kept_are_dropped_on_restore():
    table = ActorSequences(window=8)
    unused, live = "a" * 32, "b" * 32
    table.restore([(unused, 0), (live, 5)])
    assert table.live_items() == [(live, 5)]
    assert not _known(table, unused) and table.is_duplicate(live, 5)


def test_a_table_full_of_live_sessions_says_to_restart_with_a_larger_max_actors(tmp_path):
    replay = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path, max_actors=2)
    live = [replay.open_session() for _ in range(2)]
    for k, actor_id in enumerate(live):
        replay.push(make_batch(4 * k, 4), np.ones(4), actor_id=actor_id, sequence=1)
    with pytest.raises(ActorTableFull) as refusal:
        replay.open_session()
    assert str(refusal.value).endswith(
        "restart it with a larger --max-actors (ReplayServer max_actors=); its checkpoint and log keep the 2 live "
        "sessions"
    )
    assert replay.stats()["sessions_refused"] == 1
    replay.close(checkpoint=True)
    again = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path, max_actors=3)  # as the message says
    try:
        newcomer = again.open_session()
        assert again.push(make_batch(8, 4), np.ones(4), actor_id=newcomer, sequence=1)["accepted"] == 4
        assert again.push(make_batch(0, 4), np.ones(4), actor_id=live[0], sequence=1)["duplicate"]
    finally:
        again.close()


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("--max-actors", "0", "max_actors must be an integer >= 1, not 0"),
        ("--max-actors", "-5", "max_actors must be an integer >= 1, not -5"),
        ("--session-ttl-s", "0", "session_ttl_s must be a finite number > 0, not 0.0"),
        ("--session-ttl-s", "inf", "session_ttl_s must be a finite number > 0, not inf"),
        ("--max-unused-per-peer", "0", "max_unused_per_peer must be an integer >= 1, not 0"),
        ("--sessions-per-s", "-1", "sessions_per_s must be a finite number > 0, not -1.0"),
        ("--session-burst", "0", "session_burst must be an integer >= 1, not 0"),
    ],
)
def test_a_bad_session_option_is_one_error_line(capsys, option, value, message):
    assert main([option, value, "--backend", "host", "--capacity", "8"]) == 1
    assert capsys.readouterr().err == f"error: {message}\n"


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], {"max_actors": 65536, "session_ttl_s": 300.0, "max_unused_per_peer": 64, "sessions_per_s": 10.0}),
        (
            ["--max-actors", "7", "--session-ttl-s", "30", "--max-unused-per-peer", "4", "--sessions-per-s", "2.5"],
            {"max_actors": 7, "session_ttl_s": 30.0, "max_unused_per_peer": 4, "sessions_per_s": 2.5},
        ),
        (["--session-burst", "5"], {"session_burst": 5}),
    ],
)
def test_session_options_reach_the_server(monkeypatch, argv, expected):
    seen = {}

    def fake_serve(replay, address, workers, tls=None, compression=None):
        seen.update(replay.stats())
        replay.close()
        raise KeyboardInterrupt  # stop main() once the server is built

    monkeypatch.setattr(service, "serve", fake_serve)
    with pytest.raises(KeyboardInterrupt):
        main([*argv, "--backend", "host", "--capacity", "8"])
    assert {name: seen[name] for name in expected} == expected
