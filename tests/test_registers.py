"""Registers to the last bit from ``spec.py``: the flags, the HDL's STATUS word, the exported reference.

The committed register reference (``docs/registers.md``, ``docs/pynq_rl_regs.h``) must equal what ``spec.py``
renders now, and moving STATUS fields in ``spec.py`` alone must move them in the HDL, the emulated core (the
model), the driver's flags and the docs: that is checked on a copy of the package whose ``spec/registers.py`` is edited.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from myhdl import Signal

from pynq_rl import cli
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build import registers
from pynq_rl.overlay.hdl.top import status_word

REPO = Path(__file__).resolve().parents[1]


def test_committed_register_reference_is_current():
    stale = registers.stale_exports(registers.DEFAULT_OUT)
    assert not stale, f"stale register reference {[p.name for p in stale]}: run `pynq-rl build regs` and commit"


def test_build_regs_writes_and_checks_the_exports(tmp_path, capsys):
    assert cli.main(["build", "regs", "--out", str(tmp_path), "--check"]) == 1
    assert re.search(r"^stale: .*registers\.md \(run `pynq-rl build regs`\)$", capsys.readouterr().out, re.M)
    assert cli.main(["build", "regs", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(registers.EXPORTS)
    assert cli.main(["build", "regs", "--out", str(tmp_path), "--check"]) == 0


@pytest.mark.parametrize("core", sorted(S.CORE_REGISTERS))
def test_reference_lists_every_register_and_field_of_the_table(core):
    text, header = registers.markdown(), registers.c_header()
    for name, reg in S.CORE_REGISTERS[core].items():
        offset = reg["address_offset"]
        assert re.search(rf"^\| 0x{offset:02X} \| {name} \| {reg['access']} \|", text, re.M)
        assert re.search(rf"^#define PYNQ_RL_{core.upper()}_{name}_OFFSET +0x{offset:02X}u$", header, re.M)
        if list(reg["fields"]) == ["VALUE"]:
            continue
        for field, fld in reg["fields"].items():
            mask = ((1 << fld["bit_width"]) - 1) << fld["bit_offset"]
            assert re.search(rf"^#define PYNQ_RL_{core.upper()}_{name}_{field}_MASK +0x{mask:08X}u$", header, re.M)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_c_header_compiles_and_its_macros_read_fields(tmp_path):
    program = tmp_path / "check.c"
    program.write_text(
        textwrap.dedent(f"""
        #include "{registers.DEFAULT_OUT / "pynq_rl_regs.h"}"
        int main(void) {{
            uint32_t id = PYNQ_RL_GAE_ID_RESET;
            uint32_t ctrl = PYNQ_RL_SET(PYNQ_RL_REPLAY_CTRL_MODE, PYNQ_RL_REPLAY_MODE_SAMPLE)
                            | PYNQ_RL_SET(PYNQ_RL_REPLAY_CTRL_START, 1);
            return !(PYNQ_RL_GET(id, PYNQ_RL_GAE_ID_MAGIC) == PYNQ_RL_GAE_MAGIC && ctrl == {
            int(S.ReplayMode.SAMPLE) << 2 | 1
        }u);
        }}
    """),
        encoding="utf-8",
    )
    subprocess.run(
        ["gcc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-o", str(tmp_path / "check"), str(program)],
        check=True,
    )
    assert subprocess.run([str(tmp_path / "check")]).returncode == 0


def test_flags_are_the_field_tables():
    assert {flag.name: int(flag) for flag in S.Status} == {
        name: 1 << fld["bit_offset"] for name, fld in S.STATUS_REGISTER["fields"].items()
    }
    assert {flag.name: int(flag) for flag in S.Ctrl} == {
        name: 1 << fld["bit_offset"] for name, fld in S.CTRL_REGISTER["fields"].items() if fld["bit_width"] == 1
    }
    assert (S.Status.DONE | S.Status.ERR_STREAM | S.Status.SATURATED).errors == S.Status.ERR_STREAM
    for table in S.CORE_REGISTERS.values():
        assert table["STATUS"] == S.STATUS_REGISTER and table["CTRL"] == S.CTRL_REGISTER


def test_status_word_needs_a_signal_per_field():
    class Cfg:
        busy, done, err_config, err_stream = (Signal(bool(0)) for _ in range(4))

    with pytest.raises(ValueError, match=r"^STATUS\.SATURATED needs a 1-bit signal cfg\.saturated, not None$"):
        status_word(S.STATUS_REGISTER, Cfg())


# -- one edit in spec.py moves STATUS everywhere -------------------------------------------------------------------

#: The edited STATUS layout: every flag moved, gaps between them.
MOVED = {"BUSY": 7, "DONE": 0, "ERR_CONFIG": 12, "ERR_STREAM": 3, "SATURATED": 20}

_CHECK = """
import dataclasses, json, sys
import numpy as np
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build import registers
from pynq_rl.overlay.models import gae as model
from pynq_rl.host.backends.gae_ip import GaeCoreIP
from pynq_rl.host.backends.rtl import RtlCoreIP, RtlSimulation
from pynq_rl.host.overlay import RLOverlay

