"""The ``pynq-rl`` command line (also ``python -m pynq_rl``).

::

    pynq-rl info [--backend emu] [--board Pynq-Z2]        backend, board, cores, build parameters, ID registers
    pynq-rl train ppo --env CartPole-v1 --backend emu --steps 300000 --seed 0 --out runs [--nn numpy]
    pynq-rl train ppo --env Pendulum-v1 --backend emu --steps 300000 [--reward-norm dynamic]  (Box: Gaussian policy)
    pynq-rl train dqn --env CartPole-v1 --backend emu --steps 150000 --seed 0 --out runs [--nn numpy]
    pynq-rl train sarsa --env MountainCar-v0 --backend emu --episodes 500 --seed 0 --out runs
    pynq-rl train apex --env CartPole-v1 --actors 4 --backend emu [--replay-address host:port]
    (every field of the agent's Args is an option: `pynq-rl train ppo --help`; --backend host runs no core)
    pynq-rl build hwh --board ZCU106 --out DIR             the overlay's .hwh (+ empty .bit) from spec.py
    pynq-rl build verilog [--board Pynq-Z2] [--out DIR]    MyHDL -> Verilog, Verilator-linted
    pynq-rl build report [--out benchmarks/results]        yosys resource tables
    pynq-rl build timing [--quick] [--out DIR] [--only MODULE ...]   ECP5 P&R, xc7 sta, post-route sim
    pynq-rl build regs [--out docs] [--check]              register reference (Markdown + C header) from spec.py
    pynq-rl build tcl|ip|bd|bitstream|install|link --board zcu106   the Vivado flow (pynq_rl/overlay/build/Makefile)
    pynq-rl plot RUN_DIR... [--out curves.png]             learning curves (seeds of one setting: mean + band)
    pynq-rl eval RUN_DIR|CHECKPOINT [--episodes 10] [--seed 0] [--stochastic] [--video DIR]   a trained agent's return
    pynq-rl doctor [--backend emu --backend verilator] [--board B]  self-test every core against its model

Every ``--help`` shows every default; ``--debug`` (tracebacks instead of one-line errors) is accepted anywhere on the
line; a misspelt option or sub-command gets a suggestion (:mod:`pynq_rl.host.agents.common.argparsing`).
``train`` prints the run's summary as one JSON document on stdout, then one plain line on stderr with the return
reached and the run directory (:mod:`pynq_rl.host.agents.common.summary_line`); Ctrl-C or SIGTERM ends it after the
current step with a checkpoint and ``summary.json`` (``"interrupted": true``) and exit status 130 or 143
(:mod:`pynq_rl.host.agents.common.interrupts`).
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple, TextIO

from .host.agents.common.argparsing import Parser, walk
from .host.agents.common.checks import FieldValueError, FieldWarning
from .host.agents.common.interrupts import TrainingInterrupted
from .host.agents.common.options import add_options, flag_message, given
from .host.agents.common.summary_line import summary_line
from .host.overlay import BACKENDS

__all__ = ["main"]


def _info(args: argparse.Namespace) -> int:
    from .host.overlay import RLOverlay

    print(json.dumps(RLOverlay(backend=args.backend, board=args.board).info(), indent=2))
    return 0


def _usage_error(args: argparse.Namespace, error: FieldValueError) -> int:
    """A value refused before any work: one line naming the flags typed, exit status 2 (``--debug``: the exception
    goes on, traceback and all)."""
    if getattr(args, "debug", False):
        raise error
    print(f"error: {' '.join(flag_message(error, args.flags).split())}", file=sys.stderr)
    return 2


def _train(args: argparse.Namespace) -> int:
    """``train <agent>``: the agent's ``Args`` from the options given (the rest keep their defaults), its ``train()``,
    its summary as JSON on stdout (without the per-episode lists), then one plain line on stderr (the return reached,
    the run directory). A run stopped by SIGINT or SIGTERM prints the same, marked interrupted, and exits with
    128 + the signal's number.

    Every value is checked first (the agent's ``check_args``): a bad one is a usage error, one line naming the flag
    as typed and exit status 2, before any environment, overlay or run directory exists."""
    try:
        config = args.make_args(given(args, args.args_cls))
        with warnings.catch_warnings():  # the agent's train() checks again and warns then, once
            warnings.simplefilter("ignore", FieldWarning)
            args.check(config)
    except FieldValueError as error:
        return _usage_error(args, error)
    status = 0
    try:
        summary = args.train(config)
    except TrainingInterrupted as stopped:
        summary, status = stopped.summary, stopped.exit_status
    lists = ("episode_returns", "episode_lengths", "eval_returns")
    print(json.dumps({k: v for k, v in summary.items() if k not in lists}, indent=2, default=str), flush=True)
    print(summary_line(args.agent, config.env_id, summary, config), file=sys.stderr)
    return status


def _ppo_args(options: dict[str, Any]) -> Any:
    """PPO's ``Args``: a Box action space gets CleanRL's continuous-control defaults; the options given win."""
    from .host.agents import ppo

    return ppo.args_for(options.pop("env_id", ppo.Args.env_id), **options)


def _train_apex(config: Any) -> dict[str, Any]:
    from .host.agents.distributed import apex  # imported here, after the checks: Ray and torch only run it

    return apex.train(config)


def _tiling(text: str) -> str:
    """argparse type of ``train sarsa --tiling``: a tiling layout, as a JSON object or the path of a JSON file
    (checked here, so a malformed one is a usage error naming the option)."""
    from .host.drivers.tiling_config import load_tiling

    try:
        load_tiling(text)
    except (ValueError, TypeError) as error:  # json.JSONDecodeError is a ValueError
        raise argparse.ArgumentTypeError(
            f"expected a tiling layout (a JSON object or the path of a JSON file), not {text!r}: {error}"
        ) from None
    return text


def _bounds(text: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``"LOW,LOW,...:HIGH,HIGH,..."`` -> ``(lows, highs)`` (argparse type of ``train sarsa --bounds``)."""
    try:
        lows, highs = (tuple(float(x) for x in part.split(",")) for part in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected LOW,LOW,...:HIGH,HIGH,... (one per observation dimension), not {text!r}"
        ) from None
    if len(lows) != len(highs):
        raise argparse.ArgumentTypeError(f"{len(lows)} lows but {len(highs)} highs in {text!r}")
    return lows, highs


def _seconds(text: str) -> float:
    """argparse type of ``--timeout``: a finite number of seconds > 0."""
    from .host.drivers.polling import check_timeout

    try:
        return check_timeout(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).replace("timeout_s", "--timeout")) from None


