"""32-bit ARM (the PYNQ-Z2's armv7l): widths that must not depend on numpy's default integer or ``np.intp``.

On armv7l, ``np.intp`` and numpy's default integer are 32 bits: ``np.arange``/``np.array`` of Python ints give
int32, sums of int32 stay int32 (and wrap), and functions that take ``np.intp`` (``np.bincount``, ``np.repeat``)
refuse int64 input with "Cannot cast array data from dtype('int64') to dtype('int32') according to the rule
'safe'". The armhf rung (``tools/armhf_check.sh``) runs the drivers there for real; these tests pin each fix on
any machine: by feeding explicit int32/uint32 inputs, by reproducing numpy's 32-bit casting rule where the host's
numpy would hide it, and by exercising the values that need more than 31 or 32 bits (ZU+ DDR addresses, the
replay core's 64-bit TOTAL register pair).
"""

import functools

import numpy as np
import pytest

from pynq_rl import RLOverlay
from pynq_rl.host.backends.memory import DDR_WINDOWS, EmulatedMemory
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.models import parsa as P

pytestmark = pytest.mark.board_smoke

INTP_FUNCTIONS = ("bincount", "repeat")
"""numpy functions whose integer arguments are cast to ``np.intp`` with the 'safe' rule"""


def _as_on_32_bits(function):
    """``function`` with numpy's armv7l casting rule: an integer argument must cast 'safe' to int32 (its np.intp)."""

    @functools.wraps(function)
    def checked(*args, **kwargs):
        for arg in args:
            dtype = np.asarray(arg).dtype
            if dtype.kind in "iu" and not np.can_cast(dtype, np.int32, "safe"):
                raise TypeError(f"Cannot cast array data from {dtype!r} to dtype('int32') according to the rule 'safe'")
        return function(*args, **kwargs)

    return checked


@pytest.fixture
def numpy_32bit_intp(monkeypatch):
    """numpy's ``np.intp``-taking functions behave as on a 32-bit ARM for the duration of the test."""
    for name in INTP_FUNCTIONS:
        monkeypatch.setattr(np, name, _as_on_32_bits(getattr(np, name)))


def test_the_32bit_rule_is_reproduced(numpy_32bit_intp):
    """The shim refuses what armv7l numpy refuses (checked there by the armhf rung) and accepts int32."""
    with pytest.raises(TypeError, match=r"dtype\('int64'\) to dtype\('int32'\)"):
        np.bincount(np.array([0, 1], dtype=np.int64))
    assert np.bincount(np.array([0, 1, 1], dtype=np.int32)).tolist() == [1, 2]


def test_parsa_configuration_needs_no_intp_casts(numpy_32bit_intp):
    """Bug found on armv7l: ParsaModel counted tilings per worker with np.bincount on int64 worker indices, so
    ``configure`` (and ``pynq-rl doctor``'s ParSa self-test) raised TypeError on a PYNQ-Z2."""
    core = RLOverlay(backend="emu").parsa
    layout = {"tilings_per_set": 2, "tiles_per_dim": 3, "tilings": [{"dims": []}, {"dims": [0]}, {"dims": [1, 2]}]}
    core.configure(layout, 3, ([-1.0, -2.0, 0.0], [1.0, 2.0, 10.0]), alpha=0.25, gamma=0.9, epsilon=0.0, seed=5)
    actions, _ = core.act_batch(np.zeros((4, 3)), keys=np.arange(4, dtype=np.int32))
    assert actions.shape == (4,) and np.all((0 <= actions) & (actions < 3))


def test_model_busiest_worker_count_is_exact():
    """The per-worker tiling count behind CYCLES_ACT/CYCLES_UPDATE, independent of how it is counted."""
    spec = S.ParsaSpec(workers=4, tiles_per_worker=64, max_tilings=8)
    model = P.ParsaModel(spec)
    model.n_dims = 2
    descriptors = [
        P.Descriptor(worker=w, dims=(), tiles=1, n_t=1, shift=0, base=i, copy=i) for i, w in enumerate([0, 2, 2, 3, 2])
    ]
    assert model.configure(np.zeros(2, np.int64), np.ones(2, np.int64), descriptors)
    assert model.busiest == 3


