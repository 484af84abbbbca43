"""The command line's agent options under random values: every value is either accepted by the agent's checks or
refused before any work with an error that names a flag, never a traceback or an error in field names."""

import argparse

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pynq_rl.host.agents import dqn, ppo, sarsa
from pynq_rl.host.agents.distributed import apex_args
from pynq_rl.host.agents.options import flag_message
from pynq_rl.host.agents.run import FieldValueError
from tests.test_cli import agent_parser, parse

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
