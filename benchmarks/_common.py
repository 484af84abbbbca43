"""What the benchmark scripts share: the run's provenance with the peers' versions, and rate formatting.

The scripts run as ``python benchmarks/<core>_<metric>.py``, so this module is imported as ``_common`` (the script's
own directory is first on ``sys.path``).
"""
from __future__ import annotations

__all__ = ["environment", "fmt_rate"]


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
