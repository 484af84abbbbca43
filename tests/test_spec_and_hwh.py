"""The spec's tables are checked at import, and the generated .hwh says exactly what the spec says."""

import dataclasses
import inspect
import pathlib
import re
import xml.etree.ElementTree as ET

import pytest

from pynq_rl.host.backends.device import _metadata_parser
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build import hwh


def test_overlapping_registers_are_rejected():
    table = {"A": S._register(0x0, S.READ_WRITE, "a"), "B": S._register(0x0, S.READ_WRITE, "b")}
    with pytest.raises(ValueError, match=r"offset 0x0 already used by A"):
        S.check_register_table("t", table)


def test_overlapping_fields_are_rejected():
    table = {"A": S._register(0x0, S.READ_WRITE, "a", {"X": (0, 4, "x"), "Y": (3, 2, "y")})}
    with pytest.raises(ValueError, match="CSRField ordering/overlap issue"):
        S.check_register_table("t", table)


def test_python_keyword_field_is_rejected():
    table = {"A": S._register(0x0, S.READ_WRITE, "a", {"lambda": (0, 4, "x")})}
    with pytest.raises(ValueError, match="not usable from register_map"):
        S.check_register_table("t", table)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"lanes": 0}, r"GaeSpec.lanes must be in \[1, 256\], not 0"),
        ({"stream_bytes": 3}, "stream_bytes must be a power of two"),
        ({"lookahead": 9}, r"lookahead must be in \[1, 8\]"),
    ],
)
def test_gae_spec_rejects_out_of_range_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        S.GaeSpec(**kwargs)


def test_the_id_register_packs_and_unpacks_through_its_field_table():
    word = S.GAE_REGISTERS["ID"]["reset"]
    fields = S.unpack_fields(S.ID_REGISTER, word)
    assert fields == {
        "MAGIC": S.CORE_MAGICS["gae"],
        "VERSION_MAJOR": S.SPEC_VERSION_MAJOR,
        "VERSION_MINOR": S.SPEC_VERSION_MINOR,
    }
    assert S.pack_fields(S.ID_REGISTER, **fields) == word
    with pytest.raises(ValueError, match=r"MAGIC = 65536 does not fit its 16 bits"):
        S.pack_fields(S.ID_REGISTER, MAGIC=1 << 16)
    with pytest.raises(ValueError, match=r"no field 'MAJOR'"):
        S.pack_fields(S.ID_REGISTER, MAJOR=1)


def test_the_type_checkers_flags_are_the_tables():
    """mypy reads the spec's TYPE_CHECKING classes; at run time Status and Ctrl come from the field tables."""
    text = pathlib.Path(inspect.getfile(S.Status)).read_text(encoding="utf-8")  # spec/registers.py
    block = text[text.index("if TYPE_CHECKING:") : text.index("\nelse:", text.index("if TYPE_CHECKING:"))]
    declared = {
        cls: re.findall(r"^        ([A-Z_]+) = enum\.auto\(\)$", part, re.M)
        for cls, part in zip(("Status", "Ctrl"), block.split("class Ctrl"))
    }
    assert declared == {"Status": [f.name for f in S.Status], "Ctrl": [f.name for f in S.Ctrl]}
    assert int((S.Status.ERR_CONFIG | S.Status.DONE | S.Status.ERR_STREAM).errors) == S.STATUS_ERROR_MASK


def test_pipeline_depths_follow_the_parameters_and_cannot_be_set():
    """The depths are the HDL's, derived from the build parameters: a replaced spec gets its own, and passing one
    (which the HDL would not follow) is refused."""
    small = dataclasses.replace(S.ReplaySpec(), levels=2)
    assert (small.sample_depth, small.set_depth) == (12 + 8 * 2, 3 * 2 + 1)
    for cls, name in ((S.GaeSpec, "pipeline_depth"), (S.ReplaySpec, "sample_depth"), (S.ReplaySpec, "set_depth")):
        with pytest.raises(TypeError, match=name):
            cls(**{name: 5})


def test_unknown_board_is_rejected():
    with pytest.raises(ValueError, match=r"unsupported board: expected one of \['Pynq-Z2', 'ZCU106'\], not 'zybo'"):
        S.board("zybo")


@pytest.mark.parametrize("name", sorted(S.BOARDS))
def test_generated_hwh_parses_to_the_spec_address_map(name, tmp_path):
    board = S.board(name)
    bit = hwh.write_overlay_files(board, tmp_path)
    assert bit.is_file() and bit.with_suffix(".hwh").is_file()
    parser = _metadata_parser(bit.with_suffix(".hwh"))
    for slot in board.cores:
        core, dma = parser.ip_dict[f"{slot.name}/core"], parser.ip_dict[f"{slot.name}/dma"]
        assert core["phys_addr"] == board.gp_base + slot.core_offset and core["addr_range"] == slot.window
        assert dma["phys_addr"] == board.gp_base + slot.dma_offset
        assert core["type"] == S.CORE_VLNVS[slot.name] and dma["type"] == S.AXI_DMA_VLNV
        assert int(dma["parameters"]["c_m_axi_mm2s_data_width"]) == slot.spec.stream_bytes * 8
        assert set(core["registers"]) == set(S.CORE_REGISTERS[slot.name])


def test_hwh_is_deterministic_and_well_formed():
    board = S.board(None)
    text = hwh.hwh_text(board)
    assert text == hwh.hwh_text(board)
    root = ET.fromstring(text.split("\n", 1)[1])
    assert root.tag == "EDKSYSTEM" and root.find("EXTERNALPORTS") is not None
    ranges = root.findall(".//MEMRANGE")
    assert all(r.get("MEMTYPE") == "REGISTER" and r.get("BASEVALUE").startswith("0x") for r in ranges)


@pytest.mark.parametrize("name", sorted(S.BOARDS))
def test_emulated_pl_clock_follows_the_hwh_dividers(name):
    """pynq 3.x sets the PL clocks by divider, 4.0 by frequency: the emulated clock must agree with the .hwh."""
    from pynq.ps import Clocks

    from tests.common.boards import make_overlay

    board = S.board(name)
    make_overlay("emu", board=name)
    source = hwh.PL_CLOCK_SOURCE_MHZ[board.arch]
    assert Clocks.fclk0_mhz == pytest.approx(source / max(1, round(source / board.fclk_mhz)))
