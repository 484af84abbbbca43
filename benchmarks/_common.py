"""What the benchmark scripts share: the run's provenance with the peers' versions, and rate formatting.

The scripts run as ``python benchmarks/<core>_<metric>.py``, so this module is imported as ``_common`` (the script's
own directory is first on ``sys.path``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["environment", "fmt_rate", "write_results", "failed_rows", "seconds_per_call"]


def environment(torch: bool = False) -> dict:
    """:func:`pynq_rl.overlay.build.provenance.environment` plus numba's (and, with ``torch``, torch's) version and
    thread count: the peers the benchmarks pin to one thread each."""
    import numba

    from pynq_rl.overlay.build import provenance

    extra = {"numba": numba.__version__, "numba_threads": numba.get_num_threads()}
    if torch:
        import torch as torch_module

        extra |= {"torch": torch_module.__version__, "torch_threads": torch_module.get_num_threads()}
    return provenance.environment(**extra)


def fmt_rate(x: float) -> str:
    """A rate with three significant digits and a k/M/G prefix (``1.23 M``)."""
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:.3g} {unit}"
    return f"{x:.3g}"


def write_results(out_dir: Path, name: str, result: dict, text: str) -> None:
    """Write ``<name>.json`` (``result``) and ``<name>.md`` (``text``) into ``out_dir``; print the table and where
    they went."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out_dir / f"{name}.md").write_text(text)
    print(text)
    print(f"wrote {out_dir / f'{name}.json'} and {out_dir / f'{name}.md'} in {result['wall[s]']} s")


def failed_rows(result: dict) -> str | int:
    """The exit status of a benchmark: 0, or a message naming the rows that failed (an optional peer that does not
    import is ``unavailable``, not failed)."""
    failed = [r["key"] for r in result["rows"] if r["status"] != "ok" and not r["status"].startswith("unavailable")]
    return f"failed: {failed}" if failed else 0


def seconds_per_call(call: Callable[[], object], budget_s: float) -> float:
    """Seconds per call, averaged over back-to-back calls for ``budget_s`` seconds (at least one call): one call
    alone is too easily caught by a preemption on a shared machine."""
    calls, start = 0, time.perf_counter()
    while True:
        call()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= budget_s:
            return elapsed / calls
