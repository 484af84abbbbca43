"""Rung 3: the MyHDL GAE core against the bit-exact model, transaction for transaction.

The same register writes and the same input stream bytes go to the emulated IP (the model) and to the simulated
HDL; the output stream bytes, STATUS and CYCLES must be identical. Randomized over T, lanes used, gamma, lambda,
dones, raw and q8 modes and values large enough to saturate, for k = 1, 2, 3; operations of several lane-batches
(BATCHES) stream them back to back, and T beyond T_MAX runs as CHUNKS chained chunks per lane-batch.
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pynq_rl import RLOverlay
from pynq_rl.host.backends.gae_ip import GaeCoreIP
from pynq_rl.host.backends.rtl import RtlCoreIP, SimulationEnded
from pynq_rl.overlay import spec as S
from tests.common.boards import RTL_TEST_BOARD
from tests.gae.harness import finish_operation, operation, run_operation, start_operation, write_registers


def small_board(k: int, lanes: int = 3, t_max: int = 24, port_bits: int = 25, run_length: int = 32) -> S.BoardSpec:
    spec = S.GaeSpec(lanes=lanes, t_max=t_max, lookahead=k, multiplier_port_bits=port_bits, run_length=run_length)
    return dataclasses.replace(S.board(None), cores=(S.CoreSlot("gae", spec, 0x0_0000, 0x1_0000),))


@pytest.mark.parametrize("k", [1, 2, 3])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_rtl_equals_model_bit_for_bit(k, data, rtl_simulation):
    ports = data.draw(st.sampled_from([25, 18]), label="multiplier port bits (DSP48, or 18 x 18 partial products)")
    run_length = data.draw(st.sampled_from([1, 5, 32]), label="q8-runs run length")
    board = small_board(k, port_bits=ports, run_length=run_length)
    spec = board.cores[0].spec
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    n_steps = data.draw(st.integers(1, 5 * spec.t_max // 2), label="T (1 to 3 chunks)")
    n_envs = data.draw(st.integers(1, 3 * spec.lanes), label="envs (1 to 3 lane-batches)")
    gamma = data.draw(st.floats(0, 1), label="gamma")
    lam = data.draw(st.floats(0, 1), label="lambda")
    mode = data.draw(st.sampled_from(list(S.GaeMode)), label="mode")
    scale = data.draw(st.sampled_from([1.0, 64.0, 4096.0]), label="magnitude")  # large ones saturate
    both_channels = data.draw(st.booleans(), label="both DMA channels at once")
    regs, stream = operation(spec, mode, np.random.default_rng(seed), n_steps, n_envs, gamma, lam, scale)

    rtl = RtlCoreIP(rtl_simulation(board), "gae", spec, S.GAE_REGISTERS)
    start_operation(rtl, regs)
    got = finish_operation(rtl, stream, both_channels=both_channels)
    expected = run_operation(GaeCoreIP(spec), regs, stream)
    assert got[0] == expected[0], "output stream differs from the model"
    assert got[1] == expected[1], f"STATUS {S.Status(got[1])!r} != model {S.Status(expected[1])!r}"
    assert got[2] == expected[2] == spec.cycles(n_steps, regs["BATCHES"])


@pytest.mark.parametrize("k", [1, 2, 3])
def test_18x18_partial_products_change_no_result_and_no_cycle(k, rtl_simulation):
    """``multiplier_port_bits=18`` (the ECP5 place-and-route build): every product's coefficient split too, into four
    registered 18 x 18 products (k = 1 keeps its unregistered tail product whole). Raw, q8 and q8-runs operations with
    saturating magnitudes, two lane-batches of two chunks: output, STATUS and CYCLES are the model's."""
    board = small_board(k, port_bits=18)
    spec = board.cores[0].spec
    rtl = RtlCoreIP(rtl_simulation(board), "gae", spec, S.GAE_REGISTERS)
    for mode, seed in ((S.GaeMode.RAW, 1), (S.GaeMode.Q8, 2), (S.GaeMode.Q8_RUNS, 3)):
        regs, stream = operation(
            spec, mode, np.random.default_rng(seed), spec.t_max + 7, 2 * spec.lanes, 0.99, 0.95, 4096.0
        )
        got = run_operation(rtl, regs, stream)
        assert got == run_operation(GaeCoreIP(spec), regs, stream), f"{mode.name}: rtl != model"
        assert got[2] == spec.cycles(spec.t_max + 7, 2)


