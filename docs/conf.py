"""Sphinx configuration of the pynq-rl documentation site.

Build it from the repository root (``pip install -e ".[docs]"`` brings the pinned toolchain, and is all the build
needs; ``tests/test_docs_extra.py`` runs these commands in a fresh venv)::

    sphinx-build -W --keep-going -b html docs docs/_build/html

``-W`` turns every warning into an error: a broken link between pages, a missing heading anchor, an unresolved
cross-reference in a docstring, a notebook cell that raises. ``tests/test_docs.py`` runs the Python snippets of the
README and of these pages, and checks that every relative link points to a file that exists.

Why Sphinx and not MkDocs: the package's docstrings are numpydoc with Sphinx roles (``:func:``, ``:class:``,
``:meth:``, ``:data:``, ``:mod:``) throughout; ``sphinx.ext.autodoc`` with ``napoleon`` renders them as written and
resolves those roles (and, nitpicky, reports the ones that point nowhere), while mkdocstrings would show them as raw
text. PYNQ and cocotb, the two projects this one plugs into, document themselves with Sphinx too. The pages are
MyST Markdown (``myst-parser``), so they also read well on GitHub, and the notebooks go through ``myst-nb``, which
executes them on the ``emu`` backend at every build, so the outputs on the site are today's.

Environment: ``PYNQ_RL_DOCS_EXECUTE=off`` renders the notebooks without running them (a quick local build of the
text); the default, ``force``, runs all three (about half a minute on the emulated cores).
"""

from __future__ import annotations

import os
import re
import sys
from importlib.util import find_spec
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path.insert(0, str(REPO))  # autodoc imports the checkout's pynq_rl, installed or not

project = "pynq-rl"
author = "the pynq-rl authors"
copyright = "the pynq-rl authors, BSD-3-Clause"

try:
    from pynq_rl import __version__ as release
except ImportError:  # pragma: no cover - the build imports the package for autodoc anyway
    release = "unknown"
version = release

extensions = [
    "myst_nb",  # MyST Markdown pages and the notebooks (it loads myst_parser itself)
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",  # numpydoc sections (Parameters, Returns, Raises, Attributes)
    "sphinx.ext.mathjax",
]

exclude_patterns = [
    "_build",
    "jupyter_execute",
    "README.md",  # docs/README.md says how to build this site; it is for GitHub's folder view
    "**/.ipynb_checkpoints",
]

# --- MyST -------------------------------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3  # [text](page.md#a-heading) links to headings down to ###; a missing one warns
myst_links_external_new_tab = False

# --- notebooks (myst-nb) ---------------------------------------------------------------------------------------
# docs/notebooks/*.ipynb are symbolic links to the repository's notebooks/ (the ones PYNQ installs on a board); each
# starts with BACKEND = "emu", so the build runs them on the emulated cores. In a temporary directory: their runs/
# land there, not in the source tree.
nb_execution_mode = {"off": "off", "cache": "cache"}.get(os.environ.get("PYNQ_RL_DOCS_EXECUTE", ""), "force")
nb_execution_in_temp = True
nb_execution_timeout = 600
nb_execution_raise_on_error = True  # a cell that raises fails the build
nb_execution_show_tb = True
nb_merge_streams = True

# --- autodoc ----------------------------------------------------------------------------------------------------
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_class_signature = "separated"
# The API pages document modules whose imports are other extras' packages: Ape-X's driver (ray and torch, the
# ``distributed`` extra), the Stable-Baselines3 buffers (``sb3``) and the RLlib learner (``rllib``). autodoc imports
# each against mocks of those packages where this environment lacks them, so ``pip install ".[docs]"`` alone builds
# the same pages; an environment that has them (the test extra) documents against the real ones. RLlib is always
# mocked, with dm-tree (``tree``) that it imports: its pins clash with the other extras, so it lives in a venv of its
# own, never beside the docs toolchain.
_OPTIONAL_IMPORTS = ("ray", "torch", "stable_baselines3")
autodoc_mock_imports = ["ray.rllib", "tree"] + [name for name in _OPTIONAL_IMPORTS if find_spec(name) is None]
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False
napoleon_use_param = False  # types as written ("numpy.ndarray, shape (T, N)"), not split into cross-references
napoleon_preprocess_types = False