FLAGS = {
    "env_id": "--env",
    "total_timesteps": "--steps",
    "out_dir": "--out",
    "timeout_s": "--timeout",
    "num_actors": "--actors",
}
"""the agents' options whose flag is not ``--field-name`` (the command line's names from before its options were
generated from the ``Args`` dataclasses); a field has the same flag in every agent"""
_OVERRIDES = {
    "timeout_s": {"type": _seconds, "metavar": "SECONDS"},
    "bounds": {"type": _bounds, "metavar": "LOWS:HIGHS"},
    "tiling": {"type": _tiling, "metavar": "JSON|PATH"},
}
"""argparse types of the fields that need more than their annotation"""


class _Agent(NamedTuple):
    """A ``train`` sub-command."""

    args_cls: type
    """the agent's ``Args`` dataclass"""
    help: str
    """one line for ``--help``"""
    train: Callable[[Any], dict[str, Any]]
    """its ``train(args)``"""
    check: Callable[[Any], None]
    """its ``check_args(args)``: every value checked before any work (``train`` checks again, for the Python API)"""
    make_args: Callable[[dict[str, Any]], Any] | None = None
    """``Args`` from the options given (None: ``args_cls(**options)``)"""


def _args_from_options(args_cls: type, options: dict[str, Any]) -> Any:
    """``args_cls(**options)``: an agent's ``Args`` from the options given (when it has no ``make_args``)."""
    return args_cls(**options)


def _agents() -> dict[str, _Agent]:
    """The agents ``pynq-rl train`` runs (their ``Args`` import without Ray or torch; Ape-X's ``train`` needs both)."""
    from .host.agents import dqn, ppo, sarsa
    from .host.agents.distributed import apex_args

    return {
        "ppo": _Agent(ppo.Args, "PPO with GAE on the GAE core", ppo.train, ppo.check_args, _ppo_args),
        "dqn": _Agent(
            dqn.Args, "Double DQN with prioritized replay, priorities on the replay core", dqn.train, dqn.check_args
        ),
        "sarsa": _Agent(sarsa.Args, "tile-coded Sarsa learning inside the ParSa core", sarsa.train, sarsa.check_args),
        "apex": _Agent(
            apex_args.Args,
            "distributed Ape-X on Ray, prioritized replay on the replay server's core",
            _train_apex,
            apex_args.check_args,
        ),
    }