@pytest.mark.parametrize("backend", ["emu", "rtl"])
def test_parameters_written_while_busy_wait_for_the_next_start(backend, rtl_simulation):
    """An operation runs with the registers' values at its START: GAMMA, GAMMA_LAMBDA, LANES_USED and the q8 scales
    and offsets rewritten while it is BUSY change nothing in it (the HDL held them live before: the coefficients
    changed mid-operation there, at TLAST in the emulation); the next operation uses the new values."""
    board = small_board(2)
    spec = board.cores[0].spec
    ip = RtlCoreIP(rtl_simulation(board), "gae", spec, S.GAE_REGISTERS) if backend == "rtl" else GaeCoreIP(spec)
    regs, stream = operation(spec, S.GaeMode.Q8, np.random.default_rng(7), 20, 2 * spec.lanes, 0.99, 0.95, 64.0)
    later = {
        "GAMMA": 1 << 22,
        "GAMMA_LAMBDA": 3 << 20,
        "LANES_USED": 1,
        "R_SCALE": -regs["R_SCALE"] // 3,
        "V_SCALE": regs["V_SCALE"] // 5,
        "R_OFFSET": regs["R_OFFSET"] // 2,
        "V_OFFSET": -regs["V_OFFSET"],
    }
    assert all(regs[name] != value for name, value in later.items())

    start_operation(ip, regs)
    assert ip.read(S.GAE_REGISTERS["STATUS"]["address_offset"]) & S.Status.BUSY
    write_registers(ip, later)
    got = finish_operation(ip, stream)
    assert got == run_operation(GaeCoreIP(spec), regs, stream), "a write while BUSY changed the running operation"

    ip.write(S.GAE_REGISTERS["CTRL"]["address_offset"], regs["CTRL"] | S.Ctrl.START)
    again = finish_operation(ip, stream)
    assert again == run_operation(GaeCoreIP(spec), regs | later, stream), "the next START ignored the new values"
    assert again[0] != got[0]


@pytest.mark.parametrize(
    "regs_update, flag",
    [
        ({"T": 0}, S.Status.ERR_CONFIG),
        ({"LANES_USED": 9}, S.Status.ERR_CONFIG),
        ({"BATCHES": 0}, S.Status.ERR_CONFIG),
        ({"BATCHES": S.GaeSpec.batches_max + 1}, S.Status.ERR_CONFIG),
        ({"CHUNKS": 0}, S.Status.ERR_CONFIG),
        ({"CHUNKS": S.GaeSpec.chunks_max + 1}, S.Status.ERR_CONFIG),
        ({"GAMMA": (1 << 23) + 1}, S.Status.ERR_CONFIG),
        ({"CTRL": 1 << 2, "R_SCALE": 1 << 24}, S.Status.ERR_CONFIG),
        ({"CTRL": 1 << 2, "V_SCALE": -(1 << 24) - 1}, S.Status.ERR_CONFIG),
    ],
)
def test_rtl_refuses_bad_configuration_like_the_model(regs_update, flag, rtl_simulation):
    board = small_board(2)
    spec = board.cores[0].spec
    regs, stream = operation(spec, S.GaeMode.RAW, np.random.default_rng(0), 5, 2, 0.9, 0.9, 1.0)
    regs |= regs_update
    got = run_operation(RtlCoreIP(rtl_simulation(board), "gae", spec, S.GAE_REGISTERS), regs, stream[:0])
    expected = run_operation(GaeCoreIP(spec), regs, stream[:0])
    assert got[1] == expected[1] == S.Status.DONE | flag


