"""The register reference of the overlay, exported from ``spec.py``: Markdown for people, a C header for bare metal.

Like LiteX's ``soc/integration/export.py`` (``get_csr_header``), every byte comes from the register tables in
:mod:`pynq_rl.overlay.spec`, the tables the HDL's decoder, the emulated cores, the drivers and the ``.hwh`` are built
from, so the reference cannot drift from the hardware. The committed copies (``docs/registers.md``,
``docs/pynq_rl_regs.h``) are checked by a test that fails when they are stale; regenerate them with::

    pynq-rl build regs                     # or: python -m pynq_rl.overlay.build.registers [--out DIR] [--check]

C names are ``PYNQ_RL_<CORE>_<REGISTER>_OFFSET`` / ``_RESET`` (``PYNQ_RL_<BOARD>_<CORE>_<REGISTER>`` for what a
build-parameter register reads on each board) and, per field, ``PYNQ_RL_<CORE>_<REGISTER>_<FIELD>``
with ``_OFFSET``, ``_SIZE`` and ``_MASK`` (LiteX's ``CSR_<REG>_<FIELD>_OFFSET``/``_SIZE``), plus the CTRL.MODE values,
the magic numbers and each board's base addresses; ``PYNQ_RL_GET``/``PYNQ_RL_SET`` read and place a field.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from pathlib import Path

from .. import spec as S

__all__ = ["markdown", "c_header", "write_exports", "stale_exports", "main", "DEFAULT_OUT", "EXPORTS"]

#: Where the committed exports live (the repository's ``docs/``).
DEFAULT_OUT = Path(__file__).resolve().parents[3] / "docs"

_COMMAND = "pynq-rl build regs"
_SOURCE = "pynq_rl/overlay/spec/"


def _hex(value: int, digits: int = 8) -> str:
    return f"0x{value:0{digits}X}"


def _value(reg: Mapping, value: int) -> str:
    """A register value: hexadecimal where fields pack it, decimal where it is one number."""
    return _hex(value) if _has_fields(reg) else str(value)


def _bits(fld: Mapping) -> str:
    lo, width = fld["bit_offset"], fld["bit_width"]
    return f"[{lo}]" if width == 1 else f"[{lo + width - 1}:{lo}]"


def _access(fld: Mapping) -> str:
    return f"{fld['access']}, pulse" if fld["pulse"] else fld["access"]


def _has_fields(reg: Mapping) -> bool:
    """Whether a register is more than one 32-bit value (its only field the default ``VALUE``)."""
    return list(reg["fields"]) != ["VALUE"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _c_name(*parts: str) -> str:
    return "_".join(re.sub(r"[^A-Za-z0-9]+", "_", part).strip("_").upper() for part in ("PYNQ_RL", *parts))


def _build_values(core: str) -> dict[str, dict[str, int]]:
    """Read-only build-parameter registers of ``core`` (not ID) -> board name -> the value that board's build reads."""
    values: dict[str, dict[str, int]] = {}
    for board in S.BOARDS.values():
        for slot in board.cores:
            if slot.name == core:
                for name, value in slot.spec.parameter_registers().items():
                    if name != "ID":
                        values.setdefault(name, {})[board.name] = value
    return values


def _sorted(table: Mapping[str, dict]) -> list[tuple[str, dict]]:
    return sorted(table.items(), key=lambda item: item[1]["address_offset"])


def _fields(reg: Mapping) -> list[tuple[str, dict]]:
    return sorted(reg["fields"].items(), key=lambda item: item[1]["bit_offset"])


# ---------------------------------------------------------------------------------------------------------------
# Markdown
# ---------------------------------------------------------------------------------------------------------------