def test_zu_plus_buffers_sit_above_4gib_and_the_dma_carries_the_high_bits():
    """The ZCU106's emulated DDR is its high DDR: every transfer needs the AXI DMA's *_MSB address registers."""
    ol = RLOverlay(backend="emu", board="ZCU106")
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=(16, 5)).astype(np.float32)
    values = rng.normal(size=(17, 5)).astype(np.float32)
    adv, _ = ol.gae.compute(rewards, values, np.zeros((16, 5), np.int32), quantize=False)
    assert np.all(np.isfinite(adv))
    dma = ol.device.dmas["gae"]
    for register in ("MM2S_SA", "S2MM_DA"):
        address = dma.values[register] | dma.values[f"{register}_MSB"] << 32
        assert address >= DDR_WINDOWS["zynq_ultrascale"][0] >= 1 << 32
    assert ol.device.memory.allocate((4,), np.uint32).physical_address >= 1 << 32


def test_pynq_z2_buffers_stay_in_its_32bit_ddr():
    ol = RLOverlay(backend="emu", board="Pynq-Z2")
    address = ol.device.memory.allocate((4,), np.uint32).physical_address
    assert DDR_WINDOWS["zynq"][0] <= address < DDR_WINDOWS["zynq"][1] <= ol.board_spec.gp_base


@pytest.mark.parametrize("base, limit", [(0x1000, 0x1000), (0x1001, 0x2000), (-4096, 0x2000)])
def test_emulated_memory_refuses_a_bad_window(base, limit):
    with pytest.raises(ValueError, match=r"^the emulated DDR needs a page-aligned range"):
        EmulatedMemory(None, base, limit)


def test_replay_total_above_32_bits_reads_both_registers():
    """ZCU106: 2**20 leaves of up to 16-bit codes sum past 2**32, so TOTAL_HI:TOTAL is a real 64-bit pair."""
    replay = RLOverlay(backend="emu", board="ZCU106").replay
    replay.alpha = 1.0
    n = 70_000
    indices = np.arange(n, dtype=np.int32)  # int32 indices, as np.arange gives on armv7l
    replay.update(indices, np.full(n, replay.spec.leaf.max_value))
    expected = n * replay.spec.leaf.max_code
    assert expected > 1 << 32
    assert replay.total_code == expected
    sampled, probabilities, weights = replay.sample(64, uniforms=np.arange(64, dtype=np.uint32) << np.uint32(26))
    assert sampled.dtype == np.int64 and np.all((0 <= sampled) & (sampled < n))
    np.testing.assert_allclose(probabilities, 1.0 / n)
    np.testing.assert_allclose(weights, 1.0)


def test_int32_and_uint32_inputs_take_the_same_paths():
    """Inputs built the armv7l way (int32 dones, indices and keys) give the int64 results bit for bit."""
    ol = RLOverlay(backend="emu")
    rng = np.random.default_rng(1)
    rewards, values = rng.normal(size=(40, 3)), rng.normal(size=(41, 3))
    dones = rng.random((40, 3)) < 0.1
    wide = ol.gae.compute(rewards, values, dones.astype(np.int64), quantize=False)
    narrow = ol.gae.compute(rewards, values, dones.astype(np.int32), quantize=False)
    np.testing.assert_array_equal(wide[0], narrow[0])
    replay = ol.replay
    replay.update(np.array([3, 70, 65_535], dtype=np.int32), [1.0, 2.0, 3.0])
    codes = replay.dump_codes()
    assert codes.dtype == np.uint32 and np.flatnonzero(codes).tolist() == [3, 70, 65_535]