@pytest.mark.parametrize("cut", [-1, +1])
def test_rtl_flags_misplaced_tlast_like_the_model(cut, rtl_simulation):
    """A stream one beat short ends early (TLAST too soon); one beat long runs past the last record."""
    board = small_board(2)
    spec = board.cores[0].spec
    regs, stream = operation(spec, S.GaeMode.RAW, np.random.default_rng(1), 6, 3, 0.9, 0.9, 1.0)
    beat = spec.stream_bytes
    stream = stream[:-beat] if cut < 0 else np.concatenate([stream, np.zeros(beat, np.uint8)])
    got = run_operation(RtlCoreIP(rtl_simulation(board), "gae", spec, S.GAE_REGISTERS), regs, stream)
    expected = run_operation(GaeCoreIP(spec), regs, stream)
    assert got[1] == expected[1] == S.Status.DONE | S.Status.ERR_STREAM


@pytest.mark.parametrize("headers", [1, 2])
def test_rtl_flags_tlast_on_a_header_like_the_model(headers, rtl_simulation):
    """q8-runs: a stream that ends (TLAST) on the SCALE header, or on the OFFSET header, of its second run: the
    records before it are in, the input ended early: ERR_STREAM on both, nothing left hanging."""
    board = small_board(2, run_length=4)
    spec = board.cores[0].spec
    regs, stream = operation(spec, S.GaeMode.Q8_RUNS, np.random.default_rng(5), 9, spec.lanes, 0.9, 0.9, 1.0)
    first_run = 2 * spec.header_record_bytes + 4 * spec.input_record_bytes(S.GaeMode.Q8_RUNS)
    stream = stream[: first_run + headers * spec.header_record_bytes]
    got = run_operation(RtlCoreIP(rtl_simulation(board), "gae", spec, S.GAE_REGISTERS), regs, stream)
    expected = run_operation(GaeCoreIP(spec), regs, stream)
    assert got[1] == expected[1] == S.Status.DONE | S.Status.ERR_STREAM


@pytest.mark.parametrize("where", ["end of the first batch", "inside the second batch"])
def test_rtl_flags_tlast_before_the_last_batch_like_the_model(where, rtl_simulation):
    """BATCHES = 3: a TLAST on the first batch's last beat, or one beat into the second batch, ends the input early.

    The core has drained the first batch by the time the second one's TLAST arrives, so those records have left
    (without TLAST); the emulated IP sees the input only whole and sends none. Both say ERR_STREAM.
    """
    board = small_board(2)
    spec = board.cores[0].spec
    regs, stream = operation(spec, S.GaeMode.RAW, np.random.default_rng(2), 5, 2 * spec.lanes + 1, 0.9, 0.9, 1.0)
    whole = run_operation(GaeCoreIP(spec), regs, stream)[0]
    first = 6 * spec.input_record_bytes(S.GaeMode.RAW)
    inside = where.startswith("inside")
    stream = stream[: first + (spec.stream_bytes if inside else 0)]
    got = run_operation(RtlCoreIP(rtl_simulation(board), "gae", spec, S.GAE_REGISTERS), regs, stream)
    expected = run_operation(GaeCoreIP(spec), regs, stream)
    assert expected[0] == b"" and got[0] == (whole[: 5 * spec.output_record_bytes] if inside else b"")
    assert got[1] == expected[1] == S.Status.DONE | S.Status.ERR_STREAM


@pytest.mark.parametrize("where", ["end of the first chunk", "inside the second chunk"])
def test_rtl_flags_tlast_before_the_last_chunk_like_the_model(where, rtl_simulation):
    """CHUNKS = 2 (T = T_MAX + 5): a TLAST on the first chunk's last beat (its bootstrap row), or one beat into the
    second chunk, ends the input early: ERR_STREAM on both, the first chunk's records drained by the core only
    when the TLAST came after them."""
    board = small_board(2)
    spec = board.cores[0].spec
    regs, stream = operation(spec, S.GaeMode.RAW, np.random.default_rng(4), spec.t_max + 5, 2, 0.9, 0.9, 1.0)
    assert regs["CHUNKS"] == 2 and regs["T"] == 5
    whole = run_operation(GaeCoreIP(spec), regs, stream)[0]
    first = 6 * spec.input_record_bytes(S.GaeMode.RAW)
    inside = where.startswith("inside")
    stream = stream[: first + (spec.stream_bytes if inside else 0)]
    got = run_operation(RtlCoreIP(rtl_simulation(board), "gae", spec, S.GAE_REGISTERS), regs, stream)
    expected = run_operation(GaeCoreIP(spec), regs, stream)
    assert expected[0] == b"" and got[0] == (whole[: 5 * spec.output_record_bytes] if inside else b"")
    assert got[1] == expected[1] == S.Status.DONE | S.Status.ERR_STREAM