def markdown() -> str:
    """The register reference as Markdown: the address map of every board, then per core its registers (offset,
    access, reset, description), the fields of each register that has them, and its CTRL.MODE values."""
    lines = [
        "# pynq-rl register reference",
        "",
        f"Generated from `{_SOURCE}` by `{_COMMAND}`: do not edit (a test fails when this file is stale).",
        f"Spec version {S.SPEC_VERSION_MAJOR}.{S.SPEC_VERSION_MINOR}. Every register is 32 bits wide and word aligned;",
        "`pulse` fields are self-clearing (write 1 to act, they read 0). STATUS error and saturation flags are sticky",
        "until the next START. Build-parameter registers read what the build was made with: the column gives each",
        "board's value. The C header `pynq_rl_regs.h` next to this file carries the same map.",
        "",
        "An operation runs with the registers' values at its START: a register written while STATUS.BUSY counts from",
        "the next START, and a write that acts on the core (a SEED reseeding a PRNG, EPSILON, REWARD) acts when the",
        "operation ends, with the last value written.",
        "",
        "Every access answers OKAY (BRESP and RRESP 0; no access raises a bus error): a read of an offset no register",
        "holds returns 0, and a write there or to a read-only register changes nothing. Registers decode by word",
        "address (address bits 1:0 are ignored; WSTRB selects the bytes written, and a pulse field acts only when its",
        "byte is written). SOFT_RESET drops an output beat the core holds; a driver's reset() resets the DMA with it.",
        "",
        "## Address map",
        "",
        "| board | core | VLNV | registers | AXI DMA |",
        "| --- | --- | --- | --- | --- |",
    ]
    for board in S.BOARDS.values():
        for slot in board.cores:
            lines.append(
                f"| {board.name} | {slot.name} | `{S.CORE_VLNVS[slot.name]}` | "
                f"{_hex(board.gp_base + slot.core_offset)} | {_hex(board.gp_base + slot.dma_offset)} |"
            )
    for core, table in S.CORE_REGISTERS.items():
        lines += [
            "",
            f"## {core} core",
            "",
            f"VLNV `{S.CORE_VLNVS[core]}`; ID reads {_hex(table['ID']['reset'])} "
            f"(magic {_hex(S.CORE_MAGICS[core], 4)}).",
            "",
            "| offset | register | access | reset | description |",
            "| --- | --- | --- | --- | --- |",
        ]
        built = _build_values(core)
        for name, reg in _sorted(table):
            reset = (
                ", ".join(f"{board}: {_value(reg, value)}" for board, value in built[name].items())
                if name in built
                else _hex(reg["reset"])
            )
            lines.append(
                f"| {_hex(reg['address_offset'], 2)} | {name} | {reg['access']} | {reset} | "
                f"{_cell(reg['description'])} |"
            )
        for name, reg in _sorted(table):
            if not _has_fields(reg):
                continue
            lines += [
                "",
                f"### {core}.{name}",
                "",
                "| bits | field | access | description |",
                "| --- | --- | --- | --- |",
            ]
            lines += [
                f"| {_bits(fld)} | {fname} | {_access(fld)} | {_cell(fld['description'])} |"
                for fname, fld in _fields(reg)
            ]
        modes = S.CORE_MODES[core]
        lines += ["", f"### {core}.CTRL.MODE", "", "| value | mode |", "| --- | --- |"]
        lines += [f"| {int(mode)} | {mode.name} |" for mode in modes]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# C header
# ---------------------------------------------------------------------------------------------------------------


def _define(name: str, value: str, comment: str = "") -> str:
    line = f"#define {name:<52} {value}"
    return f"{line}  /* {comment} */" if comment else line


