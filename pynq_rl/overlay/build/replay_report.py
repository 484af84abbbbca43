"""The replay core's part of the resource report: its board builds (Pynq-Z2 xc7, ZCU106 xcup with its largest tree
levels marked for URAM), the fit checks and the check that the deep tree levels became block memory."""

from __future__ import annotations

from pathlib import Path

from .. import spec as S
from ..hdl.replay.tree import level_depth
from .board_builds import BoardBuild, run_board_builds
from .core_specs import slot_spec
from .yosys import board_fit, fit_table
from .yosys import format_count as _fmt

#: The replay builds of the full report: (board, device part, default spec, extra ``synth_xilinx`` options). A
#: board's own replay slot in ``spec.BOARDS`` replaces the default spec when it has one.
REPLAY_TARGETS = (
    ("Pynq-Z2", "xc7z020", S.ReplaySpec(k=16, levels=4), ""),
    ("ZCU106", "xczu7ev", S.ReplaySpec(k=16, levels=5), ""),
)
#: Quick mode: a 4096-leaf build, large enough that its leaf level must become block RAM.
REPLAY_QUICK = ("quick", "xc7z020", S.ReplaySpec(k=16, levels=3), "")


#: One replay build (board, part, spec, options): see :class:`.board_builds.BoardBuild`.
ReplayBuild = BoardBuild


def replay_plan(quick: bool = False) -> list[ReplayBuild]:
    """The replay builds: the Pynq-Z2 (xc7) and ZCU106 (xcup, large levels in URAM) builds, or the quick one."""
    if quick:
        return [ReplayBuild(*REPLAY_QUICK)]
    builds = []
    for board, part, default, options in REPLAY_TARGETS:
        spec = default
        slots = [slot for slot in S.BOARDS[board].cores if slot.name == "replay"] if board in S.BOARDS else []
        if slots:
            spec = slot_spec(slots[0], S.ReplaySpec)
        builds.append(ReplayBuild(board, part, spec, options))
    return builds


def tree_bits(spec: S.ReplaySpec) -> dict[int, int]:
    """Bits stored per tree level (level 0 is the root register)."""
    return {level: spec.k**level * spec.level_width(level) for level in range(spec.levels + 1)}


def replay_memory_check(build: ReplayBuild, row: dict) -> dict:
    """Did the deep levels become BRAM/URAM? Block memory at least as large as the levels too big for LUT-RAM
    (> 64 words), and fewer flip-flops than those levels hold bits (kept in flip-flops, they alone would need that
    many), mean they did; a memory left as flip-flops or LUT-RAM fails this. The bound is the deep levels' bits, not
    a fraction of the tree's: the sampler and updater, pipelined to close timing, legitimately hold thousands of
    registers (the quick build: 9,365 FF against 71,068 tree bits)."""
    bits = tree_bits(build.spec)
    deep = sum(b for level, b in bits.items() if level >= 1 and level_depth(build.spec.k, level) > 64)
    block_bits = row["ramb18"] * 18 * 1024 + row["ramb36"] * 36 * 1024 + row["uram"] * 288 * 1024
    return {
        "tree_bits": sum(bits.values()),
        "deep_level_bits": deep,
        "block_memory_bits": block_bits,
        "ff": row["ff"],
        "inferred": block_bits >= deep and row["ff"] < deep,
    }


def replay_columns(spec: S.ReplaySpec) -> dict:
    """The replay rows' own columns: tree shape, capacity, leaf width, pipeline depths."""
    return {
        "k": spec.k,
        "levels": spec.levels,
        "capacity": spec.capacity,
        "leaf_w": spec.leaf.width,
        "set_depth": spec.set_depth,
        "sample_depth": spec.sample_depth,
    }


def run_replay_builds(
    builds: list[ReplayBuild], work_dir: Path, jobs: int = 2, timeout: float | None = None, log=print
) -> list[dict]:
    """Convert and synthesize the replay builds; one row per build (``status`` says why a build has no counts)."""
    return run_board_builds(builds, work_dir, replay_columns, replay_memory_check, jobs, timeout, log)


def replay_section(rows: list[dict]) -> dict:
    """The replay part of the report: rows, fit checks on each board's device (< 100% of every resource), and
    whether every build put its deep levels in block memory."""
    boards = {b for b, *_ in REPLAY_TARGETS}
    fits = [board_fit(row) for row in rows if row["status"] == "ok" and row["board"] in boards]
    ok = [r for r in rows if r["status"] == "ok"]
    return {
        "rows": rows,
        "fit_checks": fits,
        "memory_check": {"all_inferred": bool(ok) and all(r["memory_check"]["inferred"] for r in ok)},
    }


def replay_markdown(section: dict) -> list[str]:
    """The replay core's part of ``resources.md``."""
    out = [
        "",
        "## Replay core (sum tree)",
        "",
        "The whole AXI top (`replay_core_top`): register file, K-ary sum tree (one memory per level, K columns "
        "wide; level 1 and the root are registers), updater, sampler, dump/clear and control. yosys reads the "
        "Verilog Vivado gets: on the ZCU106 the levels of at least one URAM288's bits carry `ram_style = "
        '"ultra"` and no initial loop (no global `-uram`: yosys 0.23, like Vivado, puts only those in URAM), '
        "every other memory keeps its all-zero initial loop. set/sample depth: CYCLES = n + depth.",
        "",
        "| board | module | family | K | LEVELS | capacity | LUT | FF | DSP | RAMB18 | RAMB36 | BRAM36 eq. | "
        "URAM | carry | ltp [levels] | set/sample depth | yosys [s] |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for row in section["rows"]:
        family = f"{row['family']} {row['options']}".strip()
        head = f"| {row['board']} | `{row['module']}` | {family} | {row['k']} | {row['levels']} | {row['capacity']:,} |"
        if row["status"] != "ok":
            out.append(f"{head} {row['status']} ||||||||||")
            continue
        out.append(
            f"{head} {_fmt(row['lut'])} | {_fmt(row['ff'])} | {_fmt(row['dsp'])} | {row['ramb18']} | "
            f"{row['ramb36']} | {_fmt(row['bram36'], 1)} | {row['uram']} | {row['carry']} | "
            f"{_fmt(row.get('ltp_fabric[levels]'))} | {row['set_depth']} / {row['sample_depth']} | "
            f"{row['runtime[s]']:.0f} |"
        )
    out += fit_table(section["fit_checks"])
    out += [
        "",
        f"Deep levels in block memory (BRAM/URAM bits >= bits of the levels deeper than 64 words, FF < "
        f"deep-level bits): **{'yes' if section['memory_check']['all_inferred'] else 'NO'}**.",
        "",
        "| module | tree bits | deep-level bits | block-memory bits | FF |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in section["rows"]:
        if row["status"] == "ok":
            m = row["memory_check"]
            out.append(
                f"| `{row['module']}` | {m['tree_bits']:,} | {m['deep_level_bits']:,} | "
                f"{m['block_memory_bits']:,} | {m['ff']:,} |"
            )
    return out