@pytest.mark.parametrize("mode", list(S.GaeMode))
def test_chained_chunks_cost_their_steps_plus_a_pipeline_each(mode, rtl_simulation):
    """T = 2.5 x T_MAX over two lane-batches: one operation, CYCLES = GaeSpec.cycles (3 chunks per lane-batch),
    output equal to the model's one long recursion."""
    board = small_board(2, lanes=3, t_max=12)
    spec = board.cores[0].spec
    regs, stream = operation(spec, mode, np.random.default_rng(7), 30, 2 * spec.lanes, 0.95, 0.9, 1.0)
    assert regs["CHUNKS"] == 3 and regs["T"] == 6
    got = run_operation(RtlCoreIP(rtl_simulation(board), "gae", spec, S.GAE_REGISTERS), regs, stream)
    assert got == run_operation(GaeCoreIP(spec), regs, stream)
    assert got[1] == S.Status.DONE and got[2] == spec.cycles(30, 2) == 2 * (30 + 3 * spec.pipeline_depth)


@pytest.mark.parametrize("lanes", [1, 8])
def test_compute_phase_is_t_plus_pipeline_depth_regardless_of_lanes(lanes, rtl_simulation):
    board = small_board(2, lanes=lanes, t_max=16)
    spec = board.cores[0].spec
    regs, stream = operation(spec, S.GaeMode.RAW, np.random.default_rng(lanes), 16, lanes, 0.99, 0.95, 1.0)
    out, status, cycles = run_operation(RtlCoreIP(rtl_simulation(board), "gae", spec, S.GAE_REGISTERS), regs, stream)
    assert status == S.Status.DONE and cycles == 16 + spec.pipeline_depth


def test_pipeline_depth_is_the_sum_of_the_hdl_stages():
    """The spec's depth is the HDL's: 2 (last row to its BRAM) + 1 (bootstrap pop) + 1 (BRAM read) + the read
    register + the PE's stages + 1 (write-back); the cycle test above measures the total, this names the parts. The
    dequantizer works on the way in (multiply, add the offset, clamp), so its stages are not in the compute's."""
    from pynq_rl.overlay.hdl.gae.dequant import LOAD_LATENCY
    from pynq_rl.overlay.hdl.gae.lane import READ_LATENCY
    from pynq_rl.overlay.hdl.gae.pe import PE_LATENCY

    assert LOAD_LATENCY == 3  # multiply, add the offset, clamp: one each, before the stacks
    assert (S.GaeSpec.read_latency, S.GaeSpec.pe_latency) == (READ_LATENCY, PE_LATENCY)
    assert S.GaeSpec().pipeline_depth == 2 + 1 + 1 + READ_LATENCY + PE_LATENCY + 1


def test_rtl_overlay_dumps_a_waveform(tmp_path):
    overlay = RLOverlay(backend="rtl", board=RTL_TEST_BOARD, vcd=str(tmp_path / "gae"))
    overlay.gae.compute(np.ones((3, 2)), np.zeros((4, 2)), np.zeros((3, 2)))
    overlay.device.simulation.end("test finished")
    vcd = tmp_path / "gae.vcd"
    assert vcd.is_file() and b"$enddefinitions" in vcd.read_bytes()[: 1 << 20]


def test_second_rtl_overlay_ends_the_first():
    first = RLOverlay(backend="rtl", board=RTL_TEST_BOARD)
    gae = first.gae
    RLOverlay(backend="rtl", board=RTL_TEST_BOARD)
    with pytest.raises(SimulationEnded, match="a newer rtl device started its own simulation"):
        gae.compute(np.ones((3, 2)), np.zeros((4, 2)), np.zeros((3, 2)))


