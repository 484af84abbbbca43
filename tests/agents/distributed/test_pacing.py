"""The replay-ratio limiter (``ReplayRatio``) on a fake clock and a fake replay server's counters."""

import pytest

from pynq_rl.host.agents.distributed import pacing


@pytest.fixture
def clock(monkeypatch):
    """A fake monotonic clock that :func:`time.sleep` advances."""
    now = [0.0]
    monkeypatch.setattr(pacing.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(pacing.time, "sleep", lambda s: now.__setitem__(0, now[0] + s))
    return now


class FakeServer:
    """Counters as the replay server reports them; actors insert ``insert_rate`` transitions per second of the clock."""

    def __init__(self, clock, inserted=0, insert_rate=0.0):
        self.clock, self.base, self.insert_rate = clock, inserted, insert_rate
        self.update_calls = 0
        self.reads = 0

    def stats(self):
        self.reads += 1
        inserted = self.base + round(self.clock[0] * self.insert_rate)
        return {"update_calls": self.update_calls, "inserted_transitions": inserted, "pushed_transitions": inserted}


def learner_updates(limiter, server, n, timeout_s=1.0):
    for _ in range(n):
        if not limiter.wait_to_update(timeout_s):
            return False
        server.update_calls += 1  # update_priorities reached the server
        limiter.record_update()
    return True


def test_the_learner_waits_for_inserts_at_the_ratio(clock):
    server = FakeServer(clock, inserted=1000, insert_rate=1000.0)  # learning_starts filled; then 1 per ms
    limiter = pacing.ReplayRatio(0.5, 1000, 100, server.stats, max_push=53)
    assert learner_updates(limiter, server, 100)  # the tolerance: one read, no wait
    assert server.reads == 1 and limiter.waited_s == 0
    assert learner_updates(limiter, server, 100)  # then 2 inserts per update: 100 updates wait for 200 inserts
    assert server.update_calls <= 0.5 * (limiter.server_inserted - 1000) + 100
    assert limiter.waited_s == pytest.approx(0.2, abs=0.011)
    assert server.reads <= 45  # ~2 per 10 ms poll while it waited (41), not 1 per update


def test_actors_wait_for_a_slow_learner_and_go_on_when_it_catches_up(clock):
    server = FakeServer(clock, inserted=0)
    actor = pacing.ReplayRatio(0.5, 1000, 100, server.stats, max_push=50)
    assert actor.wait_to_insert(50, timeout_s=1.0)  # learning_starts + tolerance / ratio = 1200 may go in
    server.base = 1150
    assert actor.wait_to_insert(50, timeout_s=1.0)
    server.base = 1200
    assert not actor.wait_to_insert(50, timeout_s=1.0)  # the learner has not started: wait, give up at the timeout
    assert clock[0] == pytest.approx(1.0, abs=0.011)
    server.update_calls = 25  # 25 updates buy 50 transitions
    assert actor.wait_to_insert(50, timeout_s=1.0)


def test_stalled_actors_time_out_and_a_restarted_server_restarts_the_line(clock):
    server = FakeServer(clock, inserted=100)
    limiter = pacing.ReplayRatio(1.0, 100, 2, server.stats)
    assert learner_updates(limiter, server, 2)
    assert not limiter.wait_to_update(timeout_s=0.5)  # nothing inserted: gives up after the timeout
    assert clock[0] == pytest.approx(0.5, abs=0.011)
    server.base, server.update_calls = 0, 0  # the server restarted: both counters begin again at 0
    assert not limiter.wait_to_update(timeout_s=0.1)  # 1 <= 1.0 * (0 - 100) + 2 fails: refill learning_starts
    server.base = 100
    assert limiter.wait_to_update(timeout_s=0.1)


def test_ratio_zero_never_waits_nor_reads_and_bad_settings_are_refused():
    def read():
        raise AssertionError("an unlimited learner or actor does not ask the server")

    limiter = pacing.ReplayRatio(0.0, 1000, 0, read)
    for _ in range(1000):
        assert limiter.wait_to_update(timeout_s=0.0) and limiter.wait_to_insert(50, timeout_s=0.0)
        limiter.record_update()
    with pytest.raises(ValueError, match="must be >= 0"):
        pacing.ReplayRatio(-1.0, 0, 0, read)
    with pytest.raises(ValueError, match=r"too small for pushes of 53 at ratio 0.5.*2 \* tolerance >= "):
        pacing.ReplayRatio(0.5, 0, 13, read, max_push=53)  # 26 < 0.5 * 53 + 1: both sides could wait