def _flag(name: str, value: Any) -> str:
    """The options that set field ``name`` to ``value`` (for ``--help`` texts)."""
    flag = FLAGS.get(name, "--" + name.replace("_", "-"))
    if isinstance(value, bool):
        return flag if value else "--no-" + flag[2:]
    return f"{flag} {value}"


def _add_agent_parsers(train: Parser) -> None:
    """One ``train <agent>`` parser per agent, its options generated from the agent's ``Args``
    (:mod:`pynq_rl.host.agents.common.options`)."""
    from .host.agents.common.run import BACKENDS as AGENT_BACKENDS
    from .host.agents.common.run import NN_BACKENDS
    from .host.agents.ppo.args import CONTINUOUS_DEFAULTS, REWARD_NORMS

    choices = {
        "backend": AGENT_BACKENDS,
        "nn": ("auto",) + NN_BACKENDS,
        "reward_norm": tuple(n for n in REWARD_NORMS if n is not None),
    }
    agents = train.add_subparsers(dest="agent", required=True)
    for name, agent in _agents().items():
        epilog = None
        if name == "ppo":
            box = ", ".join(_flag(k, v) for k, v in CONTINUOUS_DEFAULTS.items())
            epilog = (
                f"A Box action space (continuous control) gets CleanRL's defaults instead, for options not given: {box}"
            )
        parser = agents.add_parser(name, help=agent.help, description=agent.help, epilog=epilog)
        flags = add_options(parser, agent.args_cls, FLAGS, choices, _OVERRIDES)
        if name == "apex":
            parser.option_hints["--steps"] = (
                "Ape-X runs until --max-updates learner updates or --max-seconds, not for a number of steps"
            )
        if name == "ppo":
            parser.add_argument(
                "--raw",
                dest="quantize",
                action="store_false",
                default=argparse.SUPPRESS,
                help="the same as --no-quantize",
            )
        parser.set_defaults(
            func=_train,
            args_cls=agent.args_cls,
            make_args=agent.make_args or functools.partial(_args_from_options, agent.args_cls),
            train=agent.train,
            check=agent.check,
            flags=flags,
        )


def _build_hwh(args: argparse.Namespace) -> int:
    from .overlay import spec
    from .overlay.build.hwh import write_overlay_files

    bit = write_overlay_files(spec.board(args.board), args.out)
    print(bit.with_suffix(".hwh"))
    print(
        f"(beside it an empty {bit.name}: pynq.Overlay needs a .bit of the same stem, and the emulated backends "
        "program nothing; a real bitstream comes from the Vivado flow, `pynq-rl build bitstream`)",
        file=sys.stderr,
    )
    return 0


def _build_verilog(args: argparse.Namespace) -> int:
    from .overlay.build import verilog

    argv = (
        ["--out", args.out] + (["--board", args.board] if args.board else []) + (["--no-lint"] if args.no_lint else [])
    )
    return verilog.main(argv)


def _build_report(args: argparse.Namespace) -> int:
    from .overlay.build import report

    out = args.out or ("pynq_rl/overlay/build/out/report-quick" if args.quick else "benchmarks/results")
    return report.main(["--out", out] + (["--quick"] if args.quick else [])) or 0


def _build_timing(args: argparse.Namespace) -> int:
    from .overlay.build import timing

    return (
        timing.main(
            (["--out", args.out] if args.out else [])
            + (["--quick"] if args.quick else [])
            + (["--only", *args.only] if args.only else [])
            + (["--route-timeout", str(args.route_timeout)] if args.route_timeout else [])
        )
        or 0
    )


def _build_formal(args: argparse.Namespace) -> int:
    from .overlay.build import formal

    return formal.main((["--out", args.out] if args.out else []) + (["--quick"] if args.quick else [])) or 0


def _build_regs(args: argparse.Namespace) -> int:
    from .overlay.build import registers

    return registers.main((["--out", args.out] if args.out else []) + (["--check"] if args.check else []))


def _build_vivado_step(args: argparse.Namespace) -> int:
    from .overlay.build.__main__ import main as build_main

    argv = [args.step, "--out", args.out] + (["--board", args.board] if args.board else [])
    argv += ["--jobs", str(args.jobs), "--vivado", args.vivado] + (["--url", args.url] if args.url else [])
    return build_main(argv)