def test_start_clears_cycles_like_the_model(rtl_simulation):
    """CYCLES belongs to the last operation: a refused START reads 0, not the previous count (found by cocotb)."""
    board = small_board(2)
    spec = board.cores[0].spec
    good_regs, good_stream = operation(spec, S.GaeMode.RAW, np.random.default_rng(3), 6, 2, 0.9, 0.9, 1.0)
    bad_regs = dict(good_regs, T=0)
    rtl = RtlCoreIP(rtl_simulation(board), "gae", spec, S.GAE_REGISTERS)
    got = [run_operation(rtl, good_regs, good_stream)[2], run_operation(rtl, bad_regs, good_stream[:0])[2]]
    model_ip = GaeCoreIP(spec)
    expected = [
        run_operation(model_ip, good_regs, good_stream)[2],
        run_operation(model_ip, bad_regs, good_stream[:0])[2],
    ]
    assert got == expected == [6 + spec.pipeline_depth, 0]


def timed_operation(sim, ip, regs: dict, stream: np.ndarray) -> tuple[bytes, int]:
    """One operation with an always-ready source and sink: its output and its cycles from START to the last beat."""
    start_operation(ip, regs)
    start, sent, out = sim.cycle, 0, bytearray()
    while True:  # both DMA channels at once, cycle by cycle
        accepted, data, last = ip.stream_duplex(
            stream[sent:] if sent < len(stream) else None, True, 1 << 24, max_cycles=1
        )
        sent += accepted
        out += data.tobytes()
        if last:
            return bytes(out), sim.cycle - start
        if not accepted and not len(data):
            sim.tick()


@pytest.mark.parametrize("mode", list(S.GaeMode))
def test_b_batches_cost_b_times_one_batch_plus_a_constant(mode, rtl_simulation):
    """The multi-batch RTL goal: an operation of B lane-batches takes B x (one batch's cycles) + a constant,
    B = 1..4. Exact in raw and q8-runs mode; in q8 block mode this build's records are one beat, so the loader's one
    record per 4 cycles (its dequantizers take one record at a time) sets the pace and its phase against the drain's
    beats moves a lane-batch's cost by up to 2 records (8 cycles) either way (measured 73 and 81, against 77 raw)."""
    board = small_board(2, lanes=3, t_max=12)
    spec = board.cores[0].spec
    sim = rtl_simulation(board)
    ip = RtlCoreIP(sim, "gae", spec, S.GAE_REGISTERS)
    totals = []
    for n_batches in (1, 2, 3, 4):
        regs, stream = operation(
            spec, mode, np.random.default_rng(n_batches), 12, n_batches * spec.lanes, 0.9, 0.9, 1.0
        )
        out, cycles = timed_operation(sim, ip, regs, stream)
        assert out == run_operation(GaeCoreIP(spec), regs, stream)[0]
        totals.append(cycles)
    per_batch = np.diff(totals)
    slack = 8 if mode == S.GaeMode.Q8 else 0
    assert per_batch.min() > 0 and per_batch.max() - per_batch.min() <= slack, totals
    assert abs((totals[3] - totals[0]) - 3 * per_batch[0]) <= slack, totals


@pytest.mark.parametrize("mode", list(S.GaeMode))
def test_lane_batches_stream_at_the_bus_bound(mode, rtl_simulation):
    """The stream goal on the Pynq-Z2's GAE shape (8 lanes, 64-bit stream, T = 64): with both DMA channels running,
    a lane-batch costs <= 1.1 x max(input beats, output beats) in steady state. The next chunk loads into the rows
    the drain frees and the drain trails the write-backs; load, compute and drain one after another took 2.02 x
    (raw) and 1.55 x (q8)."""
    board = small_board(2, lanes=8, t_max=64)
    spec = board.cores[0].spec
    sim = rtl_simulation(board)
    ip = RtlCoreIP(sim, "gae", spec, S.GAE_REGISTERS)
    totals = {}
    for n_batches in (1, 3):
        regs, stream = operation(
            spec, mode, np.random.default_rng(n_batches), 64, n_batches * spec.lanes, 0.99, 0.95, 1.0
        )
        out, totals[n_batches] = timed_operation(sim, ip, regs, stream)
        assert out == run_operation(GaeCoreIP(spec), regs, stream)[0]
    per_batch = (totals[3] - totals[1]) / 2
    bound = max(65 * spec.input_record_bytes(mode), 64 * spec.output_record_bytes) / spec.stream_bytes
    assert per_batch <= 1.1 * bound, (per_batch, bound)
