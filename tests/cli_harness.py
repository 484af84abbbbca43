"""Shared by the command line's tests: an agent's ``train`` sub-parser, and the ``Args`` a command line runs with."""

import argparse

from pynq_rl.cli import build_parser
from pynq_rl.host.agents.common.options import given


def agent_parser(name: str) -> argparse.ArgumentParser:
    """The ``train <name>`` sub-parser."""
    (train,) = (a for a in build_parser()._subparsers._group_actions if "train" in a.choices)
    (agents,) = train.choices["train"]._subparsers._group_actions
    return agents.choices[name]


def parse(argv: list[str]):
    """The agent's Args that ``pynq-rl train ...argv`` runs with."""
    args = build_parser().parse_args(["train", *argv])
    return args.make_args(given(args, args.args_cls))
