"""The ``pynq-rl`` command line's options: the agents' generated from their ``Args`` dataclasses, and what a new
user meets (defaults in ``--help``, errors naming the flags typed, ``--debug`` anywhere, suggestions, the last
line of a run)."""

import argparse
import dataclasses
import json
import math
import os
import re
import sys

import pytest

from pynq_rl.cli import build_parser, main
from pynq_rl.host.agents import distributed, dqn, ppo, sarsa
from pynq_rl.host.agents.common.options import field_docs
from pynq_rl.host.agents.common.run import is_computed
from pynq_rl.host.agents.distributed import apex_args
from tests.cli_harness import agent_parser, parse

# ---------------------------------------------------------------------------------------------------------------------
# The agents' options, generated from their Args dataclasses
# ---------------------------------------------------------------------------------------------------------------------
AGENTS = {"ppo": ppo.Args, "dqn": dqn.Args, "sarsa": sarsa.Args, "apex": apex_args.Args}


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


# ---------------------------------------------------------------------------------------------------------------------
# What a new user meets: defaults in --help, errors naming the flags typed, --debug anywhere, suggestions, the last line
# ---------------------------------------------------------------------------------------------------------------------
def all_parsers():
    """``(command, parser)`` for every parser of the command line (``"train ppo"``, ``"build hwh"``...)."""
    from pynq_rl.host.agents.common.argparsing import walk

    return [(p.prog.removeprefix("pynq-rl").strip() or "(top)", p) for p in walk(build_parser())]


def shown_default(action: argparse.Action) -> str | None:
    """The default ``--help`` must show for ``action`` (None: one that says nothing, which it must not show). An
    agent's option (its default wrapped by options.py) shows even a None: its docstring says what None means."""
    field = hasattr(action.default, "value")
    value = action.default.value if field else action.default
    if (value is None and not field) or value is argparse.SUPPRESS or (action.nargs == 0 and value is False):
        return None
    return str(action.default)


@pytest.mark.parametrize("command, parser", all_parsers(), ids=[c for c, _ in all_parsers()])
def test_every_help_shows_every_default_and_no_none(command, parser):
    text = " ".join(parser.format_help().split())
    if not command.startswith("train "):
        assert "(default: None)" not in text
    for action in parser._actions:
        default = shown_default(action)
        if action.option_strings and default is not None:
            assert f"(default: {' '.join(default.split())})" in text, (command, action.option_strings)


def test_help_shows_a_default_path_whole_where_it_has_hyphens(monkeypatch):
    """A checkout such as ``~/pynq-rl`` puts hyphens in the build commands' default paths: the help wraps before the
    path, never inside it."""
    from pynq_rl.host.agents.common.argparsing import Parser

    monkeypatch.setenv("COLUMNS", "80")
    path = "/home/someone/src/pynq-rl-checkout-with-a-long-name/pynq_rl/overlay/build/out"
    parser = Parser(prog="pynq-rl build tcl")
    parser.add_argument("--out", default=path, help="build directory root")
    shown = parser.format_help()
    assert path in shown, shown
    assert f"(default: {path})" in " ".join(shown.split())


