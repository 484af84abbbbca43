"""The agents' network benchmark runs end to end at a tiny size and writes complete results (no timing asserted)."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from pynq_rl.host.agents.common.run import torch_available

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "agents_nn.py"
OPERATIONS = ["ppo_update[us]", "ppo_act[us]", "dqn_update[us]", "dqn_act[us]"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--repeats",
            "2",
            "--min-time",
            "0.01",
            "--learn",
            "--ppo-steps",
            "2048",
            "--dqn-steps",
            "600",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return json.loads((out / "agents_nn.json").read_text()), (out / "agents_nn.md").read_text()


def test_step_costs_and_learning_rows_for_every_backend(results):
    data, page = results
    backends = ["numpy"] + (["torch"] if torch_available() else [])
    assert sorted(data["step_costs"]) == sorted(backends)
    for nn in backends:
        assert sorted(data["step_costs"][nn]) == sorted(OPERATIONS)
        assert all(math.isfinite(v) and v > 0 for v in data["step_costs"][nn].values())
    rows = {(row["agent"], row["nn"]): row for row in data["learning"]}
    assert sorted(rows) == sorted((agent, nn) for agent in ("ppo", "dqn") for nn in backends)
    assert rows[("ppo", "numpy")]["steps"] == 2048 and rows[("dqn", "numpy")]["steps"] == 600
    assert "| ppo_update |" in page and "## Learning on CartPole-v1" in page
    assert data["environment"]["git_commit"]
