"""Command-line options generated from an agent's ``Args`` dataclass (what CleanRL gets from tyro): the command line
and the Python API share one list of arguments, one set of defaults and one help text.

Every field of ``Args`` that the agent does not compute at runtime (:func:`~.run.computed`) becomes one option:

* its flag is ``--field-name``, unless the caller's alias table names another (``total_timesteps`` -> ``--steps``);
* its type comes from the annotation: ``bool`` is a ``--flag/--no-flag`` pair, ``int``, ``float`` and ``str`` are
  converted by argparse, ``tuple[X, ...]`` takes one or more values, ``dict`` a JSON object; ``X | None`` is ``X``
  with the default None. Any other type needs the caller's ``overrides`` (``type=`` and ``metavar=``), else
  :func:`add_options` raises, so a new field cannot silently miss its option;
* its help text is the field's docstring (the string literal under it, :func:`field_docs`) and ``--help`` shows
  ``Args()``'s default (through :class:`~.argparsing.DefaultsHelpFormatter`, which leaves out a default of None:
  the docstring says what None does).

The parsed namespace remembers which options the user gave (:func:`given`): the others keep ``Args``' defaults, so an
agent that picks its defaults from the environment (PPO's continuous-control defaults, :func:`~.ppo.args_for`) gets
only what was typed. Errors that name fields (:class:`~.checks.FieldValueError`) are reworded with the flags the user
typed by :func:`flag_message`, and so are warnings that name fields (:class:`~.checks.FieldWarning`).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import json
import re
import textwrap
import types
import typing
from typing import Any

from .checks import FieldValueError, FieldWarning
from .run import is_computed

__all__ = ["field_docs", "option_fields", "without_none", "add_options", "given", "flag_message"]


def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings of a dataclass's fields (the string literal under each field, CleanRL's ``Args`` style),
    whitespace collapsed.

    They are read with :mod:`ast` from the class's source, which the wheel ships; a class without source gives ``{}``.
    """
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    class_node = ast.parse(source).body[0]
    if not isinstance(class_node, ast.ClassDef):
        return {}
    docs = {}
    for statement, after in zip(class_node.body, class_node.body[1:]):
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[statement.target.id] = " ".join(after.value.value.split())
    return docs


def option_fields(cls: type) -> list[dataclasses.Field]:
    """The fields of ``cls`` that are options: all but those the agent computes at runtime."""
    return [f for f in dataclasses.fields(cls) if not is_computed(f)]


class _Default:
    """An option's default as ``--help`` shows it; an option whose value is still one was not given.

    ``shown`` is what ``--help`` prints instead of the value (``auto`` for the None of a choice that offers it)."""

    def __init__(self, value: Any, shown: str | None = None) -> None:
        self.value = value
        self.shown = shown

    def __str__(self) -> str:
        if self.shown is not None:
            return self.shown
        if isinstance(self.value, tuple) and not any(isinstance(v, (tuple, list)) for v in self.value):
            return " ".join(str(v) for v in self.value)  # as nargs="+" takes it
        return str(self.value)


def _default(f: dataclasses.Field) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def without_none(annotation: Any) -> Any:
    """``X`` for ``X | None`` (and ``Optional[X]``), else the annotation itself."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(inner) == 1:
            return inner[0]
    return annotation


def _option(annotation: Any, name: str) -> dict[str, Any]:
    """``add_argument`` keywords for a field of type ``annotation``."""
    kind = without_none(annotation)
    if kind is bool:
        return {"action": argparse.BooleanOptionalAction}
    if kind in (int, float, str):
        return {"type": kind}
    if typing.get_origin(kind) is tuple:
        items = typing.get_args(kind)
        if len(items) == 2 and items[1] is Ellipsis and items[0] in (int, float, str):
            return {"type": items[0], "nargs": "+"}
    if kind is dict or typing.get_origin(kind) is dict:
        return {"type": json.loads, "metavar": "JSON"}
    raise TypeError(f"field {name!r} of type {annotation!r} needs an entry in overrides (type=, metavar=)")


def add_options(
    parser: argparse.ArgumentParser,
    args_cls: type,
    flags: dict[str, str] | None = None,
    choices: dict[str, tuple] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
) -> dict[str, str]:
    """Add one option per field of ``args_cls`` (see the module docstring) to ``parser``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        Best an :class:`~.argparsing.Parser` (or built with ``formatter_class=argparsing.DefaultsHelpFormatter``),
        which shows the defaults.
    args_cls : type
        The agent's ``Args`` dataclass.
    flags : dict, optional
        Field name -> flag, where the flag is not ``--field-name`` (fields ``args_cls`` lacks are ignored).
    choices : dict, optional
        Field name -> accepted values.
    overrides : dict, optional
        Field name -> ``add_argument`` keywords replacing the generated ones (``type``, ``metavar``...).

    Returns
    -------
    dict
        Field name -> the flag the option got (for :func:`flag_message`).

    Raises
    ------
    TypeError
        A field of a type this module cannot parse and that has no ``overrides`` entry.
    """
    flags, choices, overrides = flags or {}, choices or {}, overrides or {}
    hints = typing.get_type_hints(args_cls)
    docs = field_docs(args_cls)
    used = {}
    for f in option_fields(args_cls):
        flag = flags.get(f.name, "--" + f.name.replace("_", "-"))
        kwargs: dict[str, Any] = {
            "dest": f.name,
            "default": _Default(_default(f)),
            "help": docs.get(f.name, "").replace("%", "%%") or " ",
        }
        if f.name in overrides:
            kwargs.update(overrides[f.name])
        else:
            kwargs.update(_option(hints[f.name], f.name))
        if f.name in choices:
            kwargs["choices"] = choices[f.name]
            if _default(f) is None and "auto" in choices[f.name]:
                kwargs["default"] = _Default(None, shown="auto")  # the choice that means None
        if "type" in kwargs and "choices" not in kwargs and "metavar" not in kwargs:
            kwargs["metavar"] = flag[2:].upper().replace("-", "_")
        parser.add_argument(flag, **kwargs)
        used[f.name] = flag
    return used


def given(namespace: argparse.Namespace, args_cls: type) -> dict[str, Any]:
    """The fields of ``args_cls`` the user gave on the command line, with their parsed values (lists as tuples).

    Build the arguments with ``args_cls(**given(namespace, args_cls))``: every other field keeps its default.
    """
    out = {}
    for f in option_fields(args_cls):
        value = getattr(namespace, f.name, None)
        if isinstance(value, _Default) or not hasattr(namespace, f.name):
            continue
        out[f.name] = tuple(value) if isinstance(value, list) else value
    return out


def flag_message(error: BaseException, flags: dict[str, str]) -> str:
    """``error``'s message with the fields a :class:`~.checks.FieldValueError` (or :class:`~.checks.FieldWarning`) names
    replaced by their flags."""
    text = str(error)
    if isinstance(error, (FieldValueError, FieldWarning)):
        for name in error.fields:
            if name in flags:
                text = re.sub(rf"(?<![\w-]){re.escape(name)}(?!\w)", flags[name], text)
    return text
