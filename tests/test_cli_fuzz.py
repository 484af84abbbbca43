"""The command line's agent options under random values: every value is either accepted by the agent's checks or
refused before any work with an error that names a flag, never a traceback or an error in field names."""

import argparse

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pynq_rl.host.agents import dqn, ppo, sarsa
from pynq_rl.host.agents.common.checks import FieldValueError
from pynq_rl.host.agents.common.options import flag_message
from pynq_rl.host.agents.distributed import apex_args
from tests.cli_harness import agent_parser, parse

CHECKS = {"ppo": ppo.check_args, "dqn": dqn.check_args, "sarsa": sarsa.check_args, "apex": apex_args.check_args}

junk = st.one_of(
    st.text(max_size=12),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "1e999", "-0", "", "0x10", "{", "[]", '{"sets": 1}', "None", "true"]),
)


def _value_options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options that take a value (not the switches, not --help)."""
    return [a for a in parser._actions if a.option_strings and a.nargs != 0 and a.dest != "help"]


@pytest.mark.parametrize("name", CHECKS)
def test_random_option_values_pass_the_checks_or_are_refused_naming_a_flag(name, capsys):
    parser = agent_parser(name)
    options = _value_options(parser)
    flags = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}

    @settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(option=st.sampled_from(options), value=junk)
    def check(option, value):
        flag = option.option_strings[0]
        try:
            CHECKS[name](parse([name, f"{flag}={value}"]))  # parsing may check too (PPO's env id picks defaults)
        except SystemExit as exit:  # argparse's usage error: status 2, the message names the option
            assert exit.code == 2
            err = capsys.readouterr().err
            assert any(s in err for s in option.option_strings), (flag, value, err)
        except FieldValueError as error:  # the command line rewords it in flags
            text = flag_message(error, flags)
            assert any(f in text for f in flags.values()), (flag, value, text)

    check()


# -- every numeric flag through the whole command line ---------------------------------------------------------------
BOUNDS = {"ppo": ppo.BOUNDS, "dqn": dqn.BOUNDS, "sarsa": sarsa.BOUNDS, "apex": apex_args.BOUNDS}
ARGS = {"ppo": ppo.Args, "dqn": dqn.Args, "sarsa": sarsa.Args, "apex": apex_args.Args}
NUMERIC_FLAGS = [
    (name, action.option_strings[0], action.dest)
    for name in BOUNDS
    for action in agent_parser(name)._actions
    if action.option_strings and action.dest in BOUNDS[name]
]
NEVER_VALID = ["nan", "-nan", "inf", "-inf", "1e999", "-1e999", "1e30", "-1e30", str(10**30), str(-(10**30))]
"""values no numeric option takes: not a number, an infinity, or a magnitude past every bound"""


class _TrainReached(Exception):
    """Raised by the stand-in ``train``: the command line let the value through to the agent."""


@pytest.fixture
def reach_no_agent(monkeypatch):
    """``pynq-rl train`` with every agent's ``train`` replaced by one that raises :class:`_TrainReached`, so each
    example costs the command line's checks and nothing more."""
    import pynq_rl.cli as cli

    def reached(config):
        raise _TrainReached("train reached")

    agents = cli._agents
    monkeypatch.setattr(cli, "_agents", lambda: {k: a._replace(train=reached) for k, a in agents().items()})


def test_every_numeric_option_of_every_agent_has_a_bound():
    """``check_bounds`` refuses an ``Args`` with a numeric field missing from the table, so the table is complete if
    the defaults pass; and the defaults lie inside their own bounds."""
    for name, check in CHECKS.items():
        check(ARGS[name]())
        numeric = {dest for agent, _, dest in NUMERIC_FLAGS if agent == name}
        assert numeric == set(BOUNDS[name]), name


def test_a_numeric_field_without_a_bound_is_a_programming_error():
    from dataclasses import dataclass

    from pynq_rl.host.agents.common.bounds import check_bounds, count

    @dataclass
    class Args:
        steps: int = 1
        rate: float = 0.5

    with pytest.raises(TypeError, match=r"Args fields without a bound: rate"):
        check_bounds(Args(), {"steps": count()})


@pytest.mark.usefixtures("reach_no_agent")
@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(option=st.sampled_from(NUMERIC_FLAGS), value=st.one_of(st.sampled_from(NEVER_VALID), junk))
def test_numeric_options_are_refused_up_front_naming_the_flag_or_reach_the_agent(option, value, capsys, tmp_path):
    """Any value of any numeric option of ``train ppo|dqn|sarsa|apex`` is either refused before any work (exit 2,
    one line naming the flag as typed, no run directory) or reaches the agent; a value no option takes (NaN, an
    infinity where none is meant, 1e30) is always refused."""
    from pynq_rl.cli import main

    name, flag, dest = option
    out = tmp_path / "runs"
    try:
        status = main(["train", name, f"{flag}={value}", "--out", str(out), "--no-progress"])
    except SystemExit as exit:  # argparse's own refusal (not a number at all): usage, naming the option
        status = exit.code
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    reached = len(errors) == 1 and "train reached" in errors[0]
    meant = value in ("inf", "1e999") and BOUNDS[name][dest].infinite  # target_return = inf: never stop on it
    assert not (value in NEVER_VALID and not meant and reached), (flag, value, "was let through")
    if not reached:
        assert status == 2, (flag, value, status, errors)
        assert len(errors) == 1 and flag in errors[0], (flag, value, errors)
    assert not out.exists() or list(out.iterdir()) == []  # nothing was written before the agent would run
