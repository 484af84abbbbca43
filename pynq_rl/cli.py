"""The ``pynq-rl`` command line (also ``python -m pynq_rl``).

::

    pynq-rl info [--backend emu] [--board Pynq-Z2]        backend, board, cores, build parameters, ID registers
    pynq-rl train ppo --env CartPole-v1 --backend emu --steps 300000 --seed 0 --out runs [--nn numpy]
    pynq-rl train ppo --env Pendulum-v1 --backend emu --steps 300000 [--reward-norm dynamic]  (Box: Gaussian policy)
    pynq-rl train dqn --env CartPole-v1 --backend emu --steps 150000 --seed 0 --out runs [--nn numpy]
    pynq-rl train sarsa --env MountainCar-v0 --backend emu --episodes 500 --seed 0 --out runs
    pynq-rl train apex --env CartPole-v1 --actors 4 --replay-backend emu [--replay-address host:port]
    pynq-rl build hwh --board ZCU106 --out DIR             the overlay's .hwh (+ empty .bit) from spec.py
    pynq-rl build verilog [--board Pynq-Z2] [--out DIR]    MyHDL -> Verilog, Verilator-linted
    pynq-rl build report [--out benchmarks/results]        yosys resource tables
    pynq-rl build timing [--quick] [--out DIR] [--only MODULE ...]   ECP5 P&R, xc7 sta, post-route sim
    pynq-rl build regs [--out docs] [--check]              register reference (Markdown + C header) from spec.py
    pynq-rl build tcl|ip|bd|bitstream|install|link --board zcu106   the Vivado flow (pynq_rl/overlay/build/Makefile)
    pynq-rl plot RUN_DIR... [--out curves.png]             learning curves (seeds of one setting: mean + band)
    pynq-rl doctor [--backend emu --backend verilator] [--board B]  self-test every core against its model
"""

from __future__ import annotations

import argparse
import json
import sys

from .host.overlay import BACKENDS

__all__ = ["main"]


def _info(args: argparse.Namespace) -> int:
    from .host.overlay import RLOverlay

    print(json.dumps(RLOverlay(backend=args.backend, board=args.board).info(), indent=2))
    return 0


def _train_ppo(args: argparse.Namespace) -> int:
    from .host.agents import ppo

    # a Box action space gets CleanRL's continuous-control defaults (Gaussian policy, 1 env x 2048 steps, ...)
    config = ppo.args_for(
        args.env,
        seed=args.seed,
        total_timesteps=args.steps,
        gae_backend=args.backend,
        board=args.board,
        reward_norm=args.reward_norm,
        quantize=not args.raw,
        out_dir=args.out,
        nn=args.nn,
        resume=args.resume,
        tensorboard=args.tensorboard,
        progress=not args.no_progress,
        timeout_s=args.timeout,
        norm_obs=args.norm_obs,
        norm_reward=args.norm_reward,
    )
    summary = ppo.train(config)
    print(
        json.dumps(
            {k: v for k, v in summary.items() if k not in ("episode_returns", "episode_lengths")}, indent=2, default=str
        )
    )
    return 0


def _train_dqn(args: argparse.Namespace) -> int:
    from .host.agents import dqn

    config = dqn.Args(
        env_id=args.env,
        seed=args.seed,
        total_timesteps=args.steps,
        replay_backend=args.backend,
        board=args.board,
        out_dir=args.out,
        resume=args.resume,
        nn=args.nn,
        tensorboard=args.tensorboard,
        progress=not args.no_progress,
        timeout_s=args.timeout,
    )
    summary = dqn.train(config)
    print(
        json.dumps(
            {k: v for k, v in summary.items() if k not in ("episode_returns", "episode_lengths")}, indent=2, default=str
        )
    )
    return 0


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


def _train_sarsa(args: argparse.Namespace) -> int:
    from .host.agents import sarsa

    config = sarsa.Args(
        env_id=args.env,
        seed=args.seed,
        episodes=args.episodes,
        backend=args.backend,
        board=args.board,
        alpha=args.alpha,
        epsilon=args.epsilon,
        frac_bits=args.frac_bits,
        tiling=args.tiling,
        bounds=args.bounds,
        out_dir=args.out,
        resume=args.resume,
        tensorboard=args.tensorboard,
        progress=not args.no_progress,
        timeout_s=args.timeout,
    )
    summary = sarsa.train(config)
    print(
        json.dumps(
            {k: v for k, v in summary.items() if k not in ("episode_returns", "episode_lengths")}, indent=2, default=str
        )
    )
    return 0


def _train_apex(args: argparse.Namespace) -> int:
    from .host.agents.distributed import apex

    config = apex.Args(
        env_id=args.env,
        seed=args.seed,
        num_actors=args.actors,
        replay_backend=args.replay_backend,
        board=args.board,
        replay_address=args.replay_address,
        ray_address=args.ray_address,
        max_updates=args.max_updates,
        max_seconds=args.max_seconds,
        out_dir=args.out,
        sample_prefetch=args.sample_prefetch,
        updates_per_insert=args.updates_per_insert,
        tensorboard=args.tensorboard,
        progress=not args.no_progress,
    )
    summary = apex.train(config)
    print(
        json.dumps(
            {k: v for k, v in summary.items() if k not in ("eval_returns", "episode_returns", "episode_lengths")},
            indent=2,
            default=str,
        )
    )
    return 0


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


