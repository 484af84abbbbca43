"""A design converts to the same Verilog whatever the process did before: MyHDL numbers instance names from
process-wide counts, which ``convert_block`` starts afresh, so neither a second conversion nor a simulation's
elaboration in between renames anything."""

import re

from pynq_rl.overlay.hdl.common.mux import mux_tree
from tests.common.small_design import converted_text, registered_mux, registered_mux_ports


def test_converting_twice_with_elaborations_between_gives_the_same_text(tmp_path):
    first = converted_text(tmp_path / "first")
    registered_mux(*registered_mux_ports())  # elaborated, as a simulation does, and never converted
    ports = registered_mux_ports()
    mux_tree(ports[0], list(ports[1:6]), ports[6])
    assert converted_text(tmp_path / "second") == first
    assert converted_text(tmp_path / "third") == first


def test_instance_names_are_numbered_from_zero(tmp_path):
    registered_mux(*registered_mux_ports())
    text = converted_text(tmp_path)
    assert sorted(set(re.findall(r"\bmux_tree\d+", text))) == ["mux_tree0"]
    assert "invert0_y" in text and not re.search(r"\w+\d+_\d+_", text)  # no repeat suffix (mux_tree0_0_...)