# Unresolved Python cross-references are warnings (and so errors under -W), except for the libraries this project
# builds on, whose inventories would need the network (intersphinx).
nitpicky = True
nitpick_ignore: list[tuple[str, str]] = []
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|pynq|gymnasium|gym|torch|grpc|ray|stable_baselines3|myhdl|collections|typing)(\..*)?"),
    (r"py:.*", r"(os|pathlib|enum|dataclasses|concurrent|threading|ctypes|abc|io|subprocess|queue|socket)(\..*)?"),
    (r"py:.*", r"(argparse|difflib|contextlib|tqdm)(\..*)?"),
    (r"py:class", r"(array-like|array_like|optional|callable|iterable|sequence|mapping|scalar|default.*)"),
    (r"py:class", r"(int|float|str|bool|bytes|dict|list|tuple|set|object|type|None|Path|Any)"),
    # private helpers (a leading underscore: documented in the source only), type variables, generated gRPC stubs,
    # and the HDL, which the site describes in prose (design.md) rather than as an API
    (r"py:.*", r".*(^|\.)_[A-Za-z]\w*"),
    (r"py:class", r"pynq_rl\..*\.T"),
    (r"py:.*", r".*replay_pb2(_grpc)?(\..*)?"),
    (r"py:.*", r"pynq_rl\.overlay\.(hdl|build)(\..*)?"),
]

# --- HTML -------------------------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"pynq-rl {release}"
html_static_path: list[str] = []
html_show_sourcelink = True


# --- docstrings that are also command-line help ----------------------------------------------------------------
# The agents' ``Args`` field docstrings are the help texts of ``pynq-rl train`` (pynq_rl/host/agents/common/options.py),
# so they stay plain one-liners in CleanRL's style: "where GAE runs: `emu` ...", "added to |TD error| ...". Two
# readings of reStructuredText would garble them, and both are turned off here rather than in the help texts:
#
# * napoleon reads an attribute docstring "where GAE runs: ..." as "<type>: <description>" and makes
#   "where GAE runs" a class reference; the project never writes a type that way (types come from annotations);
# * docutils reads "|TD error|" as a substitution reference; the project writes |x| only for absolute values.
_SUBSTITUTION = re.compile(r"(?<![\\|\w`])\|(?=[^\s|])([^|`]*?[^\s|\\])\|(?![\w|])")
_BACKTICKS = re.compile(r"(`+)(?:.+?)\1")


def _escape_absolute_values(line: str) -> str:
    """``|x|`` -> ``\\|x\\|`` outside inline literals and roles (no substitution reference is meant)."""
    parts, last = [], 0
    for match in _BACKTICKS.finditer(line):
        parts.append(_SUBSTITUTION.sub(r"\\|\1\\|", line[last : match.start()]))
        parts.append(match.group(0))
        last = match.end()
    parts.append(_SUBSTITUTION.sub(r"\\|\1\\|", line[last:]))
    return "".join(parts)


def _process_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    in_literal_block = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if stripped.endswith("::"):  # a literal block or a directive (.. math::) follows: leave its body as is
            in_literal_block = True
            lines[i] = _escape_absolute_values(line)
            continue
        if in_literal_block and (not stripped or line[:1].isspace()):
            continue
        in_literal_block = False
        lines[i] = _escape_absolute_values(line)


def _untyped_attribute_docstring(self) -> list[str]:
    """napoleon's attribute docstring without the "<type>: <description>" split of its first line."""
    return self.__class__(self._consume_to_end(), self._config).lines()


# --- short names in cross-references -----------------------------------------------------------------------------
# Docstrings name the package's classes as the code around them does (:class:`GaeSpec` in a driver, whose module
# imports it): resolve a name Sphinx cannot find as written the way a leading dot would (":class:`.GaeSpec`"), by the
# one documented object whose full name ends with it. A name that matches nothing, or several objects, still warns.
def _resolve_short_name(app, env, node, contnode):
    if node.get("refdomain") != "py" or node.get("refspecific"):
        return None
    node["refspecific"] = True
    try:
        domain = env.get_domain("py")
        return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], node["reftarget"], node, contnode)
    finally:
        node["refspecific"] = False


def setup(app):
    from sphinx.ext.napoleon.docstring import GoogleDocstring

    GoogleDocstring._parse_attribute_docstring = _untyped_attribute_docstring
    app.connect("autodoc-process-docstring", _process_docstring, priority=400)  # before napoleon (500)
    app.connect("missing-reference", _resolve_short_name)
