"""``pynq-rl doctor`` (pynq_rl/host/doctor.py): per-core self-tests against the numpy models on emu, rtl and a board
(a board emulated here by an emulated device under the board's name and bitstream directory)."""

import dataclasses
import re
import types

import numpy as np
import pytest

from pynq_rl.host import doctor
from pynq_rl.host import overlay as host_overlay
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build import hwh as hwh_build
from pynq_rl.overlay.models import gae as gae_model
from pynq_rl.overlay.models import replay as replay_model

LINE = re.compile(r"^(board|emu|rtl)\s+(\w+)\s+(PASS|FAIL|SKIP)  ")


def _board(*cores: str) -> S.BoardSpec:
    default = S.board(None)
    return dataclasses.replace(default, cores=tuple(default.slot(c) for c in cores))


def test_emu_self_tests_pass_bit_exact_with_cycles_and_throughput():
    lines = []
    results = doctor.run_doctor(["emu"], echo=lines.append)
    by_core = {r.core: r for r in results}
    assert [r.backend for r in results] == ["emu"] * len(S.board(None).cores)
    for core in ("gae", "replay", "parsa"):
        result = by_core[core]
        assert result.status == "PASS", result.detail
        assert result.cycles > 0 and result.items_per_s > 0 and result.wall_s > 0
    spec = S.board(None).slot("gae").spec
    assert by_core["gae"].cycles == min(spec.t_max, 32) + spec.pipeline_depth
    assert by_core["gae"].items_per_s == pytest.approx(32 * min(spec.lanes, 8) * 100e6 / by_core["gae"].cycles)
    for core in set(by_core) - set(doctor.SELF_TESTS):
        assert by_core[core].status == "SKIP" and by_core[core].detail == "no self-test for this core yet"
    assert all(LINE.match(line) for line in lines)
    assert re.search(
        r"emu   gae     PASS  T=32 N=8 raw: bit-exact vs pynq_rl/overlay/models/gae\.py.*\(\d+ cycles, "
        r"[\d.]+ M/s at 100 MHz per pynq_rl\.hwh, call [\d.]+ ms\)$",
        "\n".join(lines),
        re.M,
    )


def test_rtl_runs_the_core_in_a_small_build():
    """(The replay core's rtl run costs as much again; its doctor logic is covered on emu, its rtl model by
    tests/replay, and a missing HDL by the test below.)"""
    from pynq_rl.host.backends import rtl

    lines = []
    try:
        results = doctor.run_doctor(["rtl"], board=_board("gae"), echo=lines.append)
    finally:
        active = getattr(rtl, "_active", None)
        if active is not None:
            active.end("test over")
    (gae,) = results
    assert (gae.backend, gae.core, gae.status) == ("rtl", "gae", "PASS"), gae.detail
    assert gae.detail.startswith("T=16 N=2 raw: bit-exact")  # the small build of RTL_CORES
    assert gae.cycles == 16 + doctor.RTL_CORES["gae"].pipeline_depth
    assert LINE.match(lines[0])


def test_cores_the_backend_cannot_build_are_reported_not_available(monkeypatch):
    seen = []

    def overlay(backend=None, board=None, **kwargs):
        seen.append((board.cores[0].name, board.cores[0].spec))
        raise ValueError(f"the rtl backend has no HDL for core {board.cores[0].name!r} yet")

    monkeypatch.setattr(doctor, "RLOverlay", overlay)
    lines = []
    results = doctor.run_doctor(["rtl"], board=_board("gae", "replay"), echo=lines.append)
    assert seen == [(name, doctor.RTL_CORES[name]) for name in ("gae", "replay")]
    assert [(r.core, r.status, r.ok) for r in results] == [("gae", "SKIP", True), ("replay", "SKIP", True)]
    assert lines[1] == "rtl   replay  SKIP  not available: the rtl backend has no HDL for core 'replay' yet"


