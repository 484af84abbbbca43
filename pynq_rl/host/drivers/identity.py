"""Check a core's ID register against ``spec.py``: the guard against stale or foreign bitstreams."""

from __future__ import annotations

import warnings

from ...overlay import spec as S

__all__ = ["BitstreamMismatchError", "check_identity", "REBUILD_HINT"]

REBUILD_HINT = (
    "rebuild the bitstream from this checkout (pynq_rl/overlay/bitstreams/README.md: "
    "`make -C pynq_rl/overlay/build bitstream install BOARD=<board>`) or install the pynq-rl release that "
    "matches it"
)


class BitstreamMismatchError(RuntimeError):
    """The loaded bitstream's core does not implement the spec this driver was written for."""


def check_identity(core: str, id_value: int) -> tuple[int, int]:
    """Decode ``core``'s ID register value; raise if it is not that core at a compatible spec version.

    Returns ``(major, minor)``. A newer minor version only warns (registers are added, never moved, within a
    major version).

    Raises
    ------
    BitstreamMismatchError
        Wrong magic number (not this core, or no core at all) or a different major spec version.
    """
    fields = S.unpack_fields(S.ID_REGISTER, id_value)
    magic, major, minor = fields["MAGIC"], fields["VERSION_MAJOR"], fields["VERSION_MINOR"]
    expected = S.CORE_MAGICS[core]
    if magic != expected:
        raise BitstreamMismatchError(
            f"{core} core: ID register reads {id_value:#010x}, magic {magic:#06x} is not {expected:#06x}; "
            f"the loaded bitstream does not contain this core where spec.py puts it: {REBUILD_HINT}"
        )
    if major != S.SPEC_VERSION_MAJOR:
        raise BitstreamMismatchError(
            f"{core} core implements spec {major}.{minor}, this driver spec "
            f"{S.SPEC_VERSION_MAJOR}.{S.SPEC_VERSION_MINOR}: {REBUILD_HINT}"
        )
    if minor > S.SPEC_VERSION_MINOR:
        warnings.warn(
            f"{core} core implements spec {major}.{minor}, newer than this driver's "
            f"{S.SPEC_VERSION_MAJOR}.{S.SPEC_VERSION_MINOR}; new features are unused",
            stacklevel=2,
        )
    return major, minor