def test_help_shows_the_budgets_and_the_hand_written_defaults(capsys):
    expected = {
        ("train", "ppo"): "--steps STEPS total timesteps of the experiments (default: 300000)",
        ("train", "dqn"): "--steps STEPS total timesteps of the experiments (default: 150000)",
        ("train", "sarsa"): "(default: 500)",
        ("train", "apex"): "(default: 50000)",
        ("plot",): "--smooth SMOOTH episodes in the running mean (default: 20)",
        ("build", "tcl"): "--jobs JOBS Vivado run jobs (default: 4)",
        ("build", "hwh"): "(default: Pynq-Z2)",
        ("build", "verilog"): "--out OUT output directory (default: pynq_rl/overlay/build/out)",
        ("doctor",): "--board BOARD Pynq-Z2 or ZCU106 (default: the board PYNQ reports",
    }
    for argv, shown in expected.items():
        with pytest.raises(SystemExit):
            main([*argv, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert shown in text, (argv, text)
    with pytest.raises(SystemExit):
        main(["train", "sarsa", "--help"])
    assert re.search(r"--episodes EPISODES .*\(default: 500\)", " ".join(capsys.readouterr().out.split()))


@pytest.mark.parametrize(
    "argv, message",
    [
        # Ape-X's own options, refused before Ray (the driver module is not even importable here)
        (["train", "apex", "--max-seconds", "-1"], r"--max-seconds must be a number > 0, not -1.0"),
        (["train", "apex", "--max-updates", "0"], r"--max-updates must be an integer >= 1, not 0"),
        (
            ["train", "apex", "--sample-prefetch", "-1"],
            r"--sample-prefetch must be an integer >= 0 \(0: none\), not -1",
        ),
        (["train", "apex", "--actors", "0"], r"--actors must be an integer >= 1, not 0"),
        (["train", "apex", "--replay-retry-s", "0"], r"--replay-retry-s must be a number > 0, not 0.0"),
        (["train", "apex", "--learning-starts", "60000"], r"--learning-starts = 60000 exceeds --buffer-size = 50000"),
        (
            ["train", "apex", "--updates-per-insert", "-1"],
            r"--updates-per-insert must be a number >= 0 \(0: unlimited\)",
        ),
        # values the agents used to pass on to torch, the GAE driver or numpy, which named no flag
        (["train", "ppo", "--learning-rate", "-1"], r"--learning-rate must be a number in \(0, 1\], not -1.0"),
        (["train", "ppo", "--gamma", "2"], r"--gamma must be a number in \[0, 1\], not 2.0"),
        (["train", "ppo", "--target-kl", "0"], r"--target-kl must be a number > 0 \(None: no early stop\)"),
        (["train", "dqn", "--hidden-sizes", "0"], r"each of --hidden-sizes must be an integer >= 1, not \(0,\)"),
        (["train", "dqn", "--max-grad-norm", "-1"], r"--max-grad-norm must be a number > 0, not -1.0"),
        (["train", "sarsa", "--seed", "-1"], r"--seed must be an integer >= 0, not -1"),
        # values that used to start a run and fail in torch or the replay driver, leaving a run directory
        (["train", "ppo", "--learning-rate", "inf"], r"--learning-rate must be a number in \(0, 1\], not inf$"),
        (["train", "ppo", "--ent-coef", "inf"], r"--ent-coef must be a number <= 1000000, not inf$"),
        (["train", "dqn", "--batch-size", "100000000"], r"--batch-size must be an integer <= 2\*\*20, not 100000000$"),
        (["train", "dqn", "--per-eps", "nan"], r"--per-eps must be a number in \(0, 1\], not nan$"),
        # a combination names every flag in it, so the one typed is among them
        (["train", "apex", "--n-step", "349"], r"--rate-limit-tolerance 100.0 is too small .*\+ --n-step 349\)"),
        (
            ["train", "apex", "--target-return", "nan"],
            r"--target-return must be a number in \[-2\*\*53, 2\*\*53\] or inf",
        ),
    ],
)
def test_errors_name_the_flags_typed(tmp_path, capsys, monkeypatch, argv, message):
    import sys

    monkeypatch.setitem(sys.modules, "pynq_rl.host.agents.distributed.apex", None)  # Ray must not be needed
    assert main([*argv, "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.match(r"^error: " + message, err[0]), err
    assert os.listdir(tmp_path) == []


def test_a_malformed_tiling_is_a_usage_error_naming_tiling(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "sarsa", "--tiling", "{bad", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "error: argument --tiling: expected a tiling layout" in capsys.readouterr().err


def test_the_tensorboard_error_names_its_flag(tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "tensorboardX" else real(name, *a)
    )
    assert main(["train", "ppo", "--tensorboard", "--out", str(tmp_path), "--no-progress"]) == 2  # before any work
    assert capsys.readouterr().err.startswith("error: --tensorboard needs tensorboardX")


@pytest.mark.parametrize("name", AGENTS)
def test_every_validation_error_names_flags_not_fields(name):
    """Each int or float option at -1, 0 and NaN: whatever the agent's check refuses is a FieldValueError (which the
    command line rewords), and reworded it names no field whose flag differs from it."""
    from pynq_rl.host.agents.common.checks import FieldValueError
    from pynq_rl.host.agents.common.options import flag_message

    checks = {"ppo": ppo.check_args, "dqn": dqn.check_args, "sarsa": sarsa.check_args, "apex": apex_args.check_args}
    flags = {a.dest: a.option_strings[0] for a in agent_parser(name)._actions if a.option_strings}
    renamed = [field for field, flag in flags.items() if flag != "--" + field.replace("_", "-")]
    renamed += [field for field in flags if "_" in field]
    for f in dataclasses.fields(AGENTS[name]):
        if is_computed(f) or f.type not in ("int", "float"):
            continue
        for bad in (-1, 0) + ((math.nan,) if f.type == "float" else ()):
            try:
                checks[name](dataclasses.replace(AGENTS[name](), **{f.name: bad}))
            except FieldValueError as error:
                text = flag_message(error, flags)
                assert not [n for n in renamed if re.search(rf"(?<![\w-]){n}(?!\w)", text)], (f.name, bad, text)
            except ValueError as error:  # not reworded on the command line
                pytest.fail(f"{name} {f.name}={bad}: {type(error).__name__}: {error}")


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "ppo", "--steps", "-5", "--no-progress", "--debug"],
        ["train", "--debug", "ppo", "--steps", "-5", "--no-progress"],
        ["--debug", "train", "ppo", "--steps", "-5", "--no-progress"],
    ],
)
def test_debug_is_accepted_anywhere(tmp_path, argv):
    with pytest.raises(ValueError, match=r"total_timesteps must be an integer >= 1, not -5"):
        main([*argv, "--out", str(tmp_path)])


def test_debug_after_a_build_step_is_accepted(tmp_path, capsys):
    assert main(["build", "hwh", "--out", str(tmp_path), "--debug"]) == 0


@pytest.mark.parametrize(
    "argv, suggestion",
    [
        (["train", "ppo", "--setps", "100"], "unrecognized arguments: --setps 100; did you mean --steps?"),
        (["train", "dqn", "--no-porgress"], "did you mean --no-progress?"),
        (["train", "sarsa", "--epsiodes=3"], "did you mean --episodes?"),
        (
            ["trian", "ppo"],
            "invalid choice: 'trian' (choose from 'info', 'train', 'build', 'plot', 'eval', 'doctor'); "
            "did you mean 'train'?",
        ),
        (["train", "pop"], "did you mean 'ppo'?"),
        (["build", "verilgo"], "did you mean 'verilog'?"),
        (["train", "ppo", "--backend", "emuu"], "did you mean 'emu'?"),
        # not a misspelling: Ape-X's length has its own options (difflib's closest would be --n-step)
        (
            ["train", "apex", "--steps", "5"],
            "--steps 5; Ape-X runs until --max-updates learner updates or --max-seconds",
        ),
    ],
)
def test_misspelt_flags_and_subcommands_get_a_suggestion(capsys, argv, suggestion):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert suggestion in err, err
    if argv[0] == "train" and argv[1] in AGENTS:
        assert f"usage: pynq-rl train {argv[1]}" in err  # told by the sub-command that got the unknown option
    assert len(err.strip().splitlines()) == 2, err  # one line of usage (not a screenful of options), one of error


def test_no_suggestion_when_nothing_is_close(capsys):
    with pytest.raises(SystemExit):
        main(["train", "ppo", "--zzzzzz"])
    err = capsys.readouterr().err
    assert "unrecognized arguments: --zzzzzz" in err and "did you mean" not in err


def test_a_dqn_run_shorter_than_learning_starts_is_warned_about_in_the_flags_typed(tmp_path, capsys):
    argv = ["train", "dqn", "--backend", "host", "--nn", "numpy", "--steps", "300", "--out", str(tmp_path)]
    assert main([*argv, "--no-progress"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith("warning:")] == [
        "warning: --steps = 300 does not exceed --learning-starts = 5000: the run only collects experience and takes "
        "no gradient step (raise --steps or lower --learning-starts)"
    ]
    assert main([*argv, "--learning-starts", "100", "--no-progress"]) == 0
    assert "warning:" not in capsys.readouterr().err


def test_train_ends_with_one_plain_line_after_its_json(tmp_path, capsys):
    """stdout stays one JSON document (tools and tests parse it); the plain line goes to stderr, last."""
    argv = ["train", "dqn", "--backend", "host", "--nn", "numpy", "--steps", "600", "--learning-starts", "100"]
    assert main([*argv, "--out", str(tmp_path), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert summary["interrupted"] is False
    last = err.strip().splitlines()[-1]
    assert re.fullmatch(
        r"DQN on CartPole-v1: final return -?\d+\.\d \(mean of the last \d+ episodes?\) after 600 steps; run in "
        + re.escape(summary["run_dir"]),
        last,
    ), last


def test_the_plain_line_of_each_agent():
    from pynq_rl.host.agents.common.summary_line import summary_line

    ppo_run = {"global_step": 50_000, "mean_return_last20": 381.24, "episode_returns": [1.0] * 30, "run_dir": "runs/p"}
    assert summary_line("ppo", "CartPole-v1", ppo_run, ppo.Args()) == (
        "PPO on CartPole-v1: final return 381.2 (mean of the last 20 episodes) after 50,000 steps; run in runs/p"
    )
    sarsa_run = {"global_step": 61_234, "episodes": 500, "mean_return_last20": -122.44, "run_dir": "runs/s"}
    assert summary_line("sarsa", "MountainCar-v0", sarsa_run, sarsa.Args()) == (
        "Sarsa on MountainCar-v0: final return -122.4 (mean of the last 20 episodes) after 500 episodes "
        "(61,234 steps); run in runs/s"
    )
    apex_run = {"updates": 22_400, "actor_steps": 96_500, "eval_mean_return": 452.0, "eval_episodes": 60}
    assert summary_line("apex", "CartPole-v1", {**apex_run, "run_dir": "runs/a"}, apex_args.Args()) == (
        "Ape-X on CartPole-v1: final return 452.0 (mean of the last 20 greedy evaluation episodes) after 22,400 "
        "updates (96,500 actor steps); run in runs/a"
    )
    few = {"global_step": 1024, "mean_return_last20": float("nan"), "episode_returns": [], "run_dir": "r"}
    assert summary_line("ppo", "Pendulum-v1", few, ppo.Args()) == (
        "PPO on Pendulum-v1: no episode finished after 1,024 steps; run in r"
    )
    stopped = {
        "global_step": 12_000,
        "mean_return_last20": 23.5,
        "episode_returns": [23.5],
        "run_dir": "r",
        "interrupted": True,
        "signal": "SIGTERM",
        "checkpoint": "r/checkpoint.npz",
    }
    assert summary_line("dqn", "CartPole-v1", stopped, dqn.Args()) == (
        "DQN on CartPole-v1: interrupted by SIGTERM after 12,000 of 150,000 steps: return 23.5 (mean of the last 1 "
        "episode); run in r; to continue, run the same command with --resume r/checkpoint.npz"
    )
    # PPO takes whole rollouts (8 x 128 = 1,024 steps): of --steps 300000 it will run 299,008
    assert summary_line("ppo", "CartPole-v1", {**stopped, "global_step": 12_288}, ppo.Args()).startswith(
        "PPO on CartPole-v1: interrupted by SIGTERM after 12,288 of 299,008 steps: "
    )


@pytest.mark.parametrize(
    "argv, module, extra",
    [
        (["plot", "runs/any"], "matplotlib", "plot"),
        (["train", "apex", "--env", "CartPole-v1", "--no-progress"], "ray", "distributed"),
    ],
)
def test_a_missing_extra_is_named_with_its_install_command(argv, module, extra, capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, module, None)  # an import of it now fails as if it were not installed
    # and Ape-X's modules imported afresh (an earlier test may have imported them: the package keeps each as an
    # attribute); ray_api is the one that imports Ray, apex and apex_workers import it
    for name in ("apex", "apex_workers", "ray_api"):
        monkeypatch.delitem(sys.modules, f"pynq_rl.host.agents.distributed.{name}", raising=False)
        monkeypatch.delattr(distributed, name, raising=False)
    full = argv + (["--out", str(tmp_path / "runs")] if argv[0] == "train" else [])
    assert main(full) == 1
    err = capsys.readouterr().err.strip()
    assert re.match(
        rf'^error: this needs {module}, from pynq-rl\'s {extra} extra: pip install .*"pynq-rl\[{extra}\]"', err
    )
    # an extra with torch in it says how to get torch's CPU build (PyPI's Linux wheel is the CUDA one)
    assert ("--index-url https://download.pytorch.org/whl/cpu" in err) == (extra == "distributed"), err
    assert not (tmp_path / "runs").exists()


def test_gymnasiums_warnings_are_shown_once_without_colour_codes(tmp_path, capsys):
    """An outdated environment id makes gymnasium warn at every gym.make (three in a PPO run), in terminal colours."""
    argv = ["train", "ppo", "--env", "CartPole-v0", "--backend", "host", "--steps", "1024", "--nn", "numpy"]
    assert main([*argv, "--out", str(tmp_path), "--no-progress"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert warned == [
        "warning: The environment CartPole-v0 is out of date. You should consider upgrading to version `v1`."
    ], warned
