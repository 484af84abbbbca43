"""``GaeRolloutBuffer``'s flags are booleans: ``strict="no"`` is refused naming ``strict``, never read as True."""

import re

import numpy as np
import pytest

pytest.importorskip("stable_baselines3", reason="Stable-Baselines3 not installed (pip install 'pynq-rl[sb3]')")
import gymnasium as gym

from pynq_rl.host.integrations.sb3 import GaeDictRolloutBuffer, GaeRolloutBuffer

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACTION_SPACE = gym.spaces.Discrete(2)


class NoGae:
    """Stands in for a GAE core: never called here."""

    def compute(self, rewards, values, dones, *, gamma, lam, quantize):
        raise AssertionError("not reached")


@pytest.mark.parametrize("value", ["no", "False", 0, 1, None, 0.0, np.array([True])])
@pytest.mark.parametrize("buffer", [GaeRolloutBuffer, GaeDictRolloutBuffer])
def test_strict_must_be_a_bool(buffer, value):
    space = OBS_SPACE if buffer is GaeRolloutBuffer else gym.spaces.Dict({"x": OBS_SPACE})
    with pytest.raises(TypeError, match=rf"^strict must be a bool, not {re.escape(repr(value))}$"):
        buffer(4, space, ACTION_SPACE, device="cpu", gae=NoGae(), strict=value)


@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_strict_takes_booleans(value):
    buffer = GaeRolloutBuffer(4, OBS_SPACE, ACTION_SPACE, device="cpu", gae=NoGae(), strict=value)
    assert buffer.strict is bool(value)
