"""Structural checks on converted Verilog: MyHDL's processes, which are clocked, and what each one reads.

MyHDL writes every process as ``always @(<sensitivity>) begin: <name> ... end`` (clocked: ``posedge`` in the
sensitivity list) or ``assign <name> = <expression>;``, so a test can ask which signals combinational logic reads.
"""

import re
from dataclasses import dataclass

__all__ = ["Process", "processes"]

_ALWAYS = re.compile(r"always @\((.*?)\) begin: (\w+)\n(.*?)\nend\n", re.DOTALL)
_ASSIGN = re.compile(r"assign (\w+) = (.*?);\n")


@dataclass(frozen=True)
class Process:
    """One process of the converted file."""

    name: str
    clocked: bool
    text: str
    """the sensitivity list and body of an ``always`` block, or an ``assign``'s expression"""


def processes(verilog: str) -> list[Process]:
    """Every ``always`` block and ``assign`` of ``verilog``, in file order (blocks first)."""
    found = [Process(name, "posedge" in header, f"{header}\n{body}") for header, name, body in _ALWAYS.findall(verilog)]
    return found + [Process(name, False, expression) for name, expression in _ASSIGN.findall(verilog)]