def _doctor(args: argparse.Namespace) -> int:
    from .host import doctor

    return doctor.main(backends=args.backend, board=args.board)


def _plot(args: argparse.Namespace) -> int:
    from .host.agents.plot import plot_runs

    print(plot_runs(args.runs, args.out, smooth=args.smooth, title=args.title))
    return 0


def _eval(args: argparse.Namespace) -> int:
    """``eval RUN_DIR|CHECKPOINT``: play a trained agent's policy (:func:`~pynq_rl.host.agents.evaluate.evaluate`),
    print the result as JSON on stdout, then one plain line on stderr. The values are checked first: a bad one is a
    usage error, one line naming the flag and exit status 2, before the checkpoint is read."""
    from .host.agents.evaluate import check_evaluation, evaluate, evaluation_line

    try:
        check_evaluation(args.episodes, args.seed, args.backend)
    except FieldValueError as error:
        return _usage_error(args, error)
    result = evaluate(
        args.source,
        episodes=args.episodes,
        seed=args.seed,
        backend=args.backend,
        deterministic=not args.stochastic,
        video_dir=args.video,
        progress=True,
    )
    print(json.dumps(result, indent=2), flush=True)
    print(evaluation_line(result), file=sys.stderr)
    return 0


_DEBUG_HELP = "show tracebacks instead of one-line errors (accepted anywhere on the command line)"
_BOARD_HELP = "Pynq-Z2 or ZCU106 (default: the board PYNQ reports on a board, else Pynq-Z2)"
_BACKEND_HELP = "default: $PYNQ_RL_BACKEND if set, else board on a PYNQ board and emu elsewhere"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pynq-rl`` (sub-commands ``info``, ``train``, ``build``, ``plot``, ``eval``,
    ``doctor``).

    Every parser in it is a :class:`~pynq_rl.host.agents.common.argparsing.Parser` (defaults in ``--help``, suggestions
    for misspelt options and sub-commands) and takes ``--debug``.
    """
    from .overlay.spec import DEFAULT_BOARD

    parser = Parser(prog="pynq-rl", description="RL kernels on PYNQ: run, train, build.")
    parser.add_argument("--debug", action="store_true", help=_DEBUG_HELP)
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("info", help="show backend, board, cores and their ID/build registers")
    info.add_argument("--backend", choices=BACKENDS, default=None, help=_BACKEND_HELP)
    info.add_argument("--board", default=None, help=_BOARD_HELP)
    info.set_defaults(func=_info)

    train = commands.add_parser("train", help="train an agent with its kernel offloaded")
    _add_agent_parsers(train)

    build = commands.add_parser("build", help="build steps that need no Vivado")
    steps = build.add_subparsers(dest="step", required=True)
    hwh = steps.add_parser("hwh", help="write the overlay's .hwh from spec.py")
    hwh.add_argument("--board", default=DEFAULT_BOARD, help="Pynq-Z2 or ZCU106")
    hwh.add_argument("--out", required=True, help="output directory")
    hwh.set_defaults(func=_build_hwh)
    verilog = steps.add_parser("verilog", help="convert the cores to Verilog and lint them")
    verilog.add_argument("--board", default=DEFAULT_BOARD, help="Pynq-Z2 or ZCU106")
    verilog.add_argument("--out", default="pynq_rl/overlay/build/out", help="output directory")
    verilog.add_argument("--no-lint", action="store_true", help="skip the Verilator lint")
    verilog.set_defaults(func=_build_verilog)
    report = steps.add_parser("report", help="yosys synth_xilinx resource tables (LUT/FF/DSP/BRAM)")
    report.add_argument(
        "--out",
        default=None,
        help="output directory (default benchmarks/results; pynq_rl/overlay/build/out/report-quick with --quick)",
    )
    report.add_argument("--quick", action="store_true", help="only the smallest configurations")
    report.set_defaults(func=_build_report)
    timing = steps.add_parser(
        "timing", help="ECP5-85 place and route (nextpnr), xc7 yosys sta, routed netlists simulated against the models"
    )
    timing.add_argument(
        "--out",
        default=None,
        help="output directory (default benchmarks/results; pynq_rl/overlay/build/out/timing/quick with --quick)",
    )
    timing.add_argument("--quick", action="store_true", help="the GAE PE and a one-lane core only (CI)")
    timing.add_argument(
        "--only",
        nargs="+",
        metavar="MODULE",
        default=None,
        help="re-run only these builds (module names or prefixes) and merge their rows into the timing.json in --out "
        "(default: every build)",
    )
    timing.add_argument(
        "--route-timeout",
        type=float,
        default=None,
        help="seconds of place and route before a core is routed at a reduced size (default: the flow's, 900)",
    )
    timing.set_defaults(func=_build_timing)
    formal = steps.add_parser(
        "formal", help="SymbiYosys + Yices checks of every core's AXI4-Lite and AXI4-Stream ports (formal.md)"
    )
    formal.add_argument("--out", default=None, help="output directory (default benchmarks/results)")
    formal.add_argument("--quick", action="store_true", help="only the checks CI runs (no cover checks)")
    formal.set_defaults(func=_build_formal)
    regs = steps.add_parser("regs", help="register reference from spec.py: docs/registers.md + C header")
    regs.add_argument("--out", default=None, help="output directory (default: the repository's docs/)")
    regs.add_argument("--check", action="store_true", help="write nothing; exit 1 if the committed files are stale")
    regs.set_defaults(func=_build_regs)
    from .overlay.build.vivado import DEFAULT_OUT

    for step, text in (
        ("tcl", "generate and check the Vivado Tcl (no Vivado needed)"),
        ("ip", "Vivado: package each core as an IP with its registers from spec.py"),
        ("bd", "Vivado: the board's block design from spec.py"),
        ("bitstream", "Vivado: synthesis, implementation, timing check, bitstream"),
        ("install", "copy the .bit and .hwh into pynq_rl/overlay/bitstreams/<board>/"),
        ("link", "write a .link (url + md5) for pynqutils' download at install"),
    ):
        vivado_step = steps.add_parser(step, help=text)
        vivado_step.add_argument("--board", default=DEFAULT_BOARD, help="Pynq-Z2 or ZCU106 (case-insensitive)")
        vivado_step.add_argument("--out", default=str(DEFAULT_OUT), help="build directory root")
        vivado_step.add_argument("--jobs", type=int, default=4, help="Vivado run jobs")
        vivado_step.add_argument("--vivado", default="vivado", help="Vivado executable")
        vivado_step.add_argument("--url", default=None, help="link: URL of the published .bit (required by link)")
        vivado_step.set_defaults(func=_build_vivado_step)

    plot = commands.add_parser("plot", help="learning curves of run directories (seeds of one setting as mean + band)")
    plot.add_argument("runs", nargs="+", help="run directories (out_dir/<env>__<exp>__<seed>__<time>)")
    plot.add_argument("--out", default="curves.png", help="image to write (.png, .svg, .pdf)")
    plot.add_argument("--smooth", type=int, default=20, help="episodes in the running mean")
    plot.add_argument("--title", default=None, help="plot title (default: the environments' names)")
    plot.set_defaults(func=_plot)

    from .host.agents.common.run import BACKENDS as AGENT_BACKENDS

    evaluation = commands.add_parser("eval", help="play a trained agent's policy: mean return over seeded episodes")
    evaluation.add_argument("source", metavar="RUN_DIR|CHECKPOINT", help="a run directory or its checkpoint.npz")
    evaluation.add_argument("--episodes", type=int, default=10, help="episodes to play")
    evaluation.add_argument("--seed", type=int, default=0, help="episode i is reset with seed + i")
    evaluation.add_argument(
        "--backend", choices=AGENT_BACKENDS, default=None, help="where Sarsa's policy runs (default: the run's)"
    )
    evaluation.add_argument(
        "--stochastic",
        action="store_true",
        help="sample PPO's actions, explore with DQN's and Sarsa's final epsilon (default: the greedy policy)",
    )
    evaluation.add_argument("--video", metavar="DIR", default=None, help="record every episode there (needs moviepy)")
    evaluation.set_defaults(func=_eval, flags={"episodes": "--episodes", "seed": "--seed", "backend": "--backend"})

    doctor = commands.add_parser("doctor", help="self-test every core against its bit-exact model")
    doctor.add_argument(
        "--backend",
        action="append",
        choices=BACKENDS,
        default=None,
        help="backend(s) to test (repeatable; default: board on a board, else emu and rtl)",
    )
    doctor.add_argument("--board", default=None, help=_BOARD_HELP)
    doctor.set_defaults(func=_doctor)

    for sub in list(walk(parser))[1:]:  # --debug anywhere: `pynq-rl train ppo --steps 10 --debug` too
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``pynq-rl`` command line; returns the exit status.

    A mistake costs the user one line, as with git or pip: argparse answers a malformed command line with usage and
    exit status 2 (and the closest option or sub-command to a misspelt one), and so does ``train`` for a value out of
    its range (``error: --steps must be an integer >= 1, not -5``); anything a command raises (a bad value,
    an unknown environment, no board, a timeout) becomes ``error: <message>`` on stderr and exit status 1, naming the
    flags the user typed where it names an agent's fields (``--steps must be >= 1``, where the Python API says
    ``total_timesteps must be >= 1``); a warning becomes ``warning: <message>``, reworded the same way. ``--debug``
    (anywhere on the line) lets the exception through, traceback and all, and shows warnings as Python does. Ctrl-C
    exits with 130; a ``train`` run stopped by Ctrl-C or SIGTERM first saves its checkpoint and summary, then exits
    with 130 or 143.
    """
    args = build_parser().parse_args(argv)
    flags = getattr(args, "flags", {})
    if args.debug:
        return args.func(args)
    with warnings.catch_warnings():
        warnings.showwarning = functools.partial(_warn_one_line, flags=flags, shown=set())
        try:
            return args.func(args)
        except KeyboardInterrupt:
            print("error: interrupted", file=sys.stderr)
            return 130
        except Exception as error:  # noqa: BLE001 - the one place that turns any failure into one line
            print(f"error: {_one_line(error, flags)} (--debug shows the traceback)", file=sys.stderr)
            return 1


