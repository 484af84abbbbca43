"""The on-board notebooks run top to bottom with ``BACKEND = "verilator"`` (CI runs them on ``emu`` through nbmake).

The notebooks choose their backend in one line of their first code cell; here that line is switched to the verilated
cores and the notebook executed as a user would run it (the PPO notebook's 20k-step training included).
"""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.common.boards import require_verilator

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CHOICE = 'BACKEND = "emu"'


def run_on_verilator(name: str, workdir: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    cells = [cell for cell in notebook.cells if cell.cell_type == "code" and CHOICE in cell.source]
    assert len(cells) == 1, f"{name}: the backend is chosen in one line, {CHOICE!r}"
    cells[0].source = cells[0].source.replace(CHOICE, 'BACKEND = "verilator"')
    NotebookClient(
        notebook, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}
    ).execute()
    return notebook


@pytest.mark.parametrize("name", ["replay", "parsa", "gae_ppo"])
def test_notebook_runs_on_the_verilated_cores(name, tmp_path):
    require_verilator()
    notebook = run_on_verilator(name, tmp_path)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "a cell did not run"
    assert not [output for cell in code for output in cell.get("outputs", []) if output.get("output_type") == "error"]
