"""UltraRAM on the ZCU106: which memories the build puts there, what the Verilog tells Vivado, and that no
driver-visible behaviour depends on what UltraRAM holds before the core writes it.

The rule (``hdl.common.bram.memory_style``): on a part with UltraRAM (``spec.part_uram_min_bits``), a memory of at
least one URAM288's bits is UltraRAM; the converter marks exactly those ``(* ram_style = "ultra" *)`` and drops their
all-zero initial loops (UltraScale+ UltraRAM has no INIT). The last tests run the ZCU106 builds under Verilator with
those memories at random power-up contents and compare every driver call with the emulation.
"""

import dataclasses
import re

import numpy as np
import pytest

from pynq_rl.host.backends import verilator_build
from pynq_rl.host.backends.verilator import GARBAGE_SEED_VARIABLE
from pynq_rl.overlay import spec as S
from pynq_rl.overlay.build.verilog import URAM_ATTRIBUTE, mark_uram, without_initial_contents
from pynq_rl.overlay.hdl.common.bram import memory_style
from tests.common.boards import make_overlay, require_verilator

#: A memory declaration as MyHDL writes it, with the attribute line the converter may put above it.
DECLARATION = re.compile(
    r"^(?P<attr>\(\* ram_style = \"ultra\" \*\)\n)?reg \[(?P<msb>\d+):0\] (?P<name>\w+) \[0:(?P<depth>\d+)-1\];$", re.M
)


def memories(text: str) -> dict[str, tuple[int, int, bool, bool]]:
    """Every memory of ``text``: name -> (width, depth, marked for UltraRAM, has an initial loop)."""
    found = {}
    for m in DECLARATION.finditer(text):
        name = m["name"]
        loop = f"initial begin: INITIALIZE_{name.upper()}\n" in text
        found[name] = (int(m["msb"]) + 1, int(m["depth"]), bool(m["attr"]), loop)
    return found


# -- the rule and where it comes from -------------------------------------------------------------------------------
def test_only_a_part_with_ultraram_gets_a_threshold():
    assert S.part_uram_min_bits("xczu7ev-ffvc1156-2-e") == S.URAM288_BITS == 4096 * 72
    assert S.part_uram_min_bits("xc7z020clg400-1") == 0


def test_board_specs_take_the_threshold_from_their_part_without_changing_equality():
    for name in ("replay", "parsa"):
        assert S.board("ZCU106").slot(name).spec.uram_min_bits == S.URAM288_BITS
        assert S.board("Pynq-Z2").slot(name).spec.uram_min_bits == 0
        spec = S.board("ZCU106").slot(name).spec
        # a driver reads its spec back from registers (no threshold there): it must still equal the board's
        assert dataclasses.replace(spec, uram_min_bits=0) == spec
    # a board made from another for a part without UltraRAM loses the threshold (it is the part's, not the spec's)
    moved = dataclasses.replace(S.board("ZCU106"), part="xc7z020clg400-1")
    assert moved.slot("replay").spec.uram_min_bits == 0


def test_a_memory_is_ultraram_when_the_part_has_it_and_it_fills_a_uram288():
    assert memory_style(S.URAM288_BITS, 4096, 72) == "ultra"
    assert memory_style(S.URAM288_BITS, 4096, 71) == "block"
    assert memory_style(0, 1 << 20, 256) == "block"


def test_the_zcu106_rule_picks_the_deep_tree_levels_and_the_policy_banks():
    """What the resource budget counts as URAM: replay levels 4 and 5 (4,096 x 320 and 65,536 x 256 bits), ParSa's
    policy banks (4,096 x 160 bits each); the key rows (8,192 x 12) and the per-key memories stay block RAM."""
    replay, parsa = (S.board("ZCU106").slot(n).spec for n in ("replay", "parsa"))
    levels = [
        level
        for level in range(2, replay.levels + 1)
        if memory_style(replay.uram_min_bits, replay.k ** (level - 1), replay.k * replay.level_width(level)) == "ultra"
    ]
    assert levels == [4, 5]
    assert memory_style(parsa.uram_min_bits, parsa.tiles_per_worker, parsa.max_actions * parsa.value_w) == "ultra"
    key_rows = parsa.keys * parsa.max_tilings
    assert memory_style(parsa.uram_min_bits, key_rows, (parsa.tiles_per_worker - 1).bit_length()) == "block"


# -- the converter's pass -------------------------------------------------------------------------------------------
MYHDL_TEXT = """reg [7:0] a_memory [0:4-1];

initial begin: INITIALIZE_A_MEMORY
    integer i;
    for(i=0; i<4; i=i+1) begin
        a_memory[i] = 0;
    end
end

reg [15:0] b_banks_uram [0:8-1];

initial begin: INITIALIZE_B_BANKS_URAM
    integer i;
    for(i=0; i<8; i=i+1) begin
        b_banks_uram[i] = 0;
    end
end

"""


def test_mark_uram_marks_exactly_the_uram_memories_and_drops_only_their_initial_loops():
    text, names = mark_uram(MYHDL_TEXT)
    assert names == ["b_banks_uram"]
    assert memories(text) == {"a_memory": (8, 4, False, True), "b_banks_uram": (16, 8, True, False)}
    assert text.count(URAM_ATTRIBUTE) == 1


def test_mark_uram_refuses_a_uram_memory_without_the_loop_it_expects():
    broken = MYHDL_TEXT.replace("b_banks_uram[i] = 0;", "b_banks_uram[i] = 1;")
    with pytest.raises(ValueError, match="b_banks_uram"):
        mark_uram(broken)


