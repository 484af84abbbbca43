"""Actor identity on the replay server: pushes carry ids the server issued, so no one can push as another actor or
move its de-duplication state, and the ids outlive a restart exactly as far as anything was acknowledged under them.
"""

import re

import numpy as np
import pytest

from pynq_rl.host.agents.distributed.actors import ID_BYTES, ActorSequences, ActorTableFull, UnknownActor
from pynq_rl.host.agents.distributed.server import ReplayServer
from tests.agents.distributed.replay_testing import OBS, make_batch


def test_issued_ids_are_unguessable_and_distinct():
    table = ActorSequences(window=8, sessions_per_s=None)  # one caller asking 1000 times: no rate limit
    ids = {table.issue() for _ in range(1000)}
    assert len(ids) == 1000 and all(re.fullmatch(f"[0-9a-f]{{{2 * ID_BYTES}}}", i) for i in ids)


def test_a_push_under_an_id_the_server_did_not_issue_is_refused_and_stores_nothing():
    replay = ReplayServer(64, OBS, "host")
    try:
        victim = replay.open_session()
        replay.push(make_batch(0, 4), np.ones(4), actor_id=victim, sequence=1)
        for forged in ("v2", victim[:-1] + ("0" if victim[-1] != "0" else "1"), victim.upper()):
            with pytest.raises(UnknownActor, match="was not issued by this replay server"):
                replay.push(make_batch(4, 4), np.ones(4), actor_id=forged, sequence=1024)
        replay.flush()
        # the victim's next pushes go through: nobody moved its sequence
        for sequence in (2, 3):
            ack = replay.push(make_batch(4 * sequence, 4), np.ones(4), actor_id=victim, sequence=sequence)
            assert not ack["duplicate"] and ack["accepted"] == 4
        replay.flush()
        assert replay.size() == 12
    finally:
        replay.close()


def test_pushes_without_an_actor_id_are_not_deduplicated():
    replay = ReplayServer(64, OBS, "host")
    try:
        for _ in range(2):
            assert replay.push(make_batch(0, 4), np.ones(4))["accepted"] == 4
        replay.flush()
        assert replay.size() == 8
    finally:
        replay.close()


def test_the_table_refuses_ids_beyond_max_actors_live_sessions():
    table = ActorSequences(window=8, max_actors=2)
    for _ in range(2):
        table.acknowledge(table.issue(), 1)
    with pytest.raises(ActorTableFull, match="holds 2 live sessions .*, max_actors = 2: restart it with a larger"):
        table.issue()
    for bad in (0, -1, 1.5, "3", None):
        with pytest.raises(ValueError, match="max_actors must be an integer >= 1"):
            ActorSequences(window=8, max_actors=bad)


def test_ids_outlive_a_restart_as_far_as_pushes_were_acknowledged(tmp_path):
    """An id with an acknowledged push is in the log (and in a checkpoint's table), so a retry after a restart is still
    a duplicate; an id that never had a push acknowledged is gone (a checkpoint does not keep it either), and pushing
    under it is refused: nothing was stored under it, so the actor opens a new session without risk of storing
    twice."""
    replay = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path)
    checkpointed, unused_at_checkpoint = replay.open_session(), replay.open_session()
    replay.push(make_batch(0, 4), np.ones(4), actor_id=checkpointed, sequence=1)
    replay.checkpoint()
    pushed, idle = replay.open_session(), replay.open_session()
    replay.push(make_batch(4, 4), np.ones(4), actor_id=pushed, sequence=1)
    replay.flush()
    replay.close()
    again = ReplayServer(64, OBS, "host", checkpoint_dir=tmp_path)
    try:
        assert again.push(make_batch(4, 4), np.ones(4), actor_id=pushed, sequence=1)["duplicate"]  # from the log
        assert again.push(make_batch(0, 4), np.ones(4), actor_id=checkpointed, sequence=1)["duplicate"]
        assert not again.push(make_batch(8, 4), np.ones(4), actor_id=checkpointed, sequence=2)["duplicate"]
        for forgotten in (unused_at_checkpoint, idle):
            with pytest.raises(UnknownActor, match="or not kept across its restart"):
                again.push(make_batch(12, 4), np.ones(4), actor_id=forgotten, sequence=1)
    finally:
        again.close()
