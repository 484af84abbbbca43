"""The replay server against a hostile network: loopback by default, token authentication, TLS, bounded actor
sequences (no dedup poisoning), request limits checked before any work, and clients that resume quickly after a
restart.
"""

import os
import shutil
import signal
import subprocess
import threading
import time

import grpc
import numpy as np
import pytest

from pynq_rl.host.agents.distributed import codec
from pynq_rl.host.agents.distributed import replay_pb2 as pb
from pynq_rl.host.agents.distributed import replay_pb2_grpc as pb_grpc
from pynq_rl.host.agents.distributed.client import ReplayClient, ReplayUnavailable
from pynq_rl.host.agents.distributed.server import ReplayServer
from pynq_rl.host.agents.distributed.service import DEFAULT_ADDRESS, main, serve
from tests.agents.distributed.replay_testing import OBS, check_rows, free_port, make_batch, push_request, start_service


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} give them) of the sockets listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.split(":")
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.append(address)
    return found


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="needs Linux /proc/net/tcp")
def test_default_address_is_loopback_only():
    assert DEFAULT_ADDRESS == "127.0.0.1:50051"
    port = int(DEFAULT_ADDRESS.rsplit(":", 1)[1])
    if _listening(port):
        pytest.skip(f"port {port} is taken here")
    replay = ReplayServer(16, OBS, "host")
    server, bound = serve(replay)
    try:
        assert bound == port
        loopback = {"0100007F", "0000000000000000FFFF00000100007F"}  # 127.0.0.1, as IPv4 or v4-mapped IPv6
        found = _listening(port)
        assert found and set(found) <= loopback, found  # nothing on 0.0.0.0 or [::]
    finally:
        server.stop(0).wait()
        replay.close()


def test_command_line_listens_on_loopback_unless_told(monkeypatch, capsys):
    """main() without --address binds 127.0.0.1; the help says what 0.0.0.0 means."""
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "0.0.0.0:PORT exposes the server" in " ".join(capsys.readouterr().out.split())
    started = {}

    def fake_serve(replay, address, workers, tls=None, compression=None):
        started.update(address=address, tls=tls)
        raise KeyboardInterrupt  # stop main() right after it chose the address

    monkeypatch.setattr("pynq_rl.host.agents.distributed.service.serve", fake_serve)
    with pytest.raises(KeyboardInterrupt):
        main(["--backend", "host", "--capacity", "8"])
    assert started == {"address": "127.0.0.1:50051", "tls": None}
    with pytest.raises(SystemExit):
        main(["--tls-cert", "c.pem"])
    assert "--tls-cert and --tls-key go together" in capsys.readouterr().err


@pytest.fixture
def token_served():
    replay = ReplayServer(64, OBS, "host", seed=0)
    server, port = serve(replay, "127.0.0.1:0", token="s3cret-token")
    yield replay, port
    server.stop(0).wait()
    replay.close()


def test_token_round_trip_and_refusals(token_served, monkeypatch):
    replay, port = token_served
    monkeypatch.delenv(codec.TOKEN_ENV, raising=False)
    with ReplayClient(f"127.0.0.1:{port}", actor=True, token="s3cret-token", retry_s=2.0) as client:
        assert client.push(make_batch(0, 10), np.ones(10))["accepted"] == 10
        replay.flush()
        check_rows(client.sample(8, 0.4))
    for token in ("", "wrong", "s3cret-token "):
        with ReplayClient(f"127.0.0.1:{port}", actor=True, token=token, retry_s=2.0) as intruder:
            for call in (
                lambda: intruder.push(make_batch(10, 5), np.ones(5)),
                lambda: intruder.sample(4),
                intruder.stats,
                intruder.checkpoint,
                lambda: intruder.update_priorities(np.array([0]), np.array([9.0])),
            ):
                with pytest.raises(PermissionError, match=r"refused \w+: missing or wrong replay token"):
                    call()
    assert replay.stats()["log_sequence"] == 1 and replay.size() == 10  # the refused calls changed nothing
    monkeypatch.setenv(codec.TOKEN_ENV, "s3cret-token")  # clients (and serve) read the variable when given none
    with ReplayClient(f"127.0.0.1:{port}", retry_s=2.0) as client:
        assert client.stats()["size"] == 10


def test_token_from_the_environment_on_the_server(monkeypatch):
    monkeypatch.setenv(codec.TOKEN_ENV, "from-env")
    replay = ReplayServer(16, OBS, "host")
    server, port = serve(replay, "127.0.0.1:0")
    try:
        with (
            ReplayClient(f"127.0.0.1:{port}", token="", retry_s=1.0) as client,
            pytest.raises(PermissionError, match="UNAUTHENTICATED|missing or wrong replay token"),
        ):
            client.stats()
        with ReplayClient(f"127.0.0.1:{port}", retry_s=1.0) as client:
            assert client.stats()["size"] == 0
    finally:
        server.stop(0).wait()
        replay.close()


