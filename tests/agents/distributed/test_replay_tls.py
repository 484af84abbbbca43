"""TLS set-up errors in one line, at start-up, naming the file and what is wrong with it; clients that cannot speak
the server's TLS fail at once with the reason instead of retrying for ``retry_s``; a token about to travel in clear to
another machine draws a warning.

Certificates are made at test time with the ``openssl`` command (every test here needs it and skips, saying so,
where it is missing).
"""

import re
import shutil
import subprocess
import time
import warnings

import numpy as np
import pytest

from pynq_rl.host.agents.distributed import codec
from pynq_rl.host.agents.distributed.client import ReplayClient, ReplayUnavailable, TLSMismatch
from pynq_rl.host.agents.distributed.server import ReplayServer
from pynq_rl.host.agents.distributed.service import check_tls, main, serve
from tests.agents.distributed.replay_testing import OBS, make_batch

FAST_S = 5.0
"""a misconfigured client must give up well within this, with ``retry_s`` at 60 s"""


def _self_signed(directory, name: str = "server") -> tuple[str, str]:
    """A self-signed certificate for localhost / 127.0.0.1 and its key, written as ``<name>.crt`` / ``<name>.key``."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make test certificates")
    cert, key = str(directory / f"{name}.crt"), str(directory / f"{name}.key")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1"]
        + ["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def pair(tmp_path):
    return _self_signed(tmp_path)


@pytest.fixture
def tls_served(pair):
    replay = ReplayServer(64, OBS, "host", seed=0)
    server, port = serve(replay, "127.0.0.1:0", token="", tls=pair)
    yield port, pair[0]
    server.stop(0).wait()
    replay.close()


@pytest.fixture
def plain_served():
    replay = ReplayServer(64, OBS, "host", seed=0)
    server, port = serve(replay, "127.0.0.1:0", token="")
    yield port
    server.stop(0).wait()
    replay.close()


# -- the server's files ------------------------------------------------------------------------------------------------
def _bad_files(tmp_path, pair):
    """(cert, key, message pattern) for every kind of bad TLS file pair."""
    cert, key = pair
    other_cert, other_key = _self_signed(tmp_path, "other")
    not_pem = tmp_path / "notes.txt"
    not_pem.write_text("not a certificate\n")
    missing = str(tmp_path / "missing.crt")
    return [
        (missing, key, rf"^TLS certificate {missing}: cannot read it \(No such file or directory\)$"),
        (cert, missing, rf"^TLS key {missing}: cannot read it \(No such file or directory\)$"),
        (str(not_pem), key, rf"^TLS certificate {not_pem} is not PEM \(no '-----BEGIN ' armour\)$"),
        (cert, str(not_pem), rf"^TLS key {not_pem} is not PEM \(no '-----BEGIN ' armour\)$"),
        (key, cert, rf"^TLS certificate {key} and key {cert} are swapped: the certificate file holds a private key"),
        (cert, cert, rf"^TLS key {cert} holds no PRIVATE KEY block \(found: CERTIFICATE\)$"),
        (key, key, rf"^TLS certificate {key} holds no CERTIFICATE block \(found: PRIVATE KEY\)$"),
        (cert, other_key, rf"^TLS key {other_key} does not match the certificate {cert} "),
        (other_cert, key, rf"^TLS key {key} does not match the certificate {other_cert} "),
    ]


def test_bad_tls_files_are_named_in_one_line_before_binding(tmp_path, pair):
    for cert, key, message in _bad_files(tmp_path, pair):
        with pytest.raises(ValueError, match=message) as info:
            check_tls(cert, key)
        assert "\n" not in str(info.value)
        replay = ReplayServer(8, OBS, "host")
        try:
            with pytest.raises(ValueError, match=message):
                serve(replay, "127.0.0.1:0", token="", tls=(cert, key))
        finally:
            replay.close()
    assert check_tls(*pair)[0].startswith(b"-----BEGIN CERTIFICATE-----")


def test_command_line_reports_a_bad_tls_file_in_one_line(tmp_path, pair, monkeypatch, capsys):
    """No traceback and no replay server built: ``error: ...`` naming the file, exit status 1."""
    built = []
    monkeypatch.setattr("pynq_rl.host.agents.distributed.service.ReplayServer", lambda *a, **k: built.append(a))
    for cert, key, message in _bad_files(tmp_path, pair):
        assert main(["--backend", "host", "--tls-cert", cert, "--tls-key", key, "--address", "127.0.0.1:0"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: "), err
        assert re.match(message, err[len("error: ") : -1]), err
    assert built == []


def test_an_encrypted_key_is_refused_without_a_prompt(tmp_path, pair):
    cert, key = pair
    locked = str(tmp_path / "locked.key")
    subprocess.run(
        ["openssl", "pkey", "-in", key, "-out", locked, "-aes256", "-passout", "pass:secret"],
        check=True,
        capture_output=True,
    )
    with pytest.raises(ValueError, match=rf"^TLS key {locked} is encrypted: gRPC needs an unencrypted key$"):
        check_tls(cert, locked)


# -- the client's certificate authority ------------------------------------------------------------------------------
def test_a_tls_ca_that_is_not_a_pem_certificate_is_refused_by_the_constructor(tmp_path, pair):
    not_pem = tmp_path / "ca.txt"
    not_pem.write_text("hello\n")
    bad_body = tmp_path / "bad.crt"
    bad_body.write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    missing = tmp_path / "missing.crt"
    cases = [
        (not_pem, rf"^tls_ca {not_pem} is not PEM \(no '-----BEGIN ' armour\)$"),
        (pair[1], rf"^tls_ca {pair[1]} holds no CERTIFICATE block \(found: PRIVATE KEY\)$"),
        (bad_body, rf"^tls_ca {bad_body} holds no certificate that can be loaded \("),
        (missing, rf"^tls_ca {missing}: cannot read it \(No such file or directory\)$"),
    ]
    for path, message in cases:
        with pytest.raises(ValueError, match=message):
            ReplayClient("127.0.0.1:1", tls_ca=path)


# -- clients that cannot speak the server's TLS ----------------------------------------------------------------------
def _fails_fast(client, message):
    """``client.stats()`` raises :class:`TLSMismatch` matching ``message`` within :data:`FAST_S`; so does
    ``wait_ready`` (it does not wait out its timeout)."""
    with client:
        for call in (client.stats, lambda: client.wait_ready(timeout_s=30)):
            start = time.monotonic()
            with pytest.raises(TLSMismatch, match=message) as info:
                call()
            assert time.monotonic() - start < FAST_S
            assert isinstance(info.value, ReplayUnavailable) and "\n" not in str(info.value)


def test_plaintext_client_against_a_tls_server_fails_fast(tls_served):
    port, _ = tls_served
    _fails_fast(
        ReplayClient(f"127.0.0.1:{port}", token="", tls_ca="", retry_s=60.0),
        r"UNAVAILABLE: the server speaks TLS and this client plaintext: give tls_ca",
    )


def test_tls_client_against_a_plaintext_server_fails_fast(plain_served, pair):
    _fails_fast(
        ReplayClient(f"127.0.0.1:{plain_served}", token="", tls_ca=pair[0], retry_s=60.0),
        r"UNAVAILABLE: the server does not speak TLS \(a plaintext server\?\): drop tls_ca",
    )


def test_tls_client_with_another_ca_fails_fast(tls_served, tmp_path):
    port, _ = tls_served
    other = tmp_path / "elsewhere"
    other.mkdir()
    other_cert, _ = _self_signed(other, "other")
    _fails_fast(
        ReplayClient(f"127.0.0.1:{port}", token="", tls_ca=other_cert, retry_s=60.0),
        rf"UNAVAILABLE: the server's certificate is not signed by tls_ca {other_cert} \(CERTIFICATE_VERIFY_FAILED\)",
    )


def test_tls_client_expecting_another_name_fails_fast(tls_served):
    port, cert = tls_served
    _fails_fast(
        ReplayClient(f"127.0.0.1:{port}", token="", tls_ca=cert, tls_server_name="replay.example", retry_s=60.0),
        r"UNAVAILABLE: the server's certificate does not name replay\.example",
    )


def test_a_matching_tls_client_still_works_and_a_restart_is_still_retried(tls_served):
    port, cert = tls_served
    with ReplayClient(f"127.0.0.1:{port}", token="", tls_ca=cert, retry_s=5.0) as client:
        assert client.push(make_batch(0, 8), np.ones(8))["accepted"] == 8
    with ReplayClient("127.0.0.1:1", token="", retry_s=0.5) as nobody:  # nothing listens: retried, then given up
        with pytest.raises(ReplayUnavailable, match="Connection refused") as info:
            nobody.stats()
        assert not isinstance(info.value, TLSMismatch) and nobody.retries > 0


# -- a token in clear --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "address, token, tls, warned",
    [
        ("10.1.2.3:50051", "t", False, True),
        ("replay.example:50051", "t", False, True),
        ("dns:///replay.example:50051", "t", False, True),
        ("[2001:db8::1]:50051", "t", False, True),
        ("10.1.2.3:50051", "t", True, False),
        ("10.1.2.3:50051", "", False, False),
        ("127.0.0.1:50051", "t", False, False),
        ("127.8.9.10:50051", "t", False, False),
        ("localhost:50051", "t", False, False),
        ("[::1]:50051", "t", False, False),
        ("ipv4:127.0.0.1:50051", "t", False, False),
        ("unix:/tmp/replay.sock", "t", False, False),
    ],
)
def test_a_token_sent_in_clear_off_loopback_draws_a_warning(address, token, tls, warned, pair, monkeypatch):
    monkeypatch.delenv(codec.TOKEN_ENV, raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ReplayClient(address, token=token, tls_ca=pair[0] if tls else "").close()
    messages = [str(w.message) for w in caught if "in clear" in str(w.message)]
    if warned:
        assert messages == [
            f"the replay token will travel in clear to {address}: a plaintext channel to a non-loopback address "
            f"(give tls_ca, or ${codec.TLS_CA_ENV}, to use TLS)"
        ]
    else:
        assert messages == []
