"""Rung 6: the GaeCore driver through the real PYNQ path (Overlay -> VLNV binding -> MMIO + stock DMA), per backend."""

import re

import numpy as np
import pytest
from pynq.lib.dma import DMA

from pynq_rl.host.drivers import GaeCore, GaeSaturationWarning
from pynq_rl.host.drivers.identity import BitstreamMismatchError
from pynq_rl.overlay import fixed
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.models import gae as model
from tests.common.boards import RTL_TEST_BOARD, make_overlay
from tests.gae.harness import rollout


def test_overlay_binds_gae_core_by_vlnv(overlay):
    assert isinstance(overlay.gae, GaeCore)
    assert isinstance(overlay.gae.dma, DMA)
    assert overlay.ip_dict["gae/core"]["type"] == S.GAE_VLNV
    assert overlay.gae.spec.lanes == overlay.board_spec.slot("gae").spec.lanes


def test_register_map_reads_spec_registers(overlay):
    regs = overlay.gae.register_map
    assert int(regs.ID.MAGIC) == S.GAE_MAGIC
    assert int(regs.LANES) == overlay.gae.spec.lanes
    regs.T = 17
    assert overlay.gae.read(S.GAE_REGISTERS["T"]["address_offset"]) == 17
    with pytest.raises(AttributeError):
        regs.LANES = 3  # read-only in the table, so register_map has no setter
    overlay.gae.write(S.GAE_REGISTERS["LANES"]["address_offset"], 3)  # and the core ignores a raw bus write
    assert int(regs.LANES) == overlay.gae.spec.lanes


def test_hwh_register_map_matches_spec(overlay):
    """The .hwh declares the registers, so PYNQ's own register_map machinery sees the same table."""
    registers = overlay.ip_dict["gae/core"]["registers"]
    for name, reg in S.GAE_REGISTERS.items():
        assert registers[name]["address_offset"] == reg["address_offset"]
        for field, fld in reg["fields"].items():
            assert registers[name]["fields"][field]["bit_offset"] == fld["bit_offset"]