def _warn_one_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
    *,
    flags: dict[str, str],
    shown: set[str],
) -> None:
    """``warnings.showwarning`` of the command line: ``warning: <message>`` on one line, with the flags the user
    typed where it names an agent's fields (:class:`~pynq_rl.host.agents.common.checks.FieldWarning`), and each message
    once per command (``shown``: gymnasium warns about an outdated environment at every ``gym.make``, from places
    Python's filters count apart) without the terminal colour codes and ``WARN:`` tag gymnasium's logger adds."""
    text = flag_message(message, flags) if isinstance(message, Warning) else str(message)
    text = _GYMNASIUM_TAG.sub("", _ANSI_COLOUR.sub("", " ".join(text.split())))
    if text in shown:
        return
    shown.add(text)
    print(f"warning: {text}", file=file or sys.stderr)


_ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
"""the colour codes gymnasium's logger wraps its warnings in"""
_GYMNASIUM_TAG = re.compile(r"^WARN: ")
"""the tag it starts them with (``warning:`` says it already)"""


#: Top-level modules a command may need that only an extra of pynq-rl installs -> that extra.
OPTIONAL_MODULES = {
    "matplotlib": "plot",
    "ray": "distributed",
    "grpc": "distributed",
    "redis": "distributed",
    "torch": "torch",
    "stable_baselines3": "sb3",
    "tensorboardX": "tensorboard",
    "numba": "fast",
    "mujoco": "mujoco",
    "moviepy": "video",
    "pygame": "video",
}


_TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
"""PyTorch's index of CPU-only wheels (PyPI's Linux wheel is the CUDA build)"""


def _one_line(error: BaseException, flags: dict[str, str]) -> str:
    """The exception's message on one line, with its type where the message alone would be unclear, and the flags
    the user typed where it names an agent's fields (``flags``: field -> flag); a module only an extra installs is
    named with the command that installs it."""
    text = " ".join(flag_message(error, flags).split()) or type(error).__name__
    missing = (error.name or "").split(".")[0] if isinstance(error, ModuleNotFoundError) else ""
    if missing in OPTIONAL_MODULES:
        extra = OPTIONAL_MODULES[missing]
        torch = ' "torch==2.13.0"' if extra in ("torch", "distributed", "sb3") else ""  # pinned first: the CPU wheel
        text = f'this needs {missing}, from pynq-rl\'s {extra} extra: pip install{torch} "pynq-rl[{extra}]"'
        if torch:  # PyPI's Linux torch is the CUDA build, several GB
            text += f" (without an NVIDIA GPU, first: pip install torch==2.13.0 --index-url {_TORCH_CPU_INDEX})"
        return text
    if (
        isinstance(error, (FileNotFoundError, NotADirectoryError, FileExistsError, PermissionError))
        and error.filename is not None
    ):
        text = f"{error.strerror}: {error.filename}"
    elif not isinstance(error, (ValueError, RuntimeError, TimeoutError, OSError)):
        text = f"{type(error).__name__}: {text}"
    return text


if __name__ == "__main__":
    sys.exit(main())
