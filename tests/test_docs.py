"""The README and the documentation site are kept true: their Python snippets run, their relative links resolve, and
every committed benchmark result page is on the site.

The site itself is built by ``sphinx-build -W --keep-going -b html docs docs/_build/html`` (``docs/conf.py``), which
checks the links between pages, heading anchors and docstring cross-references; these tests cover what that build does
not: running the code, the README (not part of the site), and links to files outside ``docs/``.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
RESULTS = REPO / "benchmarks" / "results"


def _markdown_files() -> list[Path]:
    """README.md and every Markdown page under docs/ (the build output excluded)."""
    pages = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.relative_to(DOCS).parts)
    return [REPO / "README.md", *pages]


def test_python_snippets_run():
    """Every ```python block of the README and of docs/ runs on ``emu`` (pytest-markdown-docs, one fresh namespace per
    block), in a pytest of its own so that ``--markdown-docs`` collects these files and no docstring of the package.

    A block that cannot run here (Vivado, a board, root, another venv) is written as ``bash`` or ``text``, never as a
    skipped Python block (``contributing.md``).
    """
    files = [str(p.relative_to(REPO)) for p in _markdown_files()]
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--markdown-docs",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",  # not pytest.ini's: no nbmake, no workers
        "-q",
        *files,
    ]
    run = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1800)
    tail = "\n".join((run.stdout + run.stderr).splitlines()[-60:])
    assert run.returncode == 0, f"a documentation snippet failed:\n{tail}"
    assert re.search(r"\b\d+ passed\b", run.stdout), f"no snippet ran:\n{tail}"


def _relative_targets(path: Path) -> list[str]:
    """The relative link and image targets of a Markdown file, and the paths of its MyST include/image directives."""
    targets = []

    def walk(tokens):
        for token in tokens:
            if token.type == "link_open":
                targets.append(token.attrs.get("href", ""))
            elif token.type == "image":
                targets.append(token.attrs.get("src", ""))
            elif token.type == "fence":
                directive = re.match(r"\{(include|image|figure|literalinclude)\}\s+(\S+)", token.info)
                if directive:
                    targets.append(directive.group(2))
            if token.children:
                walk(token.children)

    walk(MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8")))
    return [t for t in targets if t and not re.match(r"^[a-z][a-z0-9+.-]*:|^#", t)]


def _anchors(path: Path) -> set[str]:
    """The heading anchors of a Markdown page, as GitHub and MyST (``myst_heading_anchors``) spell them."""
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    titles = [tokens[i + 1].content for i, token in enumerate(tokens) if token.type == "heading_open"]
    return {re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-") for title in titles}


@pytest.mark.parametrize("page", _markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_point_to_files_that_exist(page):
    for target in _relative_targets(page):
        file, _, anchor = target.partition("#")
        resolved = (page.parent / file).resolve()
        assert resolved.exists(), f"{page.relative_to(REPO)} links to {target}, which does not exist"
        if anchor and page.name == "README.md" and resolved.suffix == ".md":  # docs/ anchors: the Sphinx build
            assert anchor in _anchors(resolved), f"README.md links to {target}: no such heading in {file}"


def test_readme_test_command_is_what_ci_runs():
    """The README's test command is the line .ci/run runs, verbatim."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    ci_command = ci[ci.index("# --- the README's test command, verbatim ---") + 1]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"```bash\n{ci_command}\n```" in readme


def test_every_benchmark_result_page_is_on_the_site():
    """A page written to benchmarks/results/ is shown by a page of the same name under docs/benchmarks/."""
    for result in sorted(RESULTS.glob("*.md")):
        page = DOCS / "benchmarks" / result.name
        assert page.exists(), f"{result.relative_to(REPO)} has no page docs/benchmarks/{result.name}"
        assert f"../../benchmarks/results/{result.name}" in page.read_text(encoding="utf-8")
        assert page.stem in (DOCS / "benchmarks" / "index.md").read_text(encoding="utf-8")
