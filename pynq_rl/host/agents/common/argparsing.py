"""The ``pynq-rl`` command line's argparse parts: help that shows every default, and errors that suggest the name
the user probably meant.

* :class:`DefaultsHelpFormatter` appends ``(default: X)`` to every option's help, as argparse's
  ``ArgumentDefaultsHelpFormatter`` does, but leaves out the defaults that say nothing: a build step's None, the
  False of an on/off switch and suppressed ones (an agent's None is shown: its docstring says what it means), and
  wraps help text only at spaces, so a default path (``/home/me/pynq-rl/...``) is shown whole, never split at a
  hyphen.
* :class:`Parser` uses it, and answers a misspelt option or sub-command with a suggestion drawn from what the parser
  the command line reached accepts (``--setps`` -> ``did you mean --steps?``, ``trian`` -> ``did you mean
  'train'?``), with :func:`difflib.get_close_matches` (Python 3.11's argparse has no ``suggest_on_error``).
  Unrecognized arguments are reported by that sub-parser, with its usage line: the whole usage when it fits on one
  line, else ``usage: pynq-rl train ppo [options] (--help lists them)``, so the error is not lost under a screenful
  of options.
* :func:`walk` lists a parser and all its sub-parsers (to add an option to every one, or to check every ``--help``).
"""

from __future__ import annotations

import argparse
import difflib
import sys
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

__all__ = ["DefaultsHelpFormatter", "Parser", "walk", "reached", "suggestion"]

_BOOLEAN_DEFAULT = " (default: %(default)s)"
"""what Python 3.11's ``BooleanOptionalAction`` appends to its help by itself (3.13 leaves it to the formatter)"""


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with ``(default: X)``, except where the default is suppressed, the False of a
    ``store_true`` switch, or a plain None (a build step's "computed when not given"); an agent's option shows its
    ``Args`` default even when it is None, whose meaning its docstring gives (``None: the board PYNQ reports``), or
    ``auto`` where that is the choice that means None. A help text that shows ``%(default)s`` itself is left as it
    is."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = (action.help or "").replace(_BOOLEAN_DEFAULT, "")
        field = hasattr(action.default, "value")  # options.py wraps Args' defaults
        value = action.default.value if field else action.default
        if "%(default)" in text or (value is None and not field) or value is argparse.SUPPRESS:
            return text
        if action.nargs == 0 and not isinstance(action, argparse.BooleanOptionalAction):
            return text  # store_true / store_false / count: the flag's presence is the value
        return f"{text}{_BOOLEAN_DEFAULT}" if text.strip() else _BOOLEAN_DEFAULT.strip()

    def _split_lines(self, text: str, width: int) -> list[str]:
        """Wrap at spaces only: argparse's textwrap also breaks after a hyphen and inside words longer than the
        column, which cut a default path (``/home/me/pynq-`` / ``rl/pynq_rl/...``) into a text no one can copy; a
        path longer than the column runs past it instead."""
        text = self._whitespace_matcher.sub(" ", text).strip()
        return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)


def walk(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """``parser`` and every sub-parser below it, depth first."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases map to the same parser
                yield from walk(sub)


def reached(parser: argparse.ArgumentParser, namespace: argparse.Namespace) -> argparse.ArgumentParser:
    """The deepest sub-parser of ``parser`` that the parsed command line (``namespace``) selected."""
    while True:
        subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subparsers:
            return parser
        name = getattr(namespace, subparsers[0].dest or "", None)
        if name not in subparsers[0].choices:
            return parser
        parser = subparsers[0].choices[name]


def suggestion(word: str, candidates: Sequence[str]) -> str | None:
    """The candidate closest to ``word`` (the user's probable meaning), or None if none is close."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return close[0] if close else None


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    return [s for a in parser._actions for s in a.option_strings if a.help is not argparse.SUPPRESS]


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` (sub-parsers are of this class too) that shows every default in ``--help``
    (:class:`DefaultsHelpFormatter`) and suggests the closest option or choice for a misspelt one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)
        self.option_hints: dict[str, str] = {}
        """option this parser does not take -> what to say instead of the closest spelling (``train apex --steps``:
        Ape-X's length is counted in learner updates, and ``--n-step`` would be the wrong guess)"""

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """As ``ArgumentParser.parse_args``; unrecognized arguments are reported by the sub-parser they were given to,
        with the closest option it has for each (``unrecognized arguments: --setps 100; did you mean --steps?``)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            parser = reached(self, parsed)
            options = _option_strings(parser)
            hints = getattr(parser, "option_hints", {})
            told = [hints[option] for token in extras if (option := token.split("=", 1)[0]) in hints]
            close = [
                close
                for token in extras
                if token.startswith("-")
                and token.split("=", 1)[0] not in hints
                and (close := suggestion(token.split("=", 1)[0], options)) is not None
            ]
            text = f"unrecognized arguments: {' '.join(extras)}"
            if close:
                text += f"; did you mean {' or '.join(dict.fromkeys(close))}?"
            for hint in dict.fromkeys(told):
                text += f"; {hint}"
            parser.error(text)
        return parsed

    def error(self, message: str) -> NoReturn:
        """Print the usage (one line: the whole of it if it fits, else the command and a pointer to ``--help``) and
        ``<prog>: error: <message>``, then exit with status 2, as argparse does."""
        usage = self.format_usage()
        if usage.strip().count("\n"):
            usage = f"usage: {self.prog} [options] (--help lists them)\n"
        self._print_message(usage, sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's check of a choice (a sub-command name, ``--backend``...), with the closest choice suggested."""
        if action.choices is not None and value not in action.choices:
            choices = [str(c) for c in action.choices]
            text = f"invalid choice: {value!r} (choose from {', '.join(map(repr, action.choices))})"
            close = suggestion(str(value), choices)
            if close is not None:
                text += f"; did you mean {close!r}?"
            raise argparse.ArgumentError(action, text)