@pytest.mark.parametrize("quantize", [False, True])
def test_compute_matches_float_reference(overlay, quantize):
    rewards, values, dones = rollout(0, 200, 11)
    adv, ret = overlay.gae.compute(rewards, values, dones, gamma=0.99, lam=0.95, quantize=quantize)
    ref_adv, ref_ret = model.gae_float64(rewards, values, dones, 0.99, 0.95)
    assert adv.dtype == np.float32 and ret.dtype == np.float32 and adv.shape == (200, 11)
    tol = 1e-3 if not quantize else 0.05 * np.std(ref_adv)
    assert np.abs(adv - ref_adv).max() < tol
    assert np.abs(ret - ref_ret).max() < tol
    # CYCLES is the core's own count for its one operation: all 11 envs' lane-batches, each all its T_MAX chunks
    # (the rtl build's T_MAX is 40: five chunks)
    spec = overlay.gae.spec
    chunks = -(-200 // spec.t_max)
    assert overlay.gae.cycles == spec.cycles(200, -(-11 // spec.lanes))
    assert overlay.gae.cycles == -(-11 // spec.lanes) * (200 + chunks * spec.pipeline_depth)


def test_compute_is_the_model_bit_for_bit(overlay):
    """Raw mode: the driver's codes through the core equal the model run on the same codes."""
    spec = overlay.gae.spec
    rewards, values, dones = rollout(1, min(64, spec.t_max), spec.lanes)
    adv, ret = overlay.gae.compute(rewards, values, dones, gamma=0.97, lam=0.9, quantize=False)
    r, _ = fixed.quantize(rewards.astype(np.float64), spec.data)
    v, _ = fixed.quantize(values.astype(np.float64), spec.data)
    g, c = fixed.quantize(0.97, spec.coef)[0], fixed.quantize(0.97 * 0.9, spec.coef)[0]
    expected = model.gae_fixed(spec, r, v, dones.astype(np.int64), int(g), int(c))
    assert np.array_equal(fixed.quantize(adv.astype(np.float64), spec.data)[0], expected.advantages)
    assert np.array_equal(fixed.quantize(ret.astype(np.float64), spec.data)[0], expected.returns)


@pytest.mark.parametrize("quantize", [False, True])
def test_gamma_and_lambda_of_one_are_the_model_bit_for_bit(overlay, quantize):
    """gamma * lambda = 1.0 exactly sets the top bit of the UQ1.23 coefficient: the split multiply of its powers
    once read that bit as a sign, and the rtl simulation died on the intbv bound."""
    rewards, values, dones = rollout(9, 12, 3, done_prob=0.2)
    got = overlay.gae.compute(rewards, values, dones, gamma=1.0, lam=1.0, quantize=quantize)
    want = make_overlay("emu").gae.compute(rewards, values, dones, gamma=1.0, lam=1.0, quantize=quantize)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    ref_adv, _ = model.gae_float64(rewards, values, dones, 1.0, 1.0)
    assert np.abs(got[0] - ref_adv).max() < (1e-3 if not quantize else 0.05 * np.std(ref_adv))


def test_magnitudes_past_float32_are_refused_in_8_bit_modes_and_round_to_0_in_raw(overlay):
    """The results are float32: 8-bit inputs whose results would overflow it, or be subnormals or 0 (below its
    smallest normal, outside the error bound), are refused naming the limit; raw fixed point rounds tiny inputs to 0,
    as its LSB says."""
    rewards, values, dones = rollout(10, 4, 2)
    with pytest.raises(ValueError, match=r"rewards and values reach 1e\+308 in magnitude: .* the largest float32"):
        overlay.gae.compute(np.full_like(rewards, 1e308, dtype=np.float64), values, dones)
    for tiny in (5e-324, 1e-300, 1e-39):
        for quantize in ("runs", "block"):
            with pytest.raises(ValueError, match=r"reach at most .* below 1\.17549e-38, the smallest normal float32"):
                overlay.gae.compute(
                    np.full_like(rewards, tiny, dtype=np.float64), values * tiny, dones, quantize=quantize
                )
        adv, ret = overlay.gae.compute(
            np.full_like(rewards, tiny, dtype=np.float64), values * tiny, dones, quantize=False
        )
        assert not adv.any() and not ret.any()
    adv, _ = overlay.gae.compute(np.zeros_like(rewards), np.zeros_like(values), dones)  # all zero is no magnitude
    assert not adv.any()


def test_chunking_over_envs_is_exact_in_raw_mode(overlay):
    lanes = overlay.gae.spec.lanes
    rewards, values, dones = rollout(2, 50, 2 * lanes + 3)
    adv, ret = overlay.gae.compute(rewards, values, dones, quantize=False)
    for lo in (0, lanes, 2 * lanes):
        part = slice(lo, lo + lanes)
        a, r = overlay.gae.compute(rewards[:, part], values[:, part], dones[:, part], quantize=False)
        assert np.array_equal(a, adv[:, part]) and np.array_equal(r, ret[:, part])


def test_chained_chunks_are_the_one_long_recursion_bit_for_bit(overlay):
    """T = 2.5 x T_MAX over more than LANES envs is one operation whose result is the model's recursion over the
    whole T, bit for bit (the core carries the recursion across its T_MAX chunks; no carry rounding)."""
    spec = overlay.gae.spec
    n_steps = 5 * spec.t_max // 2
    rewards, values, dones = rollout(5, n_steps, spec.lanes + 3, done_prob=0.05)
    adv, ret = overlay.gae.compute(rewards, values, dones, gamma=0.97, lam=0.9, quantize=False)
    r, _ = fixed.quantize(rewards.astype(np.float64), spec.data)
    v, _ = fixed.quantize(values.astype(np.float64), spec.data)
    g, c = fixed.quantize(0.97, spec.coef)[0], fixed.quantize(0.97 * 0.9, spec.coef)[0]
    expected = model.gae_fixed(spec, r, v, dones.astype(np.int64), int(g), int(c))
    assert np.array_equal(fixed.quantize(adv.astype(np.float64), spec.data)[0], expected.advantages)
    assert np.array_equal(fixed.quantize(ret.astype(np.float64), spec.data)[0], expected.returns)
    assert overlay.gae.cycles == spec.cycles(n_steps, 2) == 2 * (n_steps + 3 * spec.pipeline_depth)


@pytest.mark.parametrize("quantize", [False, True])
def test_chunking_over_time_matches_one_call(overlay, quantize):
    """T beyond T_MAX is chained by the core across its chunks: the result is GAE of the whole sequence."""
    t_max = overlay.gae.spec.t_max
    rewards, values, dones = rollout(3, 2 * t_max + 37, 3, done_prob=0.002)
    adv, ret = overlay.gae.compute(rewards, values, dones, quantize=quantize)
    ref_adv, ref_ret = model.gae_float64(rewards, values, dones, 0.99, 0.95)
    if quantize:  # one q8 block (one set of scales) over the whole operation: the model's error bound holds
        spec = overlay.gae.spec
        r64, v64 = rewards.astype(np.float64), values.astype(np.float64)
        unit = model.choose_unit(float(max(np.abs(r64).max(), np.abs(v64).max())), 0.99, 0.95, spec.data)
        r_err, v_err = model.encode_q8(r64, unit, spec).error, model.encode_q8(v64, unit, spec).error
        delta_max = np.abs(r64).max() + 1.99 * np.abs(v64).max()
        bound = model.error_bound(
            spec, 0.99, 0.95, unit, r_err, v_err, delta_max, max(np.abs(ref_adv).max(), np.abs(v64).max())
        )
        assert np.abs(adv - ref_adv).max() <= bound and np.abs(ret - ref_ret).max() <= bound
        assert np.corrcoef(adv.ravel(), ref_adv.ravel())[0, 1] > 0.99
    else:
        assert np.abs(adv - ref_adv).max() < 2e-3 and np.abs(ret - ref_ret).max() < 2e-3


def test_zcu106_overlay_has_64_lanes():
    overlay = make_overlay("emu", board="ZCU106")
    assert overlay.gae.spec.lanes == 64 and overlay.gae.spec.stream_bytes == 16
    rewards, values, dones = rollout(4, 30, 70)
    adv, _ = overlay.gae.compute(rewards, values, dones, quantize=False)
    assert np.abs(adv - model.gae_float64(rewards, values, dones, 0.99, 0.95)[0]).max() < 1e-3


# -- bad input gets a clear error -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, error, message",
    [
        ((np.zeros((5, 2)), np.zeros((5, 2)), np.zeros((5, 2))), ValueError, r"values must have shape \(T \+ 1, N\)"),
        ((np.zeros((5, 2)), np.zeros((6, 2)), np.zeros((5, 3))), ValueError, r"dones must have shape \(T, N\)"),
        ((np.zeros(5), np.zeros(6), np.zeros(5)), ValueError, r"rewards must be 2-D \(T, N\), not shape \(5,\)"),
        ((np.array([["a"]]), np.zeros((2, 1)), np.zeros((1, 1))), TypeError, r"rewards must be a numeric array"),
        (
            (np.full((2, 1), np.nan), np.zeros((3, 1)), np.zeros((2, 1))),
            ValueError,
            r"rewards must be finite; rewards\[0, 0\] is nan",
        ),
        ((np.zeros((2, 1)), np.full((3, 1), np.inf), np.zeros((2, 1))), ValueError, r"values must be finite"),
        ((np.zeros((2, 1)), np.zeros((3, 1)), np.full((2, 1), 0.5)), ValueError, r"dones must be 0 or 1"),
        ((np.zeros((0, 1)), np.zeros((1, 1)), np.zeros((0, 1))), ValueError, r"at least one step and one env"),
    ],
)
def test_bad_inputs_raise_before_touching_the_core(overlay, args, error, message):
    with pytest.raises(error, match=message):
        overlay.gae.compute(*args)
    assert overlay.gae.idle


@pytest.mark.parametrize("quantize", ["mu-law", "RUNS", 8, None])
def test_an_unknown_8_bit_mode_raises_naming_the_choices(overlay, quantize):
    rewards, values, dones = rollout(5, 4, 2)
    with pytest.raises(ValueError, match=r"quantize must be True, False, 'runs' or 'block'"):
        overlay.gae.compute(rewards, values, dones, quantize=quantize)
    assert overlay.gae.idle


@pytest.mark.parametrize("gamma, lam", [(1.5, 0.9), (0.9, -0.1), (float("nan"), 0.9), ("0.9", 0.9)])
def test_bad_coefficients_raise(overlay, gamma, lam):
    rewards, values, dones = rollout(5, 4, 2)
    with pytest.raises(ValueError, match=r"(gamma|lam) must be a number in \[0, 1\]"):
        overlay.gae.compute(rewards, values, dones, gamma=gamma, lam=lam)


def test_saturation_warns_or_raises_in_strict_mode(overlay):
    rewards = np.full((40, 2), 20000.0, dtype=np.float32)
    values = np.zeros((41, 2), dtype=np.float32)
    dones = np.zeros((40, 2))
    with pytest.warns(GaeSaturationWarning, match="GAE core saturated"):
        adv, _ = overlay.gae.compute(rewards, values, dones, quantize=False)
    assert adv.max() == pytest.approx(S.GaeSpec().data.max_value)  # clipped, never wrapped
    with pytest.raises(ValueError, match="GAE core saturated"):
        overlay.gae.compute(rewards, values, dones, quantize=False, strict=True)
    adv, _ = overlay.gae.compute(rewards, values, dones, quantize=True)  # q8 rescales instead
    assert np.abs(adv - model.gae_float64(rewards, values, dones, 0.99, 0.95)[0]).max() < 0.01 * adv.max()


# -- the PL misbehaving: timeouts and errors are reported, and the core stays usable --------------------------------
def emulated_core(overlay):
    if overlay.backend != "emu":
        pytest.skip("fault injection needs the emulated core")
    return overlay.device.cores["gae"]


def test_hung_core_times_out_with_status(overlay, monkeypatch):
    core = emulated_core(overlay)
    monkeypatch.setattr(core, "stream_out", lambda max_bytes: (np.zeros(0, np.uint8), False))
    monkeypatch.setattr(type(core), "close_input", lambda self, data: None)  # accepts the input, never finishes
    rewards, values, dones = rollout(6, 10, 2)
    with pytest.raises(TimeoutError, match=re.escape("GAE core not DONE (STATUS=<Status.BUSY: 1>")):
        overlay.gae.compute(rewards, values, dones, timeout_s=0.05)
    monkeypatch.undo()
    adv, _ = overlay.gae.compute(rewards, values, dones)  # reset() on the error path left it usable
    assert adv.shape == (10, 2)


def test_stream_error_is_decoded(overlay, monkeypatch):
    emulated_core(overlay)
    gae = overlay.gae
    real_write = gae._write
    monkeypatch.setattr(gae, "_write", lambda name, value: real_write(name, value + 1 if name == "T" else value))
    rewards, values, dones = rollout(7, 10, 2)
    with pytest.raises(RuntimeError, match="input stream ended early or ran long"):
        gae.compute(rewards, values, dones)


def test_config_error_is_decoded(overlay, monkeypatch):
    emulated_core(overlay)
    gae = overlay.gae
    real_write = gae._write
    monkeypatch.setattr(gae, "_write", lambda name, value: real_write(name, 0 if name == "LANES_USED" else value))
    rewards, values, dones = rollout(8, 10, 2)
    with pytest.raises(RuntimeError, match=r"refused its configuration \(T=10, CHUNKS=1, LANES_USED=0"):
        gae.compute(rewards, values, dones)
    monkeypatch.undo()
    adv, _ = gae.compute(rewards, values, dones)  # the stuck MM2S transfer was aborted by the DMA reset
    assert adv.shape == (10, 2)


def test_stale_bitstream_is_refused(monkeypatch):
    from pynq_rl.host.backends import gae_ip

    original = gae_ip.GaeCoreIP.reset

    def stale_reset(self):
        original(self)
        self.values["ID"] = (S.GAE_MAGIC << 16) | ((S.SPEC_VERSION_MAJOR + 1) << 8)

    monkeypatch.setattr(gae_ip.GaeCoreIP, "reset", stale_reset)
    with pytest.raises(BitstreamMismatchError, match=r"gae core implements spec 2\.0.*rebuild the bitstream"):
        make_overlay("emu")


def test_user_buffers_land_in_emulated_memory(overlay):
    """pynq.allocate works off-board and the stock DMA moves user buffers through the emulated DDR."""
    import pynq

    if overlay.backend == "board":
        pytest.skip("emulated memory only")
    buffer = pynq.allocate((16,), dtype=np.uint32)
    assert buffer.physical_address and overlay.device.memory.read(buffer.physical_address, 64).size == 64


@pytest.mark.parametrize("backend", ["emu", "rtl", "verilator"])
def test_long_rollout_of_many_envs_is_one_operation_within_the_budget(backend):
    """The GAE bus budget for any N and T: T = 2.5 x T_MAX over LANES + 3 envs (two lane-batches of three
    chained chunks each) is one DMA transfer each way and at most 12 host register calls, raw, q8-runs (its scales
    travel in the stream: as many calls as raw) and q8 block (whose four scale registers are one burst: one call more
    than raw)."""
    board = RTL_TEST_BOARD if backend == "rtl" else None  # rtl: a small build (T_MAX 40); emu: the Pynq-Z2's
    overlay = make_overlay(backend, board=board, cores=("gae",))
    spec = overlay.gae.spec
    n_steps, n_envs = 5 * spec.t_max // 2, spec.lanes + 3
    rng = np.random.default_rng(0)
    costs = {}
    for quantize in (False, True, "block"):

        def call():
            overlay.gae.compute(
                rng.normal(size=(n_steps, n_envs)),
                rng.normal(size=(n_steps + 1, n_envs)),
                rng.random((n_steps, n_envs)) < 0.01,
                quantize=quantize,
            )

        call()  # the parameters' first writes
        with overlay.bus_stats() as bus:
            call()  # new data: in q8 new scale registers
        costs[quantize] = bus
        assert bus.dma_transfers == 2 and bus.register_calls <= 12, bus
        assert overlay.gae.cycles == spec.cycles(n_steps, 2)
    raw, runs, block = costs[False], costs[True], costs["block"]
    assert block.register_calls == raw.register_calls + 1 and block.register_writes == raw.register_writes + 4
    assert runs.register_calls == raw.register_calls and runs.dma_bytes_to_pl < raw.dma_bytes_to_pl / 2