def test_text_without_uram_memories_is_left_as_it_is():
    plain = MYHDL_TEXT.split("reg [15:0]")[0]
    assert mark_uram(plain) == (plain, [])


def test_without_initial_contents_drops_every_memory_loop_and_nothing_else():
    """The formal checks' Verilog: every memory starts with any contents, UltraRAM or not; declarations stay."""
    text, names = without_initial_contents(MYHDL_TEXT + "reg [3:0] plain_register = 0;\n")
    assert names == ["a_memory", "b_banks_uram"]
    assert memories(text) == {"a_memory": (8, 4, False, False), "b_banks_uram": (16, 8, False, False)}
    assert "initial" not in text and text.endswith("reg [3:0] plain_register = 0;\n")
    assert without_initial_contents(mark_uram(MYHDL_TEXT)[0])[1] == ["a_memory"]


# -- the converted Verilog of the boards' builds ---------------------------------------------------------------------
@pytest.mark.parametrize("core", ["replay", "parsa"])
def test_pynq_z2_verilog_has_no_ultraram(core):
    found = memories(verilator_build.core_verilog(core, S.board("Pynq-Z2").slot(core).spec).read_text())
    assert found and all(not marked and loop for _, _, marked, loop in found.values())
    assert not any(name.endswith("_uram") for name in found)


def test_zcu106_replay_verilog_marks_the_two_deep_levels():
    text = verilator_build.core_verilog("replay", S.board("ZCU106").slot("replay").spec).read_text()
    found = memories(text)
    marked = {name: shape[:2] for name, shape in found.items() if shape[2]}
    assert marked == {"core_tree_level4_banks_uram": (320, 4096), "core_tree_level5_banks_uram": (256, 65536)}
    assert all(loop != marked_ for _, _, marked_, loop in found.values())  # marked: no loop; the others keep it
    assert text.count("ram_style") == 2


def test_zcu106_parsa_verilog_marks_one_policy_bank_per_worker():
    spec = S.board("ZCU106").slot("parsa").spec
    text = verilator_build.core_verilog("parsa", spec).read_text()
    found = memories(text)
    marked = {name: shape[:2] for name, shape in found.items() if shape[2]}
    assert sorted(marked.values()) == [(spec.max_actions * spec.value_w, spec.tiles_per_worker)] * spec.workers
    assert sorted(re.match(r"core_worker(\d+)_", name)[1] for name in marked) == sorted(
        str(w) for w in range(spec.workers)
    )
    assert all(loop != marked_ for _, _, marked_, loop in found.values())
    assert text.count("ram_style") == spec.workers


# -- behaviour with UltraRAM at random power-up contents ------------------------------------------------------------
def same(a, b, what: str) -> None:
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), f"{what}: {a} != {b}"
    else:
        assert a == b, f"{what}: {a!r} != {b!r}"


@pytest.fixture
def garbage(monkeypatch):
    """Verilated memories without initial contents (UltraRAM) start at random values."""
    require_verilator()
    monkeypatch.setenv(GARBAGE_SEED_VARIABLE, "12345")


def replay_calls(replay, overlay) -> list:
    """What a user sees from a freshly bound replay core: totals, samples, a dump; again after a reprogram."""
    replay.seed = 3
    rng = np.random.default_rng(4)
    seen = [replay.total_code, replay.nonzero]
    indices = rng.integers(0, replay.capacity, 200)
    replay.update(indices, rng.gamma(1.0, 2.0, 200))
    seen += [replay.total_code, replay.nonzero, replay.cycles]
    got, probabilities, weights = replay.sample(32, beta=0.4)
    seen += [got, probabilities, weights, replay.dump_codes()]
    overlay.download()  # reprogrammed: the driver clears again
    seen += [replay.total_code, replay.nonzero, replay.dump_codes()]
    return seen


def test_zcu106_replay_with_random_ultraram_contents_behaves_as_the_model(garbage):
    verilated = make_overlay("verilator", "ZCU106", cores=("replay",))
    emulated = make_overlay("emu", "ZCU106", cores=("replay",))
    got = replay_calls(verilated.replay, verilated)
    want = replay_calls(emulated.replay, emulated)
    for step, (a, b) in enumerate(zip(got, want)):
        same(a, b, f"replay reading {step}")


LAYOUT = {"tilings_per_set": 2, "tiles_per_dim": 3, "tilings": [{"dims": []}, {"dims": [0]}, {"dims": [1, 2]}]}
BOUNDS = ([-1.0, -2.0, 0.0], [1.0, 2.0, 10.0])


def parsa_calls(parsa) -> list:
    """A configured ParSa core's decisions with learning, and its policy read back."""
    parsa.configure(LAYOUT, 3, BOUNDS, alpha=0.25, gamma=0.9, epsilon=0.2, epsilon_decay=0.99, frac_bits=6, seed=5)
    rng = np.random.default_rng(6)
    seen = [parsa.dump_banks()]
    action = parsa.act(rng.uniform(BOUNDS[0], BOUNDS[1]))
    for _ in range(6):
        action = parsa.act(rng.uniform(BOUNDS[0], BOUNDS[1]), reward=1.0 if action == 2 else -0.5, key=1)
        seen.append((action, parsa.cycles))
    return seen + [parsa.dump_banks()]


def test_zcu106_parsa_with_random_ultraram_contents_behaves_as_the_model(garbage):
    verilated = make_overlay("verilator", "ZCU106", cores=("parsa",)).parsa
    emulated = make_overlay("emu", "ZCU106", cores=("parsa",)).parsa
    for step, (a, b) in enumerate(zip(parsa_calls(verilated), parsa_calls(emulated))):
        same(a, b, f"parsa reading {step}")
