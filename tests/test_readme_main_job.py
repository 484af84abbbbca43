"""The README's main job does what the README says: its seed 0 ends within the range the README states over seeds
0-4, at the very figure it quotes where the package versions are the ones it names; the seed loop it gives runs that
same command; the getting-started page quotes the same figures."""

import json
import re
import shlex
from pathlib import Path

import gymnasium
import numpy as np
import pytest

from pynq_rl.cli import main

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _main_job_argv() -> list[str]:
    """The ``pynq-rl train ...`` of the README's main-job command block, as arguments of ``pynq-rl``."""
    section = README[README.index("**Run the main job**") :]
    block = section[section.index("```bash\n") + len("```bash\n") : section.index("\n```", section.index("```bash"))]
    command = block.split("&&")[-1].strip()
    assert command.startswith("pynq-rl train ppo "), command
    return shlex.split(command)[1:]


def _claims() -> tuple[float, float, float, dict[str, str]]:
    """The quoted seed-0 return, the range over seeds 0-4 and the versions it was measured with."""
    quoted = float(re.search(r"PPO on CartPole-v1: final return (\d+\.\d) \(mean of the last 20", README).group(1))
    low, high = map(
        float, re.search(r"Over seeds 0-4 the final return ranges from (\d+\.\d) to (\d+\.\d)", README).groups()
    )
    versions = dict(re.findall(r"(numpy|gymnasium) (\d+\.\d+\.\d+)", README[README.index("Over seeds 0-4") :])[:2])
    return quoted, low, high, versions


@pytest.mark.report
def test_the_main_jobs_seed_0_lands_where_the_readme_says(tmp_path, capsys):
    argv = _main_job_argv()
    out = argv.index("--out")
    argv[out + 1] = str(tmp_path / "runs")
    assert main([*argv, "--no-progress"]) == 0
    final = round(json.loads(capsys.readouterr().out)["mean_return_last20"], 1)
    quoted, low, high, versions = _claims()
    assert low <= quoted <= high and low <= final <= high, (final, low, high)
    if versions == {"numpy": np.__version__, "gymnasium": gymnasium.__version__}:
        assert final == quoted, (final, quoted)  # the versions it was measured with: the very figure


def test_the_seed_loop_runs_the_main_job_for_each_seed():
    loop = re.search(r"for seed in 0 1 2 3 4; do (pynq-rl train ppo [^;]*); done", README).group(1)
    words = shlex.split(loop.replace("$seed", "SEED").split(">")[0])[1:]
    main_job = _main_job_argv()
    assert words == [
        *main_job[: main_job.index("--seed") + 1],
        "SEED",
        *main_job[main_job.index("--seed") + 2 :],
        "--no-progress",
    ]


def test_getting_started_quotes_the_readmes_figures():
    quoted, low, high, _ = _claims()
    page = " ".join((REPO / "docs" / "getting-started.md").read_text(encoding="utf-8").split())
    assert f'"mean_return_last20": {quoted},' in page
    assert f"seeds 0-4 end between {low} and {high}" in page
    assert " ".join(_main_job_argv()) in page
