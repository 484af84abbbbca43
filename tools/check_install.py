"""Check an installed pynq-rl: its base requirements are met and every module imports (the armhf rung's first step).

Usage: ``python tools/check_install.py`` in the environment to check (run it from outside the source tree, so the
installed package is the one imported). It reports

* each base requirement of the installed distribution (no extras) and the version that satisfies it;
* each module of ``pynq_rl``: imported, or skipped because it needs an optional dependency that is absent (torch,
  Ray, gRPC/protobuf, numba, redis, cocotb: extras a PYNQ-Z2 cannot install), with that dependency named.

Exit status 1 if a requirement is unmet or a module fails to import for any other reason.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import pkgutil
import sys
import traceback

try:
    from packaging.requirements import Requirement
except ImportError:  # a bare venv: pip carries its own copy
    from pip._vendor.packaging.requirements import Requirement

DISTRIBUTION = "pynq-rl"

OPTIONAL = {
    "torch": "extra [torch]",
    "ray": "extra [distributed]",
    "grpc": "extra [distributed]",
    "google": "extra [distributed] (protobuf)",
    "redis": "extra [distributed]",
    "numba": "extra [fast]",
    "cocotb": "extra [test]",
    "cocotb_test": "extra [test]",
    "cocotbext": "extra [test]",
    "stable_baselines3": "extra [sb3]",
    "tree": "extra [rllib], in a venv of its own: tools/rllib_check.sh",
}
"""top-level modules a board may lack -> the pynq-rl extra that brings them"""


def check_requirements() -> list[str]:
    """Unmet base requirements of the installed pynq-rl, as messages (each met one is printed)."""
    problems = []
    for text in metadata.requires(DISTRIBUTION) or []:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue  # an extra's requirement, or one for another platform
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            problems.append(f"requirement {requirement} is not installed")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"requirement {requirement} is not met by {requirement.name} {version}")
            continue
        print(f"  ok    {str(requirement):32} {requirement.name} {version}")
    return problems


def check_imports(package: str = "pynq_rl") -> tuple[list[str], list[str], list[str]]:
    """Import every module of ``package``: (imported, skipped with the reason, failures)."""
    root = importlib.import_module(package)
    imported, skipped, failed = [package], [], []
    for module in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        name = module.name
        if name.endswith(".__main__"):
            continue  # runs the CLI when imported; the rung runs the CLI itself
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as err:
            top = (err.name or "").split(".")[0]
            if top in OPTIONAL:
                skipped.append(f"{name}: needs {top} ({OPTIONAL[top]})")
            else:
                failed.append(f"{name}: {err!r}")
        except Exception as err:  # noqa: BLE001 - every failure is reported, none hides the others
            failed.append(f"{name}: {err!r}\n{traceback.format_exc()}")
        else:
            imported.append(name)
    return imported, skipped, failed


def main() -> int:
    print(f"{DISTRIBUTION} {metadata.version(DISTRIBUTION)} on Python {sys.version.split()[0]}")
    print("base requirements:")
    problems = check_requirements()
    imported, skipped, failed = check_imports()
    print(f"imported {len(imported)} modules; skipped {len(skipped)} (optional dependency absent):")
    for line in skipped:
        print(f"  skip  {line}")
    for line in problems + failed:
        print(f"  FAIL  {line}")
    return 1 if problems or failed else 0


if __name__ == "__main__":
    sys.exit(main())
