"""The ``pynq-rl`` command line: every sub-command that runs without a board."""

import json
import os
import re
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
    assert (
        main(
            [
                "train",
                "dqn",
                "--backend",
                backend,
                "--steps",
                "300",
                "--seed",
                "1",
                "--out",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["global_step"] == 300 and summary["start_step"] == 0
    assert summary["replay_backend"] == backend
    assert summary["run_dir"].startswith(str(tmp_path)) and summary["checkpoint"].endswith("checkpoint.npz")


def test_train_dqn_resumes_from_its_checkpoint(tmp_path, capsys):
    assert main(["train", "dqn", "--backend", "numpy", "--steps", "200", "--out", str(tmp_path), "--no-progress"]) == 0
    checkpoint = json.loads(capsys.readouterr().out)["checkpoint"]
    assert (
        main(
            [
                "train",
                "dqn",
                "--backend",
                "numpy",
                "--steps",
                "300",
                "--out",
                str(tmp_path),
                "--no-progress",
                "--resume",
                checkpoint,
            ]
        )
        == 0
    )
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
        assert (
            main(
                [
                    "train",
                    "ppo",
                    "--backend",
                    "host",
                    "--nn",
                    "numpy",
                    "--steps",
                    "1024",
                    "--seed",
                    str(seed),
                    "--out",
                    str(tmp_path),
                    "--tensorboard",
                    "--no-progress",
                ]
            )
            == 0
        )
        runs.append(json.loads(capsys.readouterr().out)["run_dir"])
        assert any(name.startswith("events.out.tfevents") for name in os.listdir(runs[-1]))
    out = tmp_path / "curves.png"
    assert main(["plot", *runs, "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out) and out.stat().st_size > 10_000


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["train", "ppo", "--env", "NoSuchEnv-v0", "--steps", "2048"],
            r"NameNotFound: Environment `NoSuchEnv` doesn't exist",
        ),
        (["train", "ppo", "--steps", "-5"], r"total_timesteps must be >= 1, not -5"),
        (["train", "dqn", "--steps", "0"], r"total_timesteps must be >= 1, not 0"),
        (["train", "sarsa", "--episodes", "-1", "--backend", "float"], r"episodes, tilings and tiles must be >= 1"),
        # off a board: no PL device, or (once an emulated device is active in this process) no bitstream
        (
            ["train", "dqn", "--backend", "board"],
            r"(backend 'board' needs a PYNQ board with its PL|no bitstream for Pynq)",
        ),
        (["train", "ppo", "--board", "Ultra96", "--steps", "2048"], r"unsupported board: expected one of"),
        (["train", "dqn", "--resume", "no/such/checkpoint.npz"], r"No such file or directory: no/such/checkpoint\.npz"),
        (
            ["train", "ppo", "--env", "Pendulum-v1", "--backend", "host", "--steps", "1000"],  # Box: CleanRL's 1 x 2048
            r"total_timesteps = 1000 is smaller than one batch \(num_envs \* num_steps = 2048\)",
        ),
        (
            ["train", "sarsa", "--env", "CartPole-v1", "--backend", "float", "--episodes", "1"],
            r"observation bounds must be finite for tile coding "
            r"\(give `bounds`; on the command line --bounds=LOWS:HIGHS\)",
        ),
        (
            ["train", "sarsa", "--env", "CartPole-v1", "--backend", "float", "--episodes", "1", "--bounds=-1,-1:1,1"],
            r"bounds give 2 lows and 2 highs; the observation has 4 dimensions",
        ),
        (["info", "--board", "Ultra96"], r"unsupported board: expected one of"),
        (["plot", "no/such/run"], r"'no/such/run' is not a run directory"),
    ],
)
def test_mistakes_cost_one_line_exit_1_and_leave_no_run_directory(tmp_path, capsys, argv, message):
    out = tmp_path / "runs"
    full = argv + (["--out", str(out), "--no-progress"] if argv[0] == "train" else [])
    assert main(full) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.match(r"^error: " + message, err[0]), err
    assert err[0].endswith("(--debug shows the traceback)")
    assert not out.exists() or os.listdir(out) == []  # no run directory left behind


def test_out_naming_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert (
        main(["train", "ppo", "--backend", "host", "--steps", "2048", "--out", str(tmp_path / "file"), "--no-progress"])
        == 1
    )
    err = capsys.readouterr().err.strip()
    assert re.match(r"^error: Not a directory: .*file/CartPole-v1__ppo__0__\d+ \(--debug", err), err


def test_debug_shows_the_exception(tmp_path):
    with pytest.raises(ValueError, match=r"total_timesteps must be >= 1, not -5"):
        main(["--debug", "train", "ppo", "--steps", "-5", "--out", str(tmp_path), "--no-progress"])


def test_a_failure_after_the_run_started_keeps_nothing_empty(tmp_path, monkeypatch, capsys):
    """A run that fails before recording anything is removed; the error is still one line."""
    from pynq_rl.host.agents import ppo

    def broken(*args, **kwargs):
        raise TimeoutError("GAE core not DONE after 5.0 s (STATUS=BUSY)")

    monkeypatch.setattr(ppo, "collect_rollout", broken)
    assert main(["train", "ppo", "--backend", "host", "--steps", "2048", "--out", str(tmp_path), "--no-progress"]) == 1
    assert capsys.readouterr().err.startswith("error: GAE core not DONE after 5.0 s (STATUS=BUSY)")
    assert os.listdir(tmp_path) == []


def test_build_verilog_without_verilator_suggests_no_lint_and_writes_nothing(tmp_path, capsys, monkeypatch):
    import shutil as shutil_module

    real = shutil_module.which
    monkeypatch.setattr(shutil_module, "which", lambda name, *a, **k: None if name == "verilator" else real(name))
    assert main(["build", "verilog", "--out", str(tmp_path / "v")]) == 1
    err = capsys.readouterr().err
    assert "or pass --no-lint" in err and not (tmp_path / "v").exists()


def test_sarsa_bounds_option_makes_cartpole_tile_codable(tmp_path, capsys):
    bounds = "--bounds=-2.4,-3,-0.21,-3.5:2.4,3,0.21,3.5"
    tiling = '{"tilings": [{"dims": [0, 1, 2, 3], "tilings": 4, "tiles": 4}]}'
    assert (
        main(
            [
                "train",
                "sarsa",
                "--env",
                "CartPole-v1",
                "--backend",
                "float",
                "--episodes",
                "2",
                bounds,
                "--tiling",
                tiling,
                "--out",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["episodes"] == 2
    with pytest.raises(SystemExit):
        main(["train", "sarsa", "--bounds=1,2:3", "--out", str(tmp_path)])
    assert "2 lows but 1 highs in '1,2:3'" in capsys.readouterr().err
