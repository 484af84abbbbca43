"""The ``pynq-rl`` command line: every sub-command that runs without a board."""
import json
import os
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


@pytest.mark.parametrize("backend", ["numpy", "emu"])
def test_train_dqn_runs_and_prints_its_summary(tmp_path, capsys, backend):
    assert main(["train", "dqn", "--backend", backend, "--steps", "300", "--seed", "1", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["global_step"] == 300 and summary["start_step"] == 0
    assert summary["replay_backend"] == backend
    assert summary["run_dir"].startswith(str(tmp_path)) and summary["checkpoint"].endswith("checkpoint.npz")


def test_train_dqn_resumes_from_its_checkpoint(tmp_path, capsys):
    assert main(["train", "dqn", "--backend", "numpy", "--steps", "200", "--out", str(tmp_path), "--no-progress"]) == 0
    checkpoint = json.loads(capsys.readouterr().out)["checkpoint"]
    assert main(["train", "dqn", "--backend", "numpy", "--steps", "300", "--out", str(tmp_path), "--no-progress",
                 "--resume", checkpoint]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["start_step"], summary["global_step"]) == (200, 300)


def test_train_dqn_rejects_an_unknown_backend(capsys):
    with pytest.raises(SystemExit):
        main(["train", "dqn", "--backend", "torch"])
    assert "invalid choice: 'torch'" in capsys.readouterr().err


def test_train_with_tensorboard_and_plot_the_runs(tmp_path, capsys):
    pytest.importorskip("tensorboardX")
    runs = []
    for seed in (0, 1):
        assert main(["train", "ppo", "--backend", "host", "--nn", "numpy", "--steps", "1024", "--seed", str(seed),
                     "--out", str(tmp_path), "--tensorboard", "--no-progress"]) == 0
        runs.append(json.loads(capsys.readouterr().out)["run_dir"])
        assert any(name.startswith("events.out.tfevents") for name in os.listdir(runs[-1]))
    out = tmp_path / "curves.png"
    assert main(["plot", *runs, "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out) and out.stat().st_size > 10_000
