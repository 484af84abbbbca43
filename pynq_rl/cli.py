"""The ``pynq-rl`` command line (also ``python -m pynq_rl``).

::

    pynq-rl info [--backend emu] [--board Pynq-Z2]        backend, board, cores, build parameters, ID registers
    pynq-rl train ppo --env CartPole-v1 --backend emu --steps 300000 --seed 0 --out runs
    pynq-rl build hwh --board ZCU106 --out DIR             the overlay's .hwh (+ empty .bit) from spec.py
    pynq-rl build verilog [--board Pynq-Z2] [--out DIR]    MyHDL -> Verilog, Verilator-linted
    pynq-rl build report [--out benchmarks/results]        yosys resource tables
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
    config = ppo.Args(env_id=args.env, seed=args.seed, total_timesteps=args.steps, gae_backend=args.backend,
                      board=args.board, reward_norm=args.reward_norm, quantize=not args.raw, out_dir=args.out,
                      progress=not args.no_progress)
    summary = ppo.train(config)
    print(json.dumps({k: v for k, v in summary.items() if k not in ("episode_returns", "episode_lengths")},
                     indent=2, default=str))
    return 0


def _build_hwh(args: argparse.Namespace) -> int:
    from .overlay import spec
    from .overlay.build.hwh import write_overlay_files
    print(write_overlay_files(spec.board(args.board), args.out).with_suffix(".hwh"))
    return 0


def _build_verilog(args: argparse.Namespace) -> int:
    from .overlay.build import verilog
    argv = ["--out", args.out] + (["--board", args.board] if args.board else []) + (["--no-lint"] if args.no_lint else [])
    return verilog.main(argv)


def _build_report(args: argparse.Namespace) -> int:
    from .overlay.build import report
    out = args.out or ("overlay/build/out/report-quick" if args.quick else "benchmarks/results")
    return report.main(["--out", out] + (["--quick"] if args.quick else [])) or 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``pynq-rl`` (sub-commands ``info``, ``train``, ``build``)."""
    parser = argparse.ArgumentParser(prog="pynq-rl", description="RL kernels on PYNQ: run, train, build.")
    commands = parser.add_subparsers(dest="command", required=True)

    info = commands.add_parser("info", help="show backend, board, cores and their ID/build registers")
    info.add_argument("--backend", choices=BACKENDS, default=None, help="default: board on a PYNQ board, else emu")
    info.add_argument("--board", default=None, help="Pynq-Z2 or ZCU106")
    info.set_defaults(func=_info)

    train = commands.add_parser("train", help="train an agent with its kernel offloaded")
    agents = train.add_subparsers(dest="agent", required=True)
    ppo = agents.add_parser("ppo", help="PPO with GAE on the GAE core")
    ppo.add_argument("--env", default="CartPole-v1", help="gymnasium environment id")
    ppo.add_argument("--backend", choices=("torch",) + BACKENDS, default="emu",
                     help="where GAE runs: torch (host reference) or the GAE core on board/emu/rtl")
    ppo.add_argument("--board", default=None, help="Pynq-Z2 or ZCU106")
    ppo.add_argument("--steps", type=int, default=300_000, help="total environment steps")
    ppo.add_argument("--seed", type=int, default=0, help="random seed")
    ppo.add_argument("--out", default="runs", help="directory for metrics and checkpoints")
    ppo.add_argument("--reward-norm", choices=("dynamic",), default=None, help="HEPPO dynamic reward standardization")
    ppo.add_argument("--raw", action="store_true", help="raw Q15.16 GAE inputs instead of 8-bit block codes")
    ppo.add_argument("--no-progress", action="store_true", help="no progress bar")
    ppo.set_defaults(func=_train_ppo)

    build = commands.add_parser("build", help="build steps that need no Vivado")
    steps = build.add_subparsers(dest="step", required=True)
    hwh = steps.add_parser("hwh", help="write the overlay's .hwh from spec.py")
    hwh.add_argument("--board", default=None, help="Pynq-Z2 or ZCU106")
    hwh.add_argument("--out", required=True, help="output directory")
    hwh.set_defaults(func=_build_hwh)
    verilog = steps.add_parser("verilog", help="convert the cores to Verilog and lint them")
    verilog.add_argument("--board", default=None, help="Pynq-Z2 or ZCU106")
    verilog.add_argument("--out", default="overlay/build/out", help="output directory")
    verilog.add_argument("--no-lint", action="store_true", help="skip the Verilator lint")
    verilog.set_defaults(func=_build_verilog)
    report = steps.add_parser("report", help="yosys synth_xilinx resource tables (LUT/FF/DSP/BRAM)")
    report.add_argument("--out", default=None,
                        help="output directory (default benchmarks/results; overlay/build/out/report-quick with --quick)")
    report.add_argument("--quick", action="store_true", help="only the smallest configurations")
    report.set_defaults(func=_build_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``pynq-rl`` command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
