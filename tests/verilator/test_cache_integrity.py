"""The verilator model cache never crashes the process: a cached library cut short or changed, a deleted Verilog
file, stray files and partial entries are each found before anything is loaded, warned about once and rebuilt; a
damaged entry that cannot be rebuilt (a read-only cache) is one line naming the file and the command that clears it.

Every test starts from a copy of one cache of the small GAE build (4 lanes x 40 steps, built once per module), so
only the rebuilds the tests ask for are paid. A start that must survive a damaged library runs in a child process:
a crash there shows as a negative return code (the signal) instead of killing pytest.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from pynq_rl.host.backends import verilator_build as vb
from tests.common.boards import RTL_TEST_BOARD, require_verilator

SMALL_GAE = RTL_TEST_BOARD.cores[0].spec
REPOSITORY = Path(__file__).resolve().parents[2]

#: Open the small GAE board on verilator, run one GAE operation, print where its model came from.
OVERLAY_IN_A_CHILD = textwrap.dedent("""
    import json
    import numpy as np
    from pynq_rl import RLOverlay
    from tests.common.boards import RTL_TEST_BOARD
    overlay = RLOverlay(backend="verilator", board=RTL_TEST_BOARD, cores=("gae",))
    rng = np.random.default_rng(0)
    overlay.gae.compute(rng.normal(size=(8, 2)), rng.normal(size=(9, 2)), np.zeros((8, 2)))
    build = overlay.device.simulation.builds["gae"]
    print(json.dumps({"library": str(build.library), "seconds": build.seconds}))
""")


@pytest.fixture(scope="module")
def pristine_cache(tmp_path_factory):
    """A cache holding the small GAE build's Verilog and model, built once for the module."""
    require_verilator()
    cache = tmp_path_factory.mktemp("pristine") / "cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYNQ_RL_VERILATOR_CACHE", str(cache))
        vb.build_model("gae", SMALL_GAE)
    return cache


@pytest.fixture
def cache(pristine_cache, tmp_path, monkeypatch):
    """A fresh copy of the pristine cache, in use for this test (here and in the children it starts)."""
    copy = tmp_path / "cache"
    shutil.copytree(pristine_cache, copy)
    monkeypatch.setenv("PYNQ_RL_VERILATOR_CACHE", str(copy))
    return copy


def cached_library(cache: Path) -> Path:
    """The small GAE model's library in ``cache``, found without building or checking anything."""
    (entry,) = [path for path in (cache / "models").iterdir() if path.is_dir()]
    return entry / "libvcore.so"


