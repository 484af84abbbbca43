"""The ``pynq-rl`` command line: every sub-command that runs without a board, and the agents' options generated from
their ``Args`` dataclasses."""

import argparse
import dataclasses
import json
import os
import re
import shutil

import pytest

from pynq_rl.cli import build_parser, main
from pynq_rl.host.agents import dqn, ppo, sarsa
from pynq_rl.host.agents.distributed import apex_args
from pynq_rl.host.agents.options import field_docs, given
from pynq_rl.host.agents.run import is_computed


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


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["train", "ppo", "--env", "NoSuchEnv-v0", "--steps", "2048"],
            r"NameNotFound: Environment `NoSuchEnv` doesn't exist",
        ),
        # the message names the flags the user typed (the Python API names the fields: total_timesteps ...)
        (["train", "ppo", "--steps", "-5"], r"--steps must be >= 1, not -5"),
        (["train", "dqn", "--steps", "0"], r"--steps must be >= 1, not 0"),
        (["train", "dqn", "--steps", "100", "--checkpoint-every", "-1"], r"--checkpoint-every must be >= 0, not -1"),
        (["train", "ppo", "--num-minibatches", "3"], r"--num-envs \* --num-steps = 1024 is not divisible by --num-min"),
        (
            ["train", "sarsa", "--episodes", "-1", "--backend", "host"],
            r"--episodes, --tilings and --tiles must be >= 1",
        ),
        # off a board: no PL device, or (once an emulated device is active in this process) no bitstream
        (
            ["train", "dqn", "--backend", "board"],
            r"(backend 'board' needs a PYNQ board with its PL|no bitstream for Pynq)",
        ),
        (["train", "ppo", "--board", "Ultra96", "--steps", "2048"], r"unsupported board: expected one of"),
        (["train", "dqn", "--resume", "no/such/checkpoint.npz"], r"No such file or directory: no/such/checkpoint\.npz"),
        (
            ["train", "ppo", "--env", "Pendulum-v1", "--backend", "host", "--steps", "1000"],  # Box: CleanRL's 1 x 2048
            r"--steps = 1000 is smaller than one batch \(--num-envs \* --num-steps = 2048\)",
        ),
        (
            ["train", "sarsa", "--env", "CartPole-v1", "--backend", "host", "--episodes", "1"],
            r"observation bounds must be finite for tile coding "
            r"\(give `bounds`; on the command line --bounds=LOWS:HIGHS\)",
        ),
        (
            ["train", "sarsa", "--env", "CartPole-v1", "--backend", "host", "--episodes", "1", "--bounds=-1,-1:1,1"],
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


# ---------------------------------------------------------------------------------------------------------------------
# The agents' options, generated from their Args dataclasses
# ---------------------------------------------------------------------------------------------------------------------
AGENTS = {"ppo": ppo.Args, "dqn": dqn.Args, "sarsa": sarsa.Args, "apex": apex_args.Args}


def agent_parser(name: str) -> argparse.ArgumentParser:
    """The ``train <name>`` sub-parser."""
    (train,) = (a for a in build_parser()._subparsers._group_actions if "train" in a.choices)
    (agents,) = train.choices["train"]._subparsers._group_actions
    return agents.choices[name]


def parse(argv: list[str]):
    """The agent's Args that ``pynq-rl train ...argv`` runs with."""
    args = build_parser().parse_args(["train", *argv])
    return args.make_args(given(args, args.args_cls))


@pytest.mark.parametrize("name", AGENTS)
def test_every_args_field_is_an_option_with_the_args_default_and_docstring(name):
    args_cls = AGENTS[name]
    docs = field_docs(args_cls)
    actions = {a.dest: a for a in agent_parser(name)._actions if a.default is not argparse.SUPPRESS}  # not --raw
    fields = {f.name for f in dataclasses.fields(args_cls) if not is_computed(f)}
    computed = {f.name for f in dataclasses.fields(args_cls) if is_computed(f)}
    assert fields <= set(actions) and not computed & set(actions)  # every field reachable, runtime ones not
    defaults = args_cls()
    for field in fields:
        assert actions[field].default.value == getattr(defaults, field), field
        assert docs[field] and actions[field].help.replace("%%", "%") == docs[field], field
    assert parse([name]) == defaults  # nothing given: exactly Args()


@pytest.mark.parametrize("name", AGENTS)
def test_help_shows_each_fields_docstring_and_default(name, capsys):
    with pytest.raises(SystemExit):
        main(["train", name, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--backend {host,emu,rtl,verilator,board} " in text and "(default: emu)" in text
    assert "--seed SEED seed of the experiment" in text and "--no-progress" in text
    if name in ("ppo", "dqn"):
        steps = AGENTS[name]().total_timesteps
        assert f"--steps STEPS total timesteps of the experiments (default: {steps})" in text


def test_the_command_lines_flag_names_are_kept():
    flags = {name: {s for a in agent_parser(name)._actions for s in a.option_strings} for name in AGENTS}
    shared = {"--env", "--seed", "--out", "--board", "--backend", "--no-progress", "--tensorboard", "--resume"}
    assert shared - {"--resume"} <= flags["apex"] and all(shared <= flags[n] for n in ("ppo", "dqn", "sarsa"))
    assert {"--steps", "--nn", "--timeout", "--checkpoint-every"} <= flags["ppo"] & flags["dqn"]
    assert {"--raw", "--reward-norm", "--norm-obs", "--no-norm-reward"} <= flags["ppo"]
    assert {"--episodes", "--alpha", "--epsilon", "--frac-bits", "--tiling", "--bounds", "--timeout"} <= flags["sarsa"]
    assert {"--actors", "--replay-address", "--ray-address", "--max-updates", "--max-seconds"} <= flags["apex"]
    assert {"--sample-prefetch", "--updates-per-insert"} <= flags["apex"] and "--steps" not in flags["apex"]
    assert not any(
        f.startswith("--replay-backend") or f.startswith("--gae-backend") for f in set().union(*flags.values())
    )


def test_options_reach_the_args():
    config = parse(["dqn", "--hidden-sizes", "8", "8", "--no-double-q", "--checkpoint-every", "100", "--timeout", "2"])
    assert config == dqn.Args(hidden_sizes=(8, 8), double_q=False, checkpoint_every=100, timeout_s=2.0)
    assert parse(["ppo", "--raw"]) == parse(["ppo", "--no-quantize"]) == ppo.Args(quantize=False)
    bounds = parse(["sarsa", "--bounds=-1,-2:1,2", "--backend", "host"])
    assert (bounds.bounds, bounds.backend) == (((-1.0, -2.0), (1.0, 2.0)), "host")
    assert parse(["apex", "--extra", '{"note": "x"}', "--actors", "3"]) == apex_args.Args(
        extra={"note": "x"}, num_actors=3
    )


def test_ppo_on_a_box_space_gets_cleanrls_defaults_unless_an_option_says_otherwise():
    assert parse(["ppo", "--env", "Pendulum-v1"]) == ppo.args_for("Pendulum-v1")
    config = parse(["ppo", "--env", "Pendulum-v1", "--num-envs", "8"])  # given, though it equals the discrete default
    assert (config.num_envs, config.num_steps) == (8, ppo.CONTINUOUS_DEFAULTS["num_steps"])


def test_field_docs_reads_the_string_under_each_field():
    @dataclasses.dataclass
    class Example:
        a: int = 1
        """the first
        field"""
        b: str = "x"
        c: float = 0.5
        """the third"""

    assert field_docs(Example) == {"a": "the first field", "c": "the third"}