def _self_signed(directory) -> tuple[str, str]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    cert, key = str(directory / "cert.pem"), str(directory / "key.pem")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            key,
            "-out",
            cert,
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_tls_and_token_round_trip(tmp_path, monkeypatch):
    cert, key = _self_signed(tmp_path)
    replay = ReplayServer(64, OBS, "host", seed=0)
    server, port = serve(replay, "127.0.0.1:0", token="t", tls=(cert, key))
    try:
        with ReplayClient(f"127.0.0.1:{port}", actor=True, token="t", tls_ca=cert, retry_s=5.0) as client:
            assert client.push(make_batch(0, 20), np.ones(20))["accepted"] == 20
            replay.flush()
            check_rows(client.sample(16, 0.4))
        with ReplayClient(f"localhost:{port}", token="t", tls_ca=cert, retry_s=5.0) as client:
            assert client.stats()["size"] == 20
        monkeypatch.setenv(codec.TLS_CA_ENV, cert)  # the board setup: certificate and token from the environment
        monkeypatch.setenv(codec.TOKEN_ENV, "t")
        with ReplayClient(f"127.0.0.1:{port}", retry_s=5.0) as client:
            assert client.stats()["size"] == 20
        with (
            ReplayClient(f"127.0.0.1:{port}", token="t", tls_ca="", retry_s=0.5) as plaintext,
            pytest.raises(ReplayUnavailable, match="UNAVAILABLE"),
        ):
            plaintext.stats()  # a plaintext client cannot talk to the TLS port
        with (
            ReplayClient(f"127.0.0.1:{port}", token="", tls_ca=cert, retry_s=1.0) as anonymous,
            pytest.raises(PermissionError),
        ):
            anonymous.stats()  # TLS alone is not authentication
    finally:
        server.stop(0).wait()
        replay.close()


