"""The learner's rate limiter (``UpdateToInsertRatio``) on a fake clock and a fake replay counter."""
import pytest

from pynq_rl.host.agents.distributed import pacing


@pytest.fixture
def clock(monkeypatch):
    """A fake monotonic clock that :func:`time.sleep` advances."""
    now = [0.0]
    monkeypatch.setattr(pacing.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(pacing.time, "sleep", lambda s: now.__setitem__(0, now[0] + s))
    return now


def test_updates_wait_for_inserts_at_the_ratio(clock):
    reads = []

    def read():                                 # the learning_starts fill, then the actors insert 1 per ms
        reads.append(clock[0])
        return 1000 + round(clock[0] * 1000)
    limiter = pacing.UpdateToInsertRatio(0.5, read, slack=0.5 * 1000, poll_s=0.01)
    for _ in range(500):                        # the head start: no counter read, no wait
        assert limiter.wait(timeout_s=1.0)
        limiter.record_update()
    assert len(reads) == 1 and limiter.waited_s == 0
    for _ in range(100):                        # then 2 inserts per update: 100 updates wait for 200 inserts
        assert limiter.wait(timeout_s=1.0)
        limiter.record_update()
    assert limiter.updates == 600 and limiter.inserted >= 200
    assert limiter.updates <= 0.5 * limiter.inserted + 500
    assert limiter.waited_s == pytest.approx(0.2, abs=0.011)  # 200 inserts at 1 per ms


def test_stalled_actors_time_out_and_a_restarted_server_keeps_counting(clock):
    counter = [0]
    limiter = pacing.UpdateToInsertRatio(1.0, lambda: counter[0], slack=2)
    for _ in range(2):
        assert limiter.wait(timeout_s=0.5)
        limiter.record_update()
    assert not limiter.wait(timeout_s=0.5)      # nothing inserted: gives up after the timeout
    assert clock[0] == pytest.approx(0.5, abs=0.011)
    counter[0] = 5
    assert limiter.wait(0.5) and limiter.inserted == 5
    counter[0] = 3                              # the server restarted: its counter began again at 0
    limiter._refresh()
    assert limiter.inserted == 8                # 5 before the restart + 3 since


def test_ratio_zero_never_waits_nor_reads():
    def read():
        raise AssertionError("an unlimited learner does not ask the server")
    limiter = pacing.UpdateToInsertRatio(0.0, read)
    for _ in range(1000):
        assert limiter.wait(timeout_s=0.0)
        limiter.record_update()
    with pytest.raises(ValueError, match="must be >= 0"):
        pacing.UpdateToInsertRatio(-1.0, read)