def c_header() -> str:
    """The register map as a C header (C99, ``<stdint.h>`` only) for bare-metal code on the board's ARM cores."""
    guard = "PYNQ_RL_REGS_H"
    lines = [
        f"/* pynq-rl register map, generated from {_SOURCE} by `{_COMMAND}`: do not edit. */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <stdint.h>",
        "",
        _define(_c_name("SPEC_VERSION_MAJOR"), f"{S.SPEC_VERSION_MAJOR}u"),
        _define(_c_name("SPEC_VERSION_MINOR"), f"{S.SPEC_VERSION_MINOR}u"),
        "",
        "/* value of field F (a PYNQ_RL_<CORE>_<REG>_<FIELD> prefix) in register value v, and x placed in F */",
        "#define PYNQ_RL_GET(v, F) (((uint32_t)(v) & F##_MASK) >> F##_OFFSET)",
        "#define PYNQ_RL_SET(F, x) (((uint32_t)(x) << F##_OFFSET) & F##_MASK)",
    ]
    for board in S.BOARDS.values():
        lines += ["", f"/* {board.name} ({board.part}): base addresses */"]
        for slot in board.cores:
            lines.append(_define(_c_name(board.name, slot.name, "BASE"), f"{_hex(board.gp_base + slot.core_offset)}u"))
            lines.append(
                _define(_c_name(board.name, slot.name, "DMA_BASE"), f"{_hex(board.gp_base + slot.dma_offset)}u")
            )
        for slot in board.cores:
            lines += ["", f"/* {board.name} {slot.name} core: its build-parameter registers read */"]
            table = S.CORE_REGISTERS[slot.name]
            lines += [
                _define(_c_name(board.name, slot.name, name), f"{_value(table[name], value)}u")
                for name, value in slot.spec.parameter_registers().items()
                if name != "ID"
            ]
    for core, table in S.CORE_REGISTERS.items():
        lines += [
            "",
            f"/* {core} core: {S.CORE_VLNVS[core]} */",
            _define(_c_name(core, "MAGIC"), f"{_hex(S.CORE_MAGICS[core], 4)}u"),
        ]
        built = _build_values(core)
        for name, reg in _sorted(table):
            lines += [
                "",
                f"/* {name} ({reg['access']}): {_c_text(reg['description'])} */",
                _define(_c_name(core, name, "OFFSET"), f"{_hex(reg['address_offset'], 2)}u"),
            ]
            if name not in built:  # build parameters: PYNQ_RL_<BOARD>_<CORE>_<REG> above
                lines.append(_define(_c_name(core, name, "RESET"), f"{_hex(reg['reset'])}u"))
            if not _has_fields(reg):
                continue
            for fname, fld in _fields(reg):
                prefix = _c_name(core, name, fname)
                mask = ((1 << fld["bit_width"]) - 1) << fld["bit_offset"]
                lines += [
                    _define(f"{prefix}_OFFSET", f"{fld['bit_offset']}u", _c_comment(fld)),
                    _define(f"{prefix}_SIZE", f"{fld['bit_width']}u"),
                    _define(f"{prefix}_MASK", f"{_hex(mask)}u"),
                ]
        lines.append("")
        lines += [_define(_c_name(core, "MODE", mode.name), f"{int(mode)}u") for mode in S.CORE_MODES[core]]
    lines += ["", f"#endif /* {guard} */"]
    return "\n".join(lines) + "\n"


def _c_text(text: str) -> str:
    return text.replace("*/", "* /")


def _c_comment(fld: Mapping) -> str:
    text = _c_text(fld["description"])
    return f"{text} (pulse)" if fld["pulse"] else text


# ---------------------------------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------------------------------

#: The exports: file name -> the function that renders it.
EXPORTS = {"registers.md": markdown, "pynq_rl_regs.h": c_header}


def write_exports(out_dir: str | Path = DEFAULT_OUT) -> list[Path]:
    """Write every export into ``out_dir``; return their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, render in EXPORTS.items():
        path = out_dir / name
        path.write_text(render(), encoding="utf-8")
        paths.append(path)
    return paths


def stale_exports(out_dir: str | Path = DEFAULT_OUT) -> list[Path]:
    """The exports in ``out_dir`` that are missing or differ from what ``spec.py`` renders now."""
    out_dir = Path(out_dir)
    return [
        out_dir / name
        for name, render in EXPORTS.items()
        if not (out_dir / name).is_file() or (out_dir / name).read_text(encoding="utf-8") != render()
    ]


def main(argv: list[str] | None = None) -> int:
    """Command line: write the register reference (``--check``: only report stale files, exit 1 if any)."""
    parser = argparse.ArgumentParser(description="Export the register reference (Markdown + C header) from spec.py.")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="output directory (default: the repository's docs/)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if an export is stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_exports(args.out)
        for path in stale:
            print(f"stale: {path} (run `{_COMMAND}`)")
        return 1 if stale else 0
    for path in write_exports(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
