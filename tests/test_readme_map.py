"""The README's map of the cores is kept true: every path it names exists, every core of ``spec.py`` has a row."""

import re
from pathlib import Path

from pynq_rl.overlay import spec as S
from pynq_rl.overlay.hdl import top

REPO = Path(__file__).resolve().parents[1]


def _map_rows() -> dict[str, list[str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Map: where each core lives") :]
    section = section[: section.index("\n## ", 1)]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] not in ("core", "---"):
            rows[cells[0]] = cells[1:]
    return rows


def test_every_core_has_a_row_with_a_cell_per_place():
    rows = _map_rows()
    assert set(rows) == set(S.CORE_REGISTERS) | {"(all)"}
    assert all(len(cells) == 9 for cells in rows.values())


def test_every_path_and_top_named_in_the_map_exists():
    for core, cells in _map_rows().items():
        for cell in cells:
            for path in re.findall(r"`((?:pynq_rl|tests|benchmarks|docs)/[^`]*)`", cell):
                assert (REPO / path).exists(), f"{core}: {path}"
        for name in re.findall(r"`(\w+_core_top|register_wiring|status_word)`", " ".join(cells)):
            assert hasattr(top, name), f"{core}: pynq_rl/overlay/hdl/top.py has no {name}"