def test_a_run_that_skips_every_core_exits_1_saying_nothing_was_checked(monkeypatch):
    def overlay(backend=None, board=None, **kwargs):
        raise ValueError("verilator not found")

    monkeypatch.setattr(doctor, "RLOverlay", overlay)
    lines = []
    assert doctor.main(["rtl"], board=_board("gae", "replay"), echo=lines.append) == 1
    assert lines[-2:] == [
        "doctor: 0 PASS, 0 FAIL, 2 SKIP",
        "doctor: nothing was checked: every core was skipped (the reasons are above)",
    ]


def test_a_core_that_disagrees_with_the_model_fails(monkeypatch):
    def off_by_one(*args, **kwargs):
        expected = gae_model.gae_fixed(*args, **kwargs)
        advantages = expected.advantages.copy()
        advantages[3, 1] += 1
        return dataclasses.replace(expected, advantages=advantages)

    monkeypatch.setattr(doctor, "gae_model", types.SimpleNamespace(gae_fixed=off_by_one))
    (result,) = doctor.run_doctor(["emu"], board=_board("gae"), echo=None)
    assert result.status == "FAIL" and not result.ok
    assert result.detail == "T=32 N=8 raw: 1 of 512 outputs differ from pynq_rl/overlay/models/gae.py"


def test_a_cycle_count_that_disagrees_with_the_model_fails(monkeypatch):
    def slower(*args, **kwargs):
        expected = gae_model.gae_fixed(*args, **kwargs)
        return dataclasses.replace(expected, cycles=expected.cycles + 1)

    monkeypatch.setattr(doctor, "gae_model", types.SimpleNamespace(gae_fixed=slower))
    (result,) = doctor.run_doctor(["emu"], board=_board("gae"), echo=None)
    assert result.status == "FAIL"
    assert re.fullmatch(
        r"T=32 N=8 raw: bit-exact, but CYCLES=(\d+), the model says (\d+) \(T \+ pipeline_depth\)", result.detail
    )


def test_a_replay_core_that_samples_other_indices_fails(monkeypatch):
    class Shifted(replay_model.SumTree):
        def sample(self, count, uniforms=None, stride=None):
            indices, codes = super().sample(count, uniforms, stride)
            return np.roll(indices, 1), np.roll(codes, 1)

    monkeypatch.setattr(
        doctor, "replay_model", types.SimpleNamespace(SumTree=Shifted, encode_priorities=replay_model.encode_priorities)
    )
    (result,) = doctor.run_doctor(["emu"], board=_board("replay"), echo=None)
    assert result.status == "FAIL"
    assert re.fullmatch(
        r"64 priorities, 16 stratified samples: \d+ sampled indices differ from "
        r"pynq_rl/overlay/models/replay\.py",
        result.detail,
    )


def test_on_a_board_the_overlay_is_found_by_the_device_name(tmp_path, monkeypatch):
    import pynq

    from pynq_rl.host.backends.emu import EmuDevice

    # a ZCU106 carrying the GAE and replay cores, its bitstream installed where RLOverlay looks on a board
    zcu106 = dataclasses.replace(S.board("ZCU106"), cores=tuple(S.board("ZCU106").slot(c) for c in ("gae", "replay")))
    monkeypatch.setattr(S.boards, "BOARDS", {**S.BOARDS, "ZCU106": zcu106})  # where S.board() looks boards up
    device = EmuDevice(zcu106)
    device.install_clocks()
    monkeypatch.setattr(pynq.Device, "_active_device", device, raising=False)  # what PYNQ reports on the board
    monkeypatch.setattr(host_overlay, "BITSTREAM_DIR", tmp_path)
    hwh_build.write_overlay_files(zcu106, tmp_path / "zcu106")
    monkeypatch.setattr(doctor, "ON_TARGET", True)
    assert doctor.default_backends() == ["board"]
    lines = []
    assert doctor.main(echo=lines.append) == 0
    assert [line.split()[:3] for line in lines[:-1]] == [["board", "gae", "PASS"], ["board", "replay", "PASS"]]
    assert "T=32 N=8 raw" in lines[0] and "at 187.5 MHz" in lines[0]
    assert lines[-1] == "doctor: 2 PASS, 0 FAIL, 0 SKIP"


