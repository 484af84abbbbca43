"""The ``pynq-rl`` command line: every sub-command that runs without a board."""
import json
import shutil

import pytest

from pynq_rl.cli import main


def test_info_reports_cores_and_registers(capsys):
    assert main(["info", "--backend", "emu"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["backend"] == "emu" and info["cores"]["gae"]["id"] == "0x6ae00100"


def test_build_hwh_writes_the_overlay_files(tmp_path, capsys):
    assert main(["build", "hwh", "--board", "ZCU106", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "pynq_rl.hwh").is_file() and (tmp_path / "pynq_rl.bit").is_file()


@pytest.mark.skipif(shutil.which("verilator") is None, reason="verilator not installed")
def test_build_verilog_converts_and_lints(tmp_path, capsys):
    assert main(["build", "verilog", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "gae_core_l8_t1024_k2_s8.v").is_file()


def test_unknown_backend_is_rejected(capsys):
    with pytest.raises(SystemExit):
        main(["info", "--backend", "fpga"])
    assert "invalid choice: 'fpga'" in capsys.readouterr().err
