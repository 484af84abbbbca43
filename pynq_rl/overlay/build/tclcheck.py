"""Static checks of the generated Vivado scripts, runnable without Vivado.

Two checks, both needing only ``tclsh`` (Debian package ``tcl``):

* **stubbed run**: the script runs in ``tclsh`` with every allow-listed Vivado command defined as a stub that
  records its call and returns a plausible value; any other unknown command is an error. This checks the Tcl
  syntax, the argument counts of the procedures in ``tcl/procs.tcl``, that nothing outside the allow-list runs on
  the path taken, and gives the recorded calls to the consistency test (addresses, registers, widths).
* **static scan**: every command word in the script (line starts, ``[...]``, after ``;``), including the
  branches the stubbed run did not take, is an allow-listed Vivado command, a Tcl built-in or one of our procs.

The allow-list holds long-standing commands of the Vivado Tcl Command Reference (UG835) that both supported
releases, 2022.1 (PYNQ v3.0) and 2024.1 (PYNQ v3.1), document. It was written from that reference, not checked
against a Vivado install (none is here): a new command goes into the list only with its UG835 entry in both
releases. What the stubs cannot check (option names, property names, IP parameter names) is checked by the first
real build, whose ``.hwh`` is compared with spec.py (:func:`.vivado.check_hwh`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .. import spec as S

__all__ = [
    "VIVADO_COMMANDS",
    "TCL_BUILTINS",
    "TclCheckError",
    "TclRun",
    "tclsh",
    "run_stubbed",
    "command_words",
    "check_script",
    "defined_procs",
]

#: Vivado Tcl commands the flow may use: each documented in UG835 for Vivado 2022.1 and 2024.1.
VIVADO_COMMANDS = frozenset(
    {
        # project, files, properties, catalogs
        "version",
        "get_param",
        "set_param",
        "create_project",
        "open_project",
        "close_project",
        "current_project",
        "current_fileset",
        "add_files",
        "get_files",
        "update_compile_order",
        "set_property",
        "get_property",
        "get_board_parts",
        "get_ipdefs",
        "update_ip_catalog",
        # IP packager
        "ipx::package_project",
        "ipx::current_core",
        "ipx::get_bus_interfaces",
        "ipx::infer_bus_interface",
        "ipx::get_bus_parameters",
        "ipx::add_bus_parameter",
        "ipx::remove_bus_parameter",
        "ipx::associate_bus_interfaces",
        "ipx::get_memory_maps",
        "ipx::add_memory_map",
        "ipx::get_address_blocks",
        "ipx::add_address_block",
        "ipx::remove_address_block",
        "ipx::add_register",
        "ipx::get_registers",
        "ipx::add_field",
        "ipx::create_xgui_files",
        "ipx::update_checksums",
        "ipx::check_integrity",
        "ipx::save_core",
        # IP integrator
        "create_bd_design",
        "create_bd_cell",
        "apply_bd_automation",
        "get_bd_cells",
        "create_bd_intf_pin",
        "create_bd_pin",
        "connect_bd_intf_net",
        "connect_bd_net",
        "get_bd_intf_pins",
        "get_bd_pins",
        "get_bd_addr_segs",
        "get_bd_addr_spaces",
        "assign_bd_address",
        "validate_bd_design",
        "save_bd_design",
        "generate_target",
        "make_wrapper",
        # runs, reports, bitstream
        "reset_run",
        "launch_runs",
        "wait_on_run",
        "get_runs",
        "open_run",
        "report_timing_summary",
        "report_utilization",
        "get_timing_paths",
        "write_bitstream",
    }
)

#: Tcl built-in commands the scripts may use (plain Tcl 8.6, as in Vivado's interpreter).
TCL_BUILTINS = frozenset(
    {
        "set",
        "proc",
        "namespace",
        "variable",
        "if",
        "foreach",
        "return",
        "error",
        "puts",
        "expr",
        "list",
        "lindex",
        "llength",
        "lsort",
        "lsearch",
        "lassign",
        "lappend",
        "split",
        "join",
        "string",
        "format",
        "file",
        "source",
        "incr",
        "catch",
    }
)

_PRELUDE = r"""
set ::pynq_rl_calls {}
array set ::stub_property {}
array set ::stub_result {}
set ::stub_file_exists 1
set ::stub_serial 0
proc ::_stub_record {name arguments} {
    lappend ::pynq_rl_calls [linsert $arguments 0 $name]
}
proc ::_stub_token {name arguments} {
    if {[info exists ::stub_result($name)]} {
        return $::stub_result($name)
    }
    set last [lindex $arguments end]
    if {[llength $arguments] > 0 && [llength $last] == 1 && ![string match -* $last]} {
        return $last
    }
    incr ::stub_serial
    return "${name}#$::stub_serial"
}
proc ::_stub {name arguments} {
    ::_stub_record $name $arguments
    switch -glob -- $name {
        version { return $::stub_result(version) }
        get_property {
            set prop [lindex $arguments end-1]
            set obj [lindex $arguments end]
            if {[info exists ::stub_property($prop,$obj)]} { return $::stub_property($prop,$obj) }
            if {[info exists ::stub_property($prop)]} { return $::stub_property($prop) }
            if {$prop eq "NAME"} { return $obj }
            return "stub:$prop"
        }
        get_board_parts {
            if {[info exists ::stub_result(get_board_parts)]} { return $::stub_result(get_board_parts) }
            return [string map {* x} [lindex $arguments end]]
        }
        make_wrapper { return "pynq_rl_wrapper.v" }
        get_param {
            if {[info exists ::stub_result(get_param)]} { return $::stub_result(get_param) }
            return ""
        }
        ipx::get_bus_interfaces {
            set i 0
            while {$i < [llength $arguments]} {
                set word [lindex $arguments $i]
                if {$word in {-of_objects -filter}} { incr i 2; continue }
                if {[string match -* $word]} { incr i; continue }
                return "busif:$word"
            }
            return [::_stub_token $name $arguments]
        }
        get_timing_paths {
            set type [lsearch -exact $arguments -delay_type]
            return "timing_path_[lindex $arguments [expr {$type + 1}]]"
        }
        get_ipdefs {
            if {[regexp {"([^"]+)"} [lindex $arguments end] -> vlnv]} { return [string map {:* :9.9} $vlnv] }
            return [::_stub_token $name $arguments]
        }
        ipx::add_* - ipx::get_registers {
            return "[lindex $arguments 0]@[lindex $arguments end]"
        }
        get_* - create_* - current_* - ipx::get_* - ipx::add_* - ipx::current_* - ipx::package_project {
            return [::_stub_token $name $arguments]
        }
        default { return "" }
    }
}
set ::stub_result(version) 2022.1
foreach cmd $::allowed_vivado {
    if {[string first :: $cmd] >= 0} {
        namespace eval ::[namespace qualifiers $cmd] {}
    }
    proc ::$cmd {args} "::_stub [list $cmd] \$args"
}
rename ::file ::_tcl_file
proc ::file {sub args} {
    switch -- $sub {
        mkdir { ::_stub_record "file mkdir" $args; return }
        exists { ::_stub_record "file exists" $args; return $::stub_file_exists }
        default { return [::_tcl_file $sub {*}$args] }
    }
}
rename ::unknown ::_tcl_unknown
proc ::unknown {args} {
    error "pynq-rl check: command '[lindex $args 0]' is not an allow-listed Vivado command"
}
"""

_EPILOGUE = r"""
set rc [catch {source $::script_path} message]
foreach call $::pynq_rl_calls {
    set words {}
    foreach word $call { lappend words [string map [list \n \\n \x1f { }] $word] }
    puts "CALL\x1f[join $words \x1f]"
}
if {$rc} {
    puts "ERROR\x1f[string map [list \n \\n] $message]"
    exit 3
}
exit 0
"""


class TclCheckError(RuntimeError):
    """A generated Tcl script failed a static check."""


@dataclass
class TclRun:
    """What a stubbed run of a script did."""

    calls: list[tuple[str, ...]] = field(default_factory=list)
    """every stubbed call in order: (command, arg, ...)"""
    output: list[str] = field(default_factory=list)
    """what the script printed (``puts``)"""
    error: str | None = None
    """the error that ended the script, or None"""

    def commands(self) -> set[str]:
        """the distinct commands called"""
        return {call[0] for call in self.calls}

    def find(self, command: str) -> list[tuple[str, ...]]:
        """the calls of ``command``, arguments only"""
        return [call[1:] for call in self.calls if call[0] == command]


def tclsh() -> str:
    """Path of ``tclsh``; ``FileNotFoundError`` says how to install it."""
    path = shutil.which("tclsh") or shutil.which("tclsh8.6")
    if path is None:
        raise FileNotFoundError("tclsh not found: apt-get install tcl (Debian) to check the Vivado scripts")
    return path


def _tcl_list(words) -> str:
    return "{" + " ".join("{" + w + "}" for w in words) + "}"


def run_stubbed(
    script: str | Path,
    properties: Mapping[str, str] | None = None,
    results: Mapping[str, str] | None = None,
    file_exists: bool = True,
    timeout_s: float = 30.0,
) -> TclRun:
    """Run ``script`` in tclsh with the allow-listed Vivado commands stubbed; return what it called.

    ``properties`` sets what ``get_property NAME obj`` returns (keys ``NAME`` or ``NAME,obj``; defaults: the
    object for ``NAME``, ``stub:<NAME>`` otherwise), ``results`` what a command returns (e.g. ``version``,
    ``get_board_parts``, ``get_param``), ``file_exists`` what ``file exists`` answers. Unknown commands raise in the
    script. Stubs of ``ipx::add_*`` and ``ipx::get_registers`` return ``<name>@<parent>``, ``ipx::get_bus_interfaces``
    of a named interface ``busif:<name>``, ``get_param`` an empty value, ``get_ipdefs`` the VLNV its
    filter names (a wildcard version becomes ``9.9``), ``get_timing_paths`` ``timing_path_<max|min>`` (so
    ``SLACK,timing_path_min`` sets the hold slack), other getters and creators their last single-word
    argument (an object name), so the recorded calls can be read back as a netlist.
    """
    script = Path(script).resolve()
    properties = {
        "SLACK": "0.250",
        "PROGRESS": "100%",
        "STATUS,synth_1": "synth_design Complete!",
        "STATUS,impl_1": "route_design Complete!",
        **(properties or {}),
    }
    setup = [
        f"set ::allowed_vivado {_tcl_list(sorted(VIVADO_COMMANDS))}",
        _PRELUDE,
        f"set ::stub_file_exists {int(bool(file_exists))}",
    ]
    for key, value in properties.items():
        setup.append(f"set {{::stub_property({key})}} {{{value}}}")
    for key, value in (results or {}).items():
        setup.append(f"set {{::stub_result({key})}} {{{value}}}")
    setup.append(f"set ::script_path {{{script}}}")
    setup.append(_EPILOGUE)
    with tempfile.NamedTemporaryFile("w", suffix=".tcl", delete=False) as driver:
        driver.write("\n".join(setup))
    try:
        result = subprocess.run([tclsh(), driver.name], capture_output=True, text=True, timeout=timeout_s)
    finally:
        Path(driver.name).unlink()
    run = TclRun()
    for line in result.stdout.splitlines():
        if line.startswith("CALL\x1f"):
            run.calls.append(tuple(w.replace("\\n", "\n") for w in line.split("\x1f")[1:]))
        elif line.startswith("ERROR\x1f"):
            run.error = line.split("\x1f", 1)[1].replace("\\n", "\n")
        else:
            run.output.append(line)
    if result.returncode not in (0, 3) or (result.returncode == 3) != (run.error is not None):
        raise TclCheckError(f"tclsh failed on {script} (exit {result.returncode}):\n{result.stderr.strip()}")
    return run


_CONTINUATION = re.compile(r"\\\n\s*")
_QUOTED = re.compile(r'"(?:\\.|[^"\\])*"')
_SUBSTITUTION = re.compile(r"(?<!\\)\[\s*([A-Za-z_][\w:]*)")
_COMMAND_START = re.compile(r"(?:^|(?<!\\)\[|;)\s*([A-Za-z_][\w:]*)")


def command_words(text: str) -> set[str]:
    """The command words of a Tcl script: first words of lines and of ``[...]`` substitutions and after ``;``.

    Comment lines are dropped, continuation lines joined and quoted strings reduced to their ``[...]`` first. (A
    heuristic for our generated scripts, whose data never starts a line; the stubbed run is the exact check of the
    path taken.)
    """
    words: set[str] = set()
    # A quoted string contributes only its command substitutions: its text may hold ';' or '[' escaped as data.
    text = _QUOTED.sub(
        lambda m: " ".join(f"[{w}" for w in _SUBSTITUTION.findall(m.group(0))), _CONTINUATION.sub(" ", text)
    )
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        for match in _COMMAND_START.finditer(stripped):
            words.add(match.group(1))
    return words


def defined_procs(text: str) -> set[str]:
    """Names of the procedures a Tcl script defines (``proc NAME``)."""
    return set(re.findall(r"^\s*proc\s+(?:::)?([\w:]+)", text, flags=re.M))


def check_script(path: str | Path, board: S.BoardSpec | None = None) -> TclRun | None:
    """Check one generated script (or ``procs.tcl``): complete Tcl, allow-listed command words, and (for a script,
    not the procedure library) a stubbed run that ends without error. Returns the run (None for the library).

    ``board`` supplies the FPGA part the stubbed board part reports (default: the part the script names).

    Raises
    ------
    TclCheckError
        On any failure, with the reason.
    """
    from .layout import PROCS_TCL

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    library = PROCS_TCL.read_text(encoding="utf-8")
    own = defined_procs(library) | defined_procs(text)
    unknown = command_words(text) - VIVADO_COMMANDS - TCL_BUILTINS - own
    if unknown:
        raise TclCheckError(f"{path}: commands outside the Vivado allow-list: {sorted(unknown)}")
    complete = subprocess.run(
        [tclsh()],
        input=f"set f [open {{{path.resolve()}}}]\nputs [info complete [read $f]]\n",
        capture_output=True,
        text=True,
    )
    if complete.stdout.strip() != "1":
        raise TclCheckError(f"{path}: incomplete Tcl (unbalanced braces, brackets or quotes)\n{complete.stderr}")
    if path.resolve() == PROCS_TCL.resolve():
        return None
    if board is not None:
        part = board.part
    else:
        named = re.search(r'-part "([^"]+)"', text)
        part = named.group(1) if named else ""
    run = run_stubbed(path, properties={"PART_NAME": part})
    if run.error is not None:
        raise TclCheckError(f"{path}: the stubbed run failed: {run.error}")
    outside = run.commands() - VIVADO_COMMANDS - {"file mkdir", "file exists"}
    if outside:
        raise TclCheckError(f"{path}: called outside the allow-list: {sorted(outside)}")
    return run