def assert_sealed(entry: Path) -> None:
    """Every file the entry's manifest lists is there with the size and sha256 it records."""
    listed = json.loads((entry / vb.MANIFEST).read_text())["files"]
    assert listed, f"{entry} has an empty manifest"
    for name, record in listed.items():
        data = (entry / name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (record["size"], record["sha256"]), name


def truncate_to_half(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def flip_16_bytes_at_60_percent(path: Path) -> None:
    with open(path, "r+b") as handle:
        handle.seek(path.stat().st_size * 6 // 10)
        original = handle.read(16)
        handle.seek(-len(original), os.SEEK_CUR)
        handle.write(bytes(byte ^ 0xFF for byte in original))


def start_overlay_child() -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", OVERLAY_IN_A_CHILD],
        cwd=REPOSITORY,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(child: subprocess.Popen) -> tuple[dict, list[str]]:
    """Wait for an overlay child; return what it printed and its damaged-cache warnings (it must exit 0)."""
    out, err = child.communicate(timeout=600)
    assert child.returncode == 0, f"the child exited {child.returncode}:\n{err[-3000:]}"
    warned = [line for line in err.splitlines() if "DamagedCacheWarning" in line]
    return json.loads(out.strip().splitlines()[-1]), warned


@pytest.mark.parametrize(
    ("damage", "reported"),
    [(truncate_to_half, r"\(size \d+ of \d+ bytes\)"), (flip_16_bytes_at_60_percent, r"\(its contents differ")],
    ids=["truncated", "bytes-flipped"],
)
def test_a_damaged_library_is_rebuilt_with_one_warning_instead_of_crashing_the_loader(cache, damage, reported):
    library = cached_library(cache)
    damage(library)
    result, warned = finish(start_overlay_child())
    assert len(warned) == 1, warned
    assert str(library) in warned[0] and "rebuilding it" in warned[0]
    assert re.search(reported, warned[0]), warned[0]
    assert result["library"] == str(library) and result["seconds"] > 0
    assert_sealed(library.parent)


def test_a_deleted_verilog_file_is_converted_again_even_with_other_files_left_in_its_entry(cache):
    verilog = vb.core_verilog("gae", SMALL_GAE)
    (verilog.parent / "notes.txt").write_text("a file the cache did not write\n")
    verilog.unlink()
    with pytest.warns(vb.DamagedCacheWarning, match=rf"{verilog} is damaged \(missing\): rebuilding it"):
        again = vb.core_verilog("gae", SMALL_GAE)
    assert again == verilog and "module gae_core_l4_t40_k2_s8" in again.read_text()
    assert_sealed(verilog.parent)


def test_strays_and_a_partial_entry_do_not_break_a_start(cache):
    """A private build directory a killed build left, an extra file in a whole entry and lock files of no entry are
    ignored; a partial entry at a model's own path (a directory without its library) is rebuilt."""
    library = cached_library(cache)
    entry = library.parent
    leftover = entry.with_name(f"{entry.name}.k3j2h1x0")
    leftover.mkdir()
    (leftover / "libvcore.so").write_bytes(library.read_bytes()[:1000])
    (cache / "models" / "0123456789abcdef0123.lock").touch()
    verilog_entry = vb.core_verilog("gae", SMALL_GAE).parent
    (verilog_entry / "notes.txt").write_text("a file the cache did not write\n")
    shutil.rmtree(entry)
    (entry / "obj").mkdir(parents=True)  # a partial entry: the model's directory, holding no library
    (entry / "obj" / "Vcore.mk").write_text("")
    with pytest.warns(vb.DamagedCacheWarning, match=rf"{library} is damaged \(no MANIFEST.json"):
        build = vb.build_model("gae", SMALL_GAE)
    assert build.library == library and build.seconds > 0
    assert_sealed(entry)
    with warnings.catch_warnings():
        warnings.simplefilter("error", vb.DamagedCacheWarning)
        assert vb.build_model("gae", SMALL_GAE).seconds == 0.0  # strays left as they are, and nothing warned


def test_two_processes_repairing_one_damaged_library_both_load_the_same_rebuilt_one(cache):
    library = cached_library(cache)
    truncate_to_half(library)
    results = [finish(child) for child in [start_overlay_child(), start_overlay_child()]]
    assert [result["library"] for result, _ in results] == [str(library)] * 2
    assert sorted(len(warned) for _, warned in results) == [0, 1], "exactly one of them repairs it"
    assert sorted(result["seconds"] > 0 for result, _ in results) == [False, True]
    assert_sealed(library.parent)


def test_a_damaged_entry_in_a_read_only_cache_is_one_line_naming_the_file_and_how_to_clear_it(cache, monkeypatch):
    library = cached_library(cache)
    truncate_to_half(library)
    damaged_size = library.stat().st_size
    directories = [cache, cache / "models", library.parent]
    for directory in directories:
        directory.chmod(0o555)
    try:
        if os.access(library.parent, os.W_OK):  # root writes anyway: refuse the rename out of the way instead
            real_rename = os.rename

            def refuse_in_cache(source, destination, *args, **kwargs):
                if Path(source).is_relative_to(cache):
                    raise PermissionError(13, "Permission denied", str(source))
                return real_rename(source, destination, *args, **kwargs)

            monkeypatch.setattr(vb.os, "rename", refuse_in_cache)
        with warnings.catch_warnings():
            warnings.simplefilter("error", vb.DamagedCacheWarning)  # nothing is rebuilt, so nothing says it is
            with pytest.raises(vb.VerilatorCacheError) as error:
                vb.build_model("gae", SMALL_GAE)
    finally:
        for directory in directories:
            directory.chmod(0o755)
    message = str(error.value)
    assert "\n" not in message
    assert f"{library} is damaged (size" in message and f"`rm -rf {library.parent}`" in message
    assert library.stat().st_size == damaged_size, "the damaged library was left as it was"
