"""The documented docs build works as a new user runs it: in a fresh venv, from the docs extra alone.

The test venv has every extra (torch, Ray, Stable-Baselines3), so a build there cannot show that a module the API
pages document needs a library the docs extra lacks; here the README's docs commands run, verbatim, in a venv that
has only what ``pip install -e ".[docs]"`` brings, on a copy of the checkout (the files git tracks or would track,
so no build output or venv comes along). The build executes the notebooks too, so the docs extra must also bring
what they import.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

INTEGRATIONS = ("sb3", "rllib")
"""modules of ``pynq_rl.host.integrations`` on the API page "Integrations", each importing another extra's library"""

HEAVY = ("torch", "ray", "stable_baselines3")
"""libraries of other extras that the docs build mocks (``docs/conf.py``) instead of installing"""


def _docs_commands(readme: Path) -> str:
    """The ```bash block of ``readme`` that builds the site (the one that runs ``sphinx-build``)."""
    blocks = re.findall(r"^```bash\n(.*?)^```", readme.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)
    builds = [block for block in blocks if "sphinx-build" in block]
    assert len(builds) == 1, f"{readme.name}: {len(builds)} bash blocks run sphinx-build"
    return builds[0]


def _copy_checkout(destination: Path) -> None:
    """The files git tracks or would track (``.gitignore`` keeps venvs, caches and ``docs/_build`` out), symbolic
    links (``docs/notebooks/*.ipynb``) kept as links."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source, target = REPO / name, destination / name
        if not source.is_symlink() and not source.is_file():  # deleted in the work tree, not yet in the index
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)


def _public_names(module: Path) -> list[str]:
    """``__all__`` of a module, read from its source (the test venv cannot import the RLlib integration)."""
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{module}: no __all__")


@pytest.fixture(scope="module")
def docs_build(tmp_path_factory) -> dict:
    """A copy of the checkout and a fresh venv in which the README's docs commands ran, and how they ended."""
    root = tmp_path_factory.mktemp("docs-extra")
    checkout, venv = root / "pynq-rl", root / "venv"
    _copy_checkout(checkout)
    commands = _docs_commands(REPO / "README.md")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    heavy = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            f"import importlib.util as u; print(*(m for m in {HEAVY!r} if u.find_spec(m)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {"commands": commands, "done": done, "html": checkout / "docs" / "_build" / "html", "installed": heavy}


@pytest.mark.report
@pytest.mark.slow  # about 3 minutes on 2 shared cores: the install (1 min) and the build (notebooks executed)
def test_the_documented_docs_build_passes_from_the_docs_extra_alone(docs_build):
    assert docs_build["commands"] == _docs_commands(REPO / "docs" / "README.md"), "README.md and docs/README.md differ"
    done = docs_build["done"]
    warnings = [line for line in (done.stdout + done.stderr).splitlines() if "WARNING:" in line or "Error" in line]
    assert done.returncode == 0, f"{docs_build['commands']}exit {done.returncode}:\n" + "\n".join(warnings[-20:])
    # torch (754 MB even as the CPU build), Ray and Stable-Baselines3 are other extras' weight: the docs mock them
    assert not docs_build["installed"], f"the docs extra installed {docs_build['installed']}"


@pytest.mark.report
@pytest.mark.slow
def test_the_docs_extra_build_documents_the_integrations_and_apex(docs_build):
    """The modules that import other extras' libraries are documented, not left as empty headings."""
    api = docs_build["html"] / "api"
    assert (api / "integrations.html").is_file(), "the build wrote no API pages (see the test above)"
    page = (api / "integrations.html").read_text(encoding="utf-8")
    for module in INTEGRATIONS:
        for name in _public_names(REPO / "pynq_rl" / "host" / "integrations" / f"{module}.py"):
            assert f'id="pynq_rl.host.integrations.{module}.{name}"' in page, f"{module}.{name} is not documented"
    distributed = (api / "distributed.html").read_text(encoding="utf-8")
    assert 'id="pynq_rl.host.agents.distributed.apex.train"' in distributed, "apex.train is not documented"