R = S.GAE_REGISTERS
board = dataclasses.replace(S.board(None), cores=(S.CoreSlot("gae", S.GaeSpec(lanes=2, t_max=8), 0, 0x1_0000),))
spec = board.cores[0].spec
stream = model.pack_input(spec, S.GaeMode.RAW, np.ones((2, 2), np.int64), np.zeros((3, 2), np.int64),
                          np.zeros((2, 2), np.int64)).view(np.uint8).ravel()

def operations(ip):
    # a START the core refuses (T = 0), then a good one: STATUS right after START, and at the end
    seen = {}
    ip.write(R["LANES_USED"]["address_offset"], 2)
    ip.write(R["CTRL"]["address_offset"], int(S.Ctrl.START))
    for _ in range(50):
        seen["refused"] = ip.read(R["STATUS"]["address_offset"])
        if seen["refused"] & S.Status.DONE:
            break
    ip.write(R["T"]["address_offset"], 2)
    ip.write(R["CTRL"]["address_offset"], int(S.Ctrl.START))
    seen["started"] = ip.read(R["STATUS"]["address_offset"])
    sent = 0
    for _ in range(200):  # the core takes a record's last beat once the record before it is in its stacks
        sent += ip.stream_in(stream[sent:], last=True)
        if sent == len(stream):
            break
        ip.read(R["STATUS"]["address_offset"])  # time passes while TREADY is low, as it does for a DMA
    for _ in range(200):
        ip.stream_out(1 << 16)
        seen["finished"] = ip.read(R["STATUS"]["address_offset"])
        if seen["finished"] & S.Status.DONE:
            break
    return seen

sim = RtlSimulation(board)
try:
    hdl = operations(RtlCoreIP(sim, "gae", spec, R))
finally:
    sim.end("done")
emu = operations(GaeCoreIP(spec))
gae = RLOverlay(backend="emu").gae
advantages, _ = gae.compute(np.ones((3, 2)), np.zeros((4, 2)), np.zeros((3, 2)), quantize=False)
gae._write("T", 0)
gae._start(S.GaeMode.RAW)
json.dump({"spec_file": S.__file__, "flags": {f.name: int(f) for f in S.Status}, "hdl": hdl, "emu": emu,
           "driver": {"raw": gae.read(R["STATUS"]["address_offset"]), "flags": repr(gae.status),
                      "error": gae.error, "last_advantage": float(advantages[-1, 0])},
           "markdown": registers.markdown(), "header": registers.c_header()}, sys.stdout)
"""


def _package_with_spec(tmp_path: Path, edit) -> Path:
    """A copy of the pynq_rl package whose spec/registers.py (where STATUS_REGISTER is) went through ``edit``."""
    root = tmp_path / "site"
    ignore = shutil.ignore_patterns("__pycache__", "out", "*.bit", "*.hwh")
    shutil.copytree(REPO / "pynq_rl", root / "pynq_rl", ignore=ignore)
    spec_file = root / "pynq_rl" / "overlay" / "spec" / "registers.py"
    spec_file.write_text(edit(spec_file.read_text(encoding="utf-8")), encoding="utf-8")
    return root


def _move_status_fields(text: str, layout: dict, width: int = 1) -> str:
    start = text.index("STATUS_REGISTER = ")
    end = text.index("\n)\n", start)  # the end of the MappingProxyType(...) call
    block = text[start:end]
    for name, bit in layout.items():
        block, count = re.subn(rf'"{name}": \(\d+, 1,', f'"{name}": ({bit}, {width},', block)
        assert count == 1, name
    return text[:start] + block + text[end:]


def _run(root: Path, code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_moving_status_fields_in_the_spec_moves_them_in_hdl_model_driver_and_docs(tmp_path):
    root = _package_with_spec(tmp_path, lambda text: _move_status_fields(text, MOVED))
    result = _run(root, _CHECK)
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout)
    assert got["spec_file"].startswith(str(root))
    bit = {name: 1 << position for name, position in MOVED.items()}
    assert got["flags"] == bit
    expected = {"refused": bit["DONE"] | bit["ERR_CONFIG"], "started": bit["BUSY"], "finished": bit["DONE"]}
    assert got["hdl"] == expected, "the MyHDL core's STATUS"
    assert got["emu"] == expected, "the emulated core's (model's) STATUS"
    assert got["driver"] == {
        "raw": bit["DONE"] | bit["ERR_CONFIG"],
        "flags": "<Status.DONE|ERR_CONFIG: 4097>",
        "error": True,
        "last_advantage": 1.0,
    }
    for name, position in MOVED.items():
        assert f"| [{position}] | {name} | read-only |" in got["markdown"]
        assert re.search(rf"^#define PYNQ_RL_GAE_STATUS_{name}_OFFSET +{position}u ", got["header"], re.M)


def test_a_status_field_wider_than_a_flag_is_refused_at_import(tmp_path):
    root = _package_with_spec(tmp_path, lambda text: _move_status_fields(text, {"SATURATED": 4}, width=2))
    result = _run(root, "import pynq_rl.overlay.spec")
    assert result.returncode != 0
    assert re.search(
        r"^ValueError: STATUS\.SATURATED: a flag register's fields are one bit wide, not 2$", result.stderr, re.M
    )
