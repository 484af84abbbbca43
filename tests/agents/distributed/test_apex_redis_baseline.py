"""The Redis baseline layout (Debian's redis-server started by the test) and the latency benchmark comparing both."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pynq_rl.host.agents.distributed.redis_baseline import RedisActorPusher, RedisLearnerReplay, start_redis
from tests.agents.distributed.replay_testing import check_rows, free_port, make_batch

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="needs Debian's redis-server (apt-get install redis-server)"
)
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def redis_port():
    port = free_port()
    with start_redis(port):
        yield port


def test_learner_replay_pulls_what_actors_pushed(redis_port):
    actors = [RedisActorPusher("127.0.0.1", redis_port) for _ in range(2)]
    learner = RedisLearnerReplay("127.0.0.1", redis_port, 128, (4,), "host", seed=0)
    try:
        assert actors[0].push(make_batch(0, 30), np.ones(30)) == 1
        assert actors[1].push(make_batch(30, 30), np.ones(30)) == 2
        assert learner.pull() == 60 and learner.pull() == 0  # the list is emptied atomically with the read
        actors[0].push(make_batch(60, 30), np.ones(30))
        batch = learner.sample(64, 0.4)  # pulls the third batch first
        assert learner.replay.size() == 90 and learner.pulled_batches == 3
        check_rows(batch)
        assert learner.update_priorities(batch["indices"], np.ones(64), batch["versions"]) == {
            "updated": 64,
            "stale": 0,
        }
    finally:
        learner.close()
        for actor in actors:
            actor.close()


def test_learner_replay_rejects_a_malformed_batch(redis_port):
    actor = RedisActorPusher("127.0.0.1", redis_port)
    learner = RedisLearnerReplay("127.0.0.1", redis_port, 128, (3,), "host")
    try:
        actor.push(make_batch(0, 5), np.ones(5))
        with pytest.raises(ValueError, match=r"^transitions\.observations must have shape \(n, 3\), not \(5, 4\)$"):
            learner.pull()
    finally:
        learner.close()
        actor.close()


def test_start_redis_without_the_binary_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match=r"^no-such-redis-server not found on PATH"):
        start_redis(free_port(), executable="no-such-redis-server")


@pytest.mark.report
@pytest.mark.slow
def test_latency_benchmark_reports_every_layout(tmp_path):
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "apex_latency.py"),
            "--actors",
            "1",
            "2",
            "--duration-s",
            "1",
            "--warmup-s",
            "0.3",
            "--repeats",
            "1",
            "--backend",
            "host",
            "--push-hz",
            "20",
            "--out",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    table = (tmp_path / "apex.md").read_text()
    for n in (1, 2):
        for layout in ("in-network", "in-network+prefetch", "redis"):
            assert f"| {n} | {layout} |" in table
    assert "| actors | in-network layout | median change | mean change |" in table
    assert "| 2 | in-network+prefetch | " in table.split("median change")[1]
