"""Tile-coding layouts as JSON (OPaL's config style) and the OPaL DDoS policy shape.

Format::

    {
      "n_dims": 20,                      # optional: defaults to 1 + the largest dimension used
      "tilings_per_set": 8,              # default copies per set
      "tiles_per_dim": 6,                # default tiles per dimension
      "tilings": [                       # the tiling sets, in order
        {"dims": []},                    # the always-hit bias tile
        {"dims": [0]},
        {"dims": [1, 2], "tilings": 4, "tiles": 10}
      ]
    }
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...overlay.models.parsa import TilingLayout, TilingSet
from .arguments import integer

__all__ = ["load_tiling", "tiling_to_dict", "OPAL_DDOS_TILING", "opal_ddos_layout"]

#: The policy shape of OPaL's DDoS mitigation agent: 20 state dims, a bias set, seven 1-D sets, eight 2-D sets and
#: one 4-D set, 8 tilings per set, 6 tiles per dim (10 actions): 136 tilings, 22,744 tiles.
OPAL_DDOS_TILING: dict[str, Any] = {
    "n_dims": 20,
    "tilings_per_set": 8,
    "tiles_per_dim": 6,
    "tilings": [{"dims": []}]
    + [{"dims": [d]} for d in range(7)]
    + [{"dims": [7 + d, 8 + d]} for d in range(0, 12, 2)]
    + [{"dims": [0, 1]}, {"dims": [2, 3]}]
    + [{"dims": [4, 5, 6, 19]}],
}


def load_tiling(config: dict | str | Path | TilingLayout) -> TilingLayout:
    """A :class:`TilingLayout` from a JSON file path, a JSON string, a dict, or a layout (returned as is).

    Raises
    ------
    ValueError
        Malformed configuration, with the offending set and field named (``tiling set 0: dims[0] = 'a' is not an
        integer in [0, 2147483647]``); a path that names no readable file.
    """
    if isinstance(config, TilingLayout):
        return config
    if isinstance(config, Path) or (isinstance(config, str) and not config.lstrip().startswith("{")):
        try:
            text = Path(config).read_text()
        except OSError as error:  # "0", "", a directory: not a layout, and not a file either
            raise ValueError(
                f"tiling {str(config)!r} is neither a JSON object nor a readable JSON file ({error.strerror or error})"
            ) from error
        config = json.loads(text)
    elif isinstance(config, str):
        config = json.loads(config)
    if not isinstance(config, dict) or not isinstance(config.get("tilings"), list):
        raise ValueError('a tiling configuration is a JSON object with a "tilings" list of sets')
    unknown = set(config) - {"n_dims", "tilings_per_set", "tiles_per_dim", "tilings"}
    if unknown:
        raise ValueError(f"unknown tiling configuration keys: {sorted(unknown)}")
    default_tilings = _field("tilings_per_set", config.get("tilings_per_set", 8), 1, _MAX_TILINGS)
    default_tiles = _field("tiles_per_dim", config.get("tiles_per_dim", 6), 1, _MAX_TILES)
    sets = [_tiling_set(i, entry, default_tilings, default_tiles) for i, entry in enumerate(config["tilings"])]
    used = max((d for s in sets for d in s.dims), default=-1) + 1
    n_dims = _field("n_dims", config.get("n_dims", max(used, 1)), 1, _MAX_INDEX)
    return TilingLayout(tuple(sets), n_dims)


_MAX_TILINGS, _MAX_TILES = 256, 255
"""the shifted copies and tiles per dimension a :class:`TilingSet` allows"""
_MAX_INDEX = 2**31 - 1
"""the largest dimension index or count a layout may name (the build's own limits are checked when configuring)"""


def _field(name: str, value: Any, lo: int, hi: int) -> int:
    """``value`` as an int in ``[lo, hi]``: an integer, or a float holding a whole number (JSON's ``2.0``); a bool,
    a string, ``None`` or ``1.5`` is refused, never cast, so a typo cannot become a different layout.

    Raises
    ------
    ValueError
        ``"<name> = <value> is not an integer in [lo, hi]"``.
    """
    try:
        return integer(name, value, lo, hi)
    except ValueError:
        raise ValueError(f"{name} = {value!r} is not an integer in [{lo}, {hi}]") from None


def _tiling_set(i: int, entry: Any, default_tilings: int, default_tiles: int) -> TilingSet:
    """Tiling set ``i`` of a configuration, every field checked by name (``tiling set 1: dims[0] = 'a' ...``).

    Raises
    ------
    ValueError
        Not an object with a ``dims`` list, unknown keys, a field that is not an integer in range, or repeated dims.
    """
    if not isinstance(entry, dict) or not isinstance(entry.get("dims"), list):
        raise ValueError(f'tiling set {i} must be an object with a "dims" list, not {entry!r}')
    extra = set(entry) - {"dims", "tilings", "tiles"}
    if extra:
        raise ValueError(f"tiling set {i}: unknown keys {sorted(extra)}")
    try:
        dims = tuple(_field(f"dims[{j}]", d, 0, _MAX_INDEX) for j, d in enumerate(entry["dims"]))
        tilings = _field("tilings", entry.get("tilings", default_tilings), 1, _MAX_TILINGS)
        tiles = _field("tiles", entry.get("tiles", default_tiles), 1, _MAX_TILES)
        return TilingSet(dims, tilings, tiles)
    except ValueError as err:
        raise ValueError(f"tiling set {i}: {err}") from None


def tiling_to_dict(layout: TilingLayout) -> dict[str, Any]:
    """The JSON-ready dict of ``layout`` (every set explicit); ``load_tiling`` reads it back."""
    return {
        "n_dims": layout.n_dims,
        "tilings": [{"dims": list(s.dims), "tilings": s.tilings, "tiles": s.tiles} for s in layout.sets],
    }


def opal_ddos_layout() -> TilingLayout:
    """OPaL's DDoS policy shape as a layout."""
    return load_tiling(OPAL_DDOS_TILING)