def _board_with_hwh(tmp_path, monkeypatch, act_mhz: str | None) -> S.BoardSpec:
    """A ZCU106 with its GAE core only, installed where RLOverlay looks on a board, its .hwh saying that PL clock 0
    really runs at ``act_mhz`` (None: the .hwh records no rate)."""
    import xml.etree.ElementTree as ET

    import pynq

    from pynq_rl.host.backends.emu import EmuDevice

    zcu106 = dataclasses.replace(S.board("ZCU106"), cores=(S.board("ZCU106").slot("gae"),))
    monkeypatch.setattr(S.boards, "BOARDS", {**S.BOARDS, "ZCU106": zcu106})  # where S.board() looks boards up
    device = EmuDevice(zcu106)
    device.install_clocks()
    monkeypatch.setattr(pynq.Device, "_active_device", device, raising=False)
    monkeypatch.setattr(host_overlay, "BITSTREAM_DIR", tmp_path)
    hwh = hwh_build.write_overlay_files(zcu106, tmp_path / "zcu106").with_suffix(".hwh")
    tree = ET.parse(hwh)
    params = next(m for m in tree.iter("MODULE") if m.get("MODTYPE") == "zynq_ultra_ps_e").find("PARAMETERS")
    (act,) = [p for p in params if p.get("NAME") == "PSU__CRL_APB__PL0_REF_CTRL__ACT_FREQMHZ"]
    if act_mhz is None:
        params.remove(act)
    else:
        act.set("VALUE", act_mhz)
    tree.write(hwh)
    return zcu106


def test_rates_are_at_the_clock_the_loaded_overlays_hwh_records(tmp_path, monkeypatch):
    """Vivado's PLL gives 187.498 MHz for the 187.5 asked: the throughput is the one at the rate the PL runs at."""
    _board_with_hwh(tmp_path, monkeypatch, "187.498123")
    lines = []
    (result,) = doctor.run_doctor(["board"], echo=lines.append)
    ol = host_overlay.RLOverlay(backend="board")
    assert ol.pl_clock == (187.498123, "pynq_rl.hwh")
    assert ol.info()["fclk_mhz"] == 187.498123 and ol.info()["fclk_source"] == "pynq_rl.hwh"
    assert result.items_per_s == pytest.approx(32 * 8 * 187.498123e6 / result.cycles)
    assert "at 187.498 MHz per pynq_rl.hwh" in lines[0]


def test_without_a_clock_in_the_hwh_rates_are_at_spec_fclk_and_say_so(tmp_path, monkeypatch):
    _board_with_hwh(tmp_path, monkeypatch, None)
    lines = []
    (result,) = doctor.run_doctor(["board"], echo=lines.append)
    assert result.items_per_s == pytest.approx(32 * 8 * 187.5e6 / result.cycles)
    assert "at 187.5 MHz per spec.py (pynq_rl.hwh records no PSU__CRL_APB__PL0_REF_CTRL__ACT_FREQMHZ)" in lines[0]


def test_a_board_without_a_bitstream_fails_with_the_reason(tmp_path, monkeypatch):
    import pynq

    from pynq_rl.host.backends.emu import EmuDevice

    device = EmuDevice(S.board("Pynq-Z2"))
    monkeypatch.setattr(pynq.Device, "_active_device", device, raising=False)
    monkeypatch.setattr(host_overlay, "BITSTREAM_DIR", tmp_path)
    lines = []
    assert doctor.main(["board"], echo=lines.append) == 1
    assert re.fullmatch(
        r"board overlay FAIL  overlay did not load: FileNotFoundError: no bitstream for Pynq-Z2 at "
        r".*/pynq-z2/pynq_rl\.bit; build it on a machine with Vivado .*",
        lines[0],
    )
    assert lines[-1] == "doctor: 0 PASS, 1 FAIL, 0 SKIP"
