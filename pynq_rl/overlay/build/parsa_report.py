"""The ParSa core's part of the resource report: its board builds, the fit checks and the check that the policy
banks and key-row memories became block memory."""

from __future__ import annotations

from pathlib import Path

from .. import spec as S
from .board_builds import BoardBuild, run_board_builds
from .yosys import board_fit, fit_table
from .yosys import format_count as _fmt

#: The ParSa builds: (board, device part, extra ``synth_xilinx`` options); the spec is the board's parsa slot.
PARSA_TARGETS = (("Pynq-Z2", "xc7z020", ""), ("ZCU106", "xczu7ev", ""))
#: Quick mode: 2 workers x 256 rows, enough for the banks to need block RAM.
PARSA_QUICK = ("quick", "xc7z020", S.ParsaSpec(workers=2, tiles_per_worker=256, max_tilings=16, keys=4), "")


#: One ParSa build (board, part, spec, options): see :class:`.board_builds.BoardBuild`.
ParsaBuild = BoardBuild


def parsa_plan(quick: bool = False) -> list[ParsaBuild]:
    """The ParSa builds of each board's overlay (``spec.BOARDS``), or the quick one."""
    if quick:
        return [ParsaBuild(*PARSA_QUICK)]
    return [
        ParsaBuild(board, part, S.BOARDS[board].slot("parsa").spec, options) for board, part, options in PARSA_TARGETS
    ]


def parsa_memory_bits(spec: S.ParsaSpec) -> dict[str, int]:
    """Bits of the ParSa core's memories: policy banks, key-row memories (the two that must be block memory)."""
    row_bits = max(1, (spec.tiles_per_worker - 1).bit_length())
    return {
        "policy_bits": spec.workers * spec.tiles_per_worker * spec.max_actions * spec.value_w,
        "key_row_bits": spec.workers * spec.keys * spec.max_tilings * row_bits,
    }


def parsa_memory_check(build: ParsaBuild, row: dict) -> dict:
    """Did the policy banks and key-row memories become BRAM/URAM? Block memory at least as large as both, and
    fewer flip-flops than an eighth of the policy bits, mean they did."""
    bits = parsa_memory_bits(build.spec)
    block_bits = row["ramb18"] * 18 * 1024 + row["ramb36"] * 36 * 1024 + row["uram"] * 288 * 1024
    return {
        **bits,
        "block_memory_bits": block_bits,
        "ff": row["ff"],
        "inferred": block_bits >= sum(bits.values()) and row["ff"] < bits["policy_bits"] / 8,
    }


def parsa_columns(spec: S.ParsaSpec) -> dict:
    """The ParSa rows' own columns: workers, bank rows, limits, value width, pipeline depths."""
    return {
        "workers": spec.workers,
        "tiles_per_worker": spec.tiles_per_worker,
        "max_actions": spec.max_actions,
        "max_dims": spec.max_dims,
        "max_tilings": spec.max_tilings,
        "keys": spec.keys,
        "value_w": spec.value_w,
        "act_depth": spec.act_depth,
        "update_depth": spec.update_depth,
    }


def run_parsa_builds(
    builds: list[ParsaBuild], work_dir: Path, jobs: int = 2, timeout: float | None = None, log=print
) -> list[dict]:
    """Convert and synthesize the ParSa builds; one row per build (``status`` says why a build has no counts)."""
    return run_board_builds(builds, work_dir, parsa_columns, parsa_memory_check, jobs, timeout, log)


def parsa_section(rows: list[dict]) -> dict:
    """The ParSa part of the report: rows, fit checks on each board's device (< 100% of every resource), and
    whether every build put its policy banks and key-row memories in block memory."""
    boards = {b for b, *_ in PARSA_TARGETS}
    fits = [board_fit(row) for row in rows if row["status"] == "ok" and row["board"] in boards]
    ok = [r for r in rows if r["status"] == "ok"]
    return {
        "rows": rows,
        "fit_checks": fits,
        "memory_check": {"all_inferred": bool(ok) and all(r["memory_check"]["inferred"] for r in ok)},
    }


def parsa_markdown(section: dict) -> list[str]:
    """The ParSa core's part of ``resources.md``."""
    out = [
        "",
        "## ParSa core (parallel tile-coded Sarsa)",
        "",
        "The whole AXI top (`parsa_core_top`): register file, positions unit (31 x 32-bit multiply), WORKERS "
        "workers (descriptor banks, index pipeline with 7 small multiplies, a policy bank of MAX_ACTIONS x VALUE_W "
        "bit rows, key-row memory, update pass), sum and argmax trees, Sarsa arithmetic, emitter and control. "
        'On the ZCU106 the policy banks (at least one URAM288\'s bits each) carry `ram_style = "ultra"` and no '
        "initial loop; every other memory keeps its all-zero initial loop (no global `-uram`). "
        "act/update depth: CYCLES_ACT = n_dims + busiest + act "
        "depth, CYCLES_UPDATE = busiest + update depth.",
        "",
        "| board | module | family | WORKERS | rows/worker | actions | keys | LUT | FF | DSP | RAMB18 | RAMB36 | "
        "BRAM36 eq. | URAM | carry | act/update depth | yosys [s] |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for row in section["rows"]:
        family = f"{row['family']} {row['options']}".strip()
        head = (
            f"| {row['board']} | `{row['module']}` | {family}"
            f" | {row['workers']} | {row['tiles_per_worker']:,} | {row['max_actions']} | {row['keys']} |"
        )
        if row["status"] != "ok":
            out.append(f"{head} {row['status']} ||||||||||")
            continue
        out.append(
            f"{head} {_fmt(row['lut'])} | {_fmt(row['ff'])} | {_fmt(row['dsp'])} | {row['ramb18']} | "
            f"{row['ramb36']} | {_fmt(row['bram36'], 1)} | {row['uram']} | {row['carry']} | "
            f"{row['act_depth']} / {row['update_depth']} | {row['runtime[s]']:.0f} |"
        )
    out += fit_table(section["fit_checks"])
    out += [
        "",
        f"Policy banks and key-row memories in block memory (BRAM/URAM bits >= their bits, FF < policy bits "
        f"/ 8): **{'yes' if section['memory_check']['all_inferred'] else 'NO'}**.",
        "",
        "| module | policy bits | key-row bits | block-memory bits | FF |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in section["rows"]:
        if row["status"] == "ok":
            m = row["memory_check"]
            out.append(
                f"| `{row['module']}` | {m['policy_bits']:,} | {m['key_row_bits']:,} | "
                f"{m['block_memory_bits']:,} | {m['ff']:,} |"
            )
    return out