def test_tls_client_refuses_a_server_with_another_certificate(tmp_path):
    cert, key = _self_signed(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    other_cert, _ = _self_signed(other)
    replay = ReplayServer(16, OBS, "host")
    server, port = serve(replay, "127.0.0.1:0", tls=(cert, key), token="")
    try:
        with (
            ReplayClient(f"127.0.0.1:{port}", tls_ca=other_cert, retry_s=0.5) as client,
            pytest.raises(ReplayUnavailable, match="UNAVAILABLE"),
        ):
            client.stats()
    finally:
        server.stop(0).wait()
        replay.close()


# ---------------------------------------------------------------------------------------------------------------------
# bounded actor sequences, request limits
# ---------------------------------------------------------------------------------------------------------------------
@pytest.fixture
def plain_served():
    replay = ReplayServer(256, OBS, "host", seed=0, sequence_window=16)
    server, port = serve(replay, "127.0.0.1:0", token="")
    yield replay, port
    server.stop(0).wait()
    replay.close()


def _raw_push(port: int, actor_id: str, sequence: int) -> grpc.RpcError:
    """A hand-made push (no ReplayClient) under ``actor_id``; returns the server's refusal."""
    request = push_request(make_batch(100, 4), np.ones(4))
    request.actor_id, request.sequence = actor_id, sequence
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        with pytest.raises(grpc.RpcError) as info:
            pb_grpc.ReplayStub(channel).Push(request, timeout=5)
    finally:
        channel.close()
    return info.value


@pytest.mark.parametrize("sequence", [1, 1024, 2**64 - 1])
def test_no_one_can_push_as_another_actor_or_move_its_sequence(plain_served, sequence):
    """The attack that used to work: a push under a real actor's id, numbered ahead, made the actor's next pushes
    "duplicates" (dropped). Ids are now issued by the server and unguessable: a push under any id the server did not
    issue is refused with NOT_FOUND, whatever its sequence, and the real actor's pushes all go in."""
    replay, port = plain_served
    with ReplayClient(f"127.0.0.1:{port}", actor=True, retry_s=2.0) as victim:
        first = victim.push(make_batch(0, 10), np.ones(10))
        for forged in ("victim", "v2", victim.actor_id[::-1]):
            refusal = _raw_push(port, forged, sequence)
            assert refusal.code() == grpc.StatusCode.NOT_FOUND
            assert "was not issued by this replay server" in refusal.details()
        acks = [first] + [victim.push(make_batch(10 * k, 10), np.ones(10)) for k in range(1, 3)]
    assert [(a["accepted"], a["duplicate"]) for a in acks] == [(10, False)] * 3
    replay.flush()
    assert replay.size() == 30 and replay.stats().get("push_duplicates", 0) == 0


def test_an_actor_cannot_jump_its_own_sequence_far_ahead(plain_served):
    """The window still bounds an actor's own sequence (a bug or a replayed request under its id)."""
    replay, port = plain_served
    actor_id = replay.open_session()
    refusal = _raw_push(port, actor_id, 2**64 - 1)
    assert refusal.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert refusal.details() == (
        f"sequence 18446744073709551615 of actor '{actor_id[:8]}...' jumps more than sequence_window = 16 past its "
        "last acknowledged sequence 0"
    )


def test_sequence_window_edges():
    replay = ReplayServer(64, OBS, "host", sequence_window=4)
    try:
        batch, ones, x = make_batch(0, 2), np.ones(2), replay.open_session()
        assert replay.push(batch, ones, x, 4)["duplicate"] is False  # 0 + 4: inside the window
        with pytest.raises(
            ValueError,
            match=rf"^sequence 9 of actor '{x[:8]}\.\.\.' jumps more than sequence_window = 4 past "
            r"its last acknowledged sequence 4$",
        ):
            replay.push(batch, ones, x, 9)
        assert replay.push(batch, ones, x, 8)["duplicate"] is False  # a gap of 3 (pushes that gave up)
        assert replay.push(batch, ones, x, 8)["duplicate"] is True
        assert replay.stats()["log_sequence"] == 2
        with pytest.raises(ValueError, match="sequence_window must be an integer >= 1, not 0"):
            ReplayServer(8, OBS, "host", sequence_window=0)
    finally:
        replay.close()


@pytest.mark.parametrize("batch_size", [4294967295, 1048576, 257])
def test_oversized_sample_is_refused_before_any_work(plain_served, batch_size):
    replay, port = plain_served
    replay.push(make_batch(0, 100), np.ones(100))
    replay.flush()
    with ReplayClient(f"127.0.0.1:{port}", retry_s=1.0) as client:
        with pytest.raises(
            ValueError,
            match=rf"refused Sample: batch_size must be at most 256 \(max_sample: the "
            rf"capacity, or the rows one reply holds\), not {batch_size}$",
        ):
            client.sample(batch_size)
        assert client.retries == 0  # a refusal is final: not retried for the client's 1 s budget
        assert len(client.sample(256)["indices"]) == 256  # the limit itself is allowed
    assert replay.stats().get("sample_calls", 0) == 1  # the refused ones never reached the sampler


def test_sample_limit_follows_max_sample_and_the_message_size():
    rows = codec.max_sample_rows((84, 84, 4))
    row_bytes = 2 * 4 * 84 * 84 * 4 + 36
    assert rows * row_bytes <= codec.MAX_MESSAGE_BYTES < (rows + 2) * row_bytes
    replay = ReplayServer(64, OBS, "host", max_sample=8)
    try:
        replay.insert(make_batch(0, 20), np.ones(20))
        assert replay.max_sample == 8 and len(replay.sample(8)["indices"]) == 8
        with pytest.raises(ValueError, match=r"^batch_size must be at most 8 "):
            replay.sample(9)
    finally:
        replay.close()


def test_oversized_push_message_is_refused_by_size(plain_served):
    """A push larger than the message limit is refused by gRPC before it is decoded."""
    replay, port = plain_served
    request = pb.PushRequest()
    codec.to_tensor(np.zeros(codec.MAX_MESSAGE_BYTES // 8 + 1, np.float64), request.priorities)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", -1)])
    with pytest.raises(grpc.RpcError) as info:
        pb_grpc.ReplayStub(channel).Push(request, timeout=10)
    channel.close()
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert replay.stats()["log_sequence"] == 0


# ---------------------------------------------------------------------------------------------------------------------
# reconnect
# ---------------------------------------------------------------------------------------------------------------------
def test_client_resumes_within_a_second_of_the_server_listening_again(tmp_path):
    """A pusher keeps retrying through 3 s of downtime; after the restart its push is acknowledged in < 1 s."""
    port = free_port()
    process = start_service(port, directory=tmp_path, backend="host")
    acked = {}
    try:
        client = ReplayClient(f"127.0.0.1:{port}", actor=True, retry_s=60.0, timeout_s=5.0)
        client.push(make_batch(0, 8), np.ones(8))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

        def push():
            client.push(make_batch(8, 8), np.ones(8))
            acked["at"] = time.monotonic()

        pusher = threading.Thread(target=push)
        pusher.start()
        time.sleep(3.0)  # long enough for uncapped back-off to reach seconds
        process = start_service(port, directory=tmp_path, backend="host")
        listening = time.monotonic()
        pusher.join(timeout=30)
        resume_s = acked["at"] - listening
        print(f"client resumed {resume_s * 1e3:.0f} ms after the server listened again ({client.retries} retries)")
        assert resume_s < 1.0
        assert client.wait_ready(timeout_s=10, min_size=16)["size"] == 16
        client.close()
    finally:
        process.kill()
        process.wait()


def test_command_line_serves_tls_with_a_token_from_the_environment(tmp_path):
    """The board setup: ``--tls-cert/--tls-key`` and ``$PYNQ_RL_REPLAY_TOKEN`` on the server, the same on clients."""
    cert, key = _self_signed(tmp_path)
    port = free_port()
    env = {**os.environ, codec.TOKEN_ENV: "board-token"}
    process = start_service(port, "--tls-cert", cert, "--tls-key", key, seed=None, capacity=64, backend="host", env=env)
    try:
        with ReplayClient(f"127.0.0.1:{port}", token="board-token", tls_ca=cert, retry_s=5.0) as client:
            assert client.push(make_batch(0, 8), np.ones(8))["accepted"] == 8
        with (
            ReplayClient(f"127.0.0.1:{port}", token="guess", tls_ca=cert, retry_s=5.0) as intruder,
            pytest.raises(PermissionError, match="missing or wrong replay token"),
        ):
            intruder.stats()
    finally:
        process.kill()
        process.wait()