def _agent_parser(agents, name: str, text: str, env: str) -> argparse.ArgumentParser:
    """A ``train <name>`` parser with the options every agent shares (what :class:`~.host.agents.run.Run` needs)."""
    parser = agents.add_parser(name, help=text)
    parser.add_argument("--env", default=env, help="gymnasium environment id")
    parser.add_argument("--board", default=None, help="Pynq-Z2 or ZCU106")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--out", default="runs", help="directory under which the run directory is created")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--tensorboard",
        action="store_true",
        help="also write TensorBoard event files into the run directory (needs tensorboardX)",
    )
    return parser


def _add_timeout_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=5.0,
        metavar="SECONDS",
        help="deadline of one core operation on a board or emu (rtl counts its deadlines in simulated cycles)",
    )


def _seconds(text: str) -> float:
    """argparse type of ``--timeout``: a finite number of seconds > 0."""
    from .host.drivers.polling import check_timeout

    try:
        return check_timeout(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).replace("timeout_s", "--timeout")) from None


def _add_nn_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nn",
        choices=("auto", "torch", "numpy"),
        default="auto",
        help="network backend: torch, numpy (no torch needed, e.g. on a PYNQ-Z2), or auto (torch where it imports)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pynq-rl`` (sub-commands ``info``, ``train``, ``build``)."""
    parser = argparse.ArgumentParser(prog="pynq-rl", description="RL kernels on PYNQ: run, train, build.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("info", help="show backend, board, cores and their ID/build registers")
    info.add_argument("--backend", choices=BACKENDS, default=None, help="default: board on a PYNQ board, else emu")
    info.add_argument("--board", default=None, help="Pynq-Z2 or ZCU106")
    info.set_defaults(func=_info)

    train = commands.add_parser("train", help="train an agent with its kernel offloaded")
    agents = train.add_subparsers(dest="agent", required=True)
    ppo = _agent_parser(agents, "ppo", "PPO with GAE on the GAE core", "CartPole-v1")
    ppo.add_argument(
        "--backend",
        choices=("host",) + BACKENDS,
        default="emu",
        help="where GAE runs: host (numpy reference loop) or the GAE core on board/emu/rtl/verilator",
    )
    ppo.add_argument("--steps", type=int, default=300_000, help="total environment steps (whole rollouts)")
    ppo.add_argument("--reward-norm", choices=("dynamic",), default=None, help="HEPPO dynamic reward standardization")
    ppo.add_argument("--raw", action="store_true", help="raw Q15.16 GAE inputs instead of 8-bit block codes")
    ppo.add_argument("--resume", default=None, help="checkpoint to resume from (its run continues to --steps)")
    ppo.add_argument(
        "--norm-obs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="observation normalization wrapper (default: on for Box action spaces)",
    )
    ppo.add_argument(
        "--norm-reward",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="reward normalization wrapper (default: on for Box action spaces without --reward-norm)",
    )
    _add_nn_option(ppo)
    _add_timeout_option(ppo)
    ppo.set_defaults(func=_train_ppo)

    dqn = _agent_parser(
        agents, "dqn", "Double DQN with prioritized replay, priorities on the replay core", "CartPole-v1"
    )
    dqn.add_argument(
        "--backend",
        choices=("numpy",) + BACKENDS,
        default="emu",
        help="where the priorities live: numpy (host sum tree) or the replay core on board/emu/rtl/verilator",
    )
    dqn.add_argument("--steps", type=int, default=150_000, help="total environment steps")
    dqn.add_argument("--resume", default=None, help="checkpoint to resume from (its run continues to --steps)")
    _add_nn_option(dqn)
    _add_timeout_option(dqn)
    dqn.set_defaults(func=_train_dqn)

    sarsa = _agent_parser(agents, "sarsa", "tile-coded Sarsa learning inside the ParSa core", "MountainCar-v0")
    sarsa.add_argument(
        "--backend",
        choices=("float",) + BACKENDS,
        default="emu",
        help="where Sarsa runs: float (float64 host reference) or the ParSa core on board/emu/rtl/verilator",
    )
    sarsa.add_argument("--episodes", type=int, default=500, help="episodes to run")
    sarsa.add_argument("--alpha", type=float, default=0.3, help="step size (divided by the number of tilings)")
    sarsa.add_argument("--epsilon", type=float, default=0.0, help="exploration probability")
    sarsa.add_argument("--frac-bits", type=int, default=6, help="fractional bits of the core's values")
    sarsa.add_argument("--tiling", default=None, help="tiling layout: JSON file or string (default: 8 x 8^d)")
    sarsa.add_argument(
        "--bounds",
        type=_bounds,
        default=None,
        metavar="LOWS:HIGHS",
        help="tile-coding bounds per observation dimension, e.g. --bounds=-4.8,-3,-0.42,-3:4.8,3,0.42,3 "
        "(default: the observation space's, which must be finite)",
    )
    sarsa.add_argument("--resume", default=None, help="checkpoint to resume from (its run continues to --episodes)")
    _add_timeout_option(sarsa)
    sarsa.set_defaults(func=_train_sarsa)

    apex = _agent_parser(
        agents, "apex", "distributed Ape-X on Ray, prioritized replay on the replay server's core", "CartPole-v1"
    )
    apex.add_argument("--actors", type=int, default=2, help="number of Ape-X actors")
    apex.add_argument(
        "--replay-backend",
        choices=("numpy",) + BACKENDS,
        default="emu",
        help="where the Ray-hosted replay server keeps the priorities",
    )
    apex.add_argument(
        "--replay-address",
        default=None,
        help="host:port of an external replay server (e.g. on a board) instead of a Ray-hosted one",
    )
    apex.add_argument("--ray-address", default=None, help="join this Ray cluster (default: start Ray locally)")
    apex.add_argument("--max-updates", type=int, default=50_000, help="learner gradient steps at most")
    apex.add_argument("--max-seconds", type=float, default=900.0, help="wall-clock budget")
    apex.add_argument(
        "--sample-prefetch",
        type=int,
        default=1,
        help="batches the learner keeps in flight while it trains (default 1; 0: sample synchronously)",
    )
    apex.add_argument(
        "--updates-per-insert",
        type=float,
        default=0.5,
        help="rate limit: learner updates per inserted transition at most (default 0.5; 0: unlimited)",
    )
    apex.set_defaults(func=_train_apex)

    build = commands.add_parser("build", help="build steps that need no Vivado")
    steps = build.add_subparsers(dest="step", required=True)
    hwh = steps.add_parser("hwh", help="write the overlay's .hwh from spec.py")
    hwh.add_argument("--board", default=None, help="Pynq-Z2 or ZCU106")
    hwh.add_argument("--out", required=True, help="output directory")
    hwh.set_defaults(func=_build_hwh)
    verilog = steps.add_parser("verilog", help="convert the cores to Verilog and lint them")
    verilog.add_argument("--board", default=None, help="Pynq-Z2 or ZCU106")
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
        help="re-run only these builds (module names or prefixes) and merge their rows into the timing.json in --out",
    )
    timing.add_argument(
        "--route-timeout",
        type=float,
        default=None,
        help="seconds of place and route before a core is routed at a reduced size (default 900)",
    )
    timing.set_defaults(func=_build_timing)
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
        vivado_step.add_argument("--board", default=None, help="Pynq-Z2 or ZCU106 (case-insensitive)")
        vivado_step.add_argument("--out", default=str(DEFAULT_OUT), help="build directory root")
        vivado_step.add_argument("--jobs", type=int, default=4, help="Vivado run jobs")
        vivado_step.add_argument("--vivado", default="vivado", help="Vivado executable")
        vivado_step.add_argument("--url", default=None, help="link: URL of the published .bit")
        vivado_step.set_defaults(func=_build_vivado_step)

    plot = commands.add_parser("plot", help="learning curves of run directories (seeds of one setting as mean + band)")
    plot.add_argument("runs", nargs="+", help="run directories (out_dir/<env>__<exp>__<seed>__<time>)")
    plot.add_argument("--out", default="curves.png", help="image to write (.png, .svg, .pdf)")
    plot.add_argument("--smooth", type=int, default=20, help="episodes in the running mean")
    plot.add_argument("--title", default=None, help="plot title (default: the environments)")
    plot.set_defaults(func=_plot)

    doctor = commands.add_parser("doctor", help="self-test every core against its bit-exact model")
    doctor.add_argument(
        "--backend",
        action="append",
        choices=BACKENDS,
        default=None,
        help="backend(s) to test (repeatable; default: board on a board, else emu and rtl)",
    )
    doctor.add_argument("--board", default=None, help="Pynq-Z2 or ZCU106")
    doctor.set_defaults(func=_doctor)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``pynq-rl`` command line; returns the exit status.

    A mistake costs the user one line, as with git or pip: argparse answers a malformed command line with usage and
    exit status 2; anything a command raises (a bad value, an unknown environment, no board, a timeout) becomes
    ``error: <message>`` on stderr and exit status 1. ``--debug`` lets the exception through, traceback and all.
    Ctrl-C exits with 130.
    """
    args = build_parser().parse_args(argv)
    if args.debug:
        return args.func(args)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - the one place that turns any failure into one line
        print(f"error: {_one_line(error)} (--debug shows the traceback)", file=sys.stderr)
        return 1


def _one_line(error: BaseException) -> str:
    """The exception's message on one line, with its type where the message alone would be unclear."""
    text = " ".join(str(error).split()) or type(error).__name__
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
