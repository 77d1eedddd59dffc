"""The documentation's sources, without building the site (``make docs`` builds it; the browser
test opens it): every public name has a docstring, every page and include exists, the generated
tables show the numbers of the files they read, the guide's example runs, and the package's
citation metadata agree."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
HOOKS = DOCS / "hooks"


def hook(name: str) -> ModuleType:
    """A module of ``docs/hooks`` (a folder of MkDocs hooks, not a package)."""
    if str(HOOKS) not in sys.path:
        sys.path.insert(0, str(HOOKS))
    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", HOOKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def nav_pages() -> list[str]:
    """Every page path named in mkdocs.yml's nav (the gallery's folder included)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = text.split("\nnav:\n", 1)[1]
    entry = r"^\s*-\s*(?:[^:\n]+:\s*)?([\w./-]+(?:\.md|/gallery))\s*$"
    return re.findall(entry, nav, re.MULTILINE)


def test_every_public_name_has_a_docstring() -> None:
    public_api = hook("public_api")
    assert public_api.undocumented() == []


def test_the_docstring_check_finds_a_missing_docstring() -> None:
    public_api = hook("public_api")

    def bare(x: int) -> int:
        return x

    class Bare:
        pass

    assert public_api.own_docstring(bare) is None
    assert public_api.own_docstring(Bare) is None  # not object's inherited docstring
    assert public_api.needs_docstring(Bare) and not public_api.needs_docstring(3)


def test_every_documented_module_has_a_page_in_the_nav() -> None:
    public_api = hook("public_api")
    pages = nav_pages()
    for slug in [*public_api.MODULES, "index", "policy-parameters"]:
        assert f"reference/{slug}.md" in pages, slug


def test_every_page_of_the_nav_exists_or_is_generated() -> None:
    generated = {"results/real-datasets.md"} | {
        p for p in nav_pages() if p.startswith("reference/")
    }
    missing = [
        p
        for p in nav_pages()
        if p not in generated and not p.endswith("/gallery") and not (DOCS / p).is_file()
    ]
    assert missing == []


def source_pages() -> list[Path]:
    """Every Markdown page written by hand (not the gallery's generated pages)."""
    return [p for p in sorted(DOCS.rglob("*.md")) if "generated" not in p.relative_to(DOCS).parts]


def test_snippets_and_generated_blocks_name_files_and_tables_that_exist() -> None:
    import shlex

    results = hook("results")
    for page in source_pages():
        text = page.read_text(encoding="utf-8")
        for include in re.findall(r'^\s*--8<-- "([^"]+)"', text, re.MULTILINE):
            assert (ROOT / include).is_file(), f"{page}: {include}"
        for name, arguments in results.MARKER.findall(text):
            assert name in results.GENERATORS, f"{page}: {name}"
            if name == "table":  # the file exists and holds a table after the heading given
                assert results.file_table(*shlex.split(arguments)).count("\n") >= 1, page


#: Marks a hand-written table as holding no measurement: the line right above its header
DESCRIPTIVE = "<!-- descriptive table -->"
#: A measured-looking number: a thousands separator (1,234), a decimal point (0.5) or ±
MEASURED = re.compile(r"\d,\d{3}(?!\d)|\d\.\d|±")
#: ... or a cell that is a bare number, perhaps with a unit (| 1725 |, | 81 |, | 2.2× |, | 0 % |)
NUMBER_CELL = re.compile(r"^\s*\**[-+−]?\d+\**\s*(%|×|x|s|ms|MiB|GiB)?\s*$")
SEPARATOR = re.compile(r"^\|\s*:?-{3,}")


def retyped_tables(markdown: str) -> list[int]:
    """Line numbers (1-based) of the headers of the Markdown tables in ``markdown`` (indented ones
    and those in code blocks too: pasted output is retyped all the same) whose body cells hold a
    measured-looking number (``MEASURED`` or ``NUMBER_CELL``; inline code left out:
    `alpha=0.02` is a setting), unless the line right above the header is ``DESCRIPTIVE``.
    Measured tables come from the files the benchmarks and the suite write (``--8<--``
    includes and ``<!-- generated: ... -->`` markers), never typed into a page."""
    lines = [line.strip() for line in markdown.splitlines()]  # tables in lists are indented
    found = []
    for i, line in enumerate(lines):
        if i + 1 >= len(lines) or not line.startswith("|"):
            continue
        if not SEPARATOR.match(lines[i + 1]) or (i > 0 and lines[i - 1].startswith("|")):
            continue
        if i > 0 and lines[i - 1].strip() == DESCRIPTIVE:
            continue
        body = []
        for row in lines[i + 2 :]:
            if not row.startswith("|"):
                break
            body.append(re.sub(r"`[^`]*`", "", row))
        cells = [cell for row in body for cell in row.strip("|").split("|")]
        if any(MEASURED.search(row) for row in body) or any(NUMBER_CELL.match(c) for c in cells):
            found.append(i + 1)
    return found


#: Pages whose measured tables are being moved to a results file by work in progress elsewhere
#: (the service's load benchmark writes benchmarks/results/serve_load.md): empty this when done
PENDING: set[str] = set()


def test_no_page_holds_a_retyped_table_of_measurements() -> None:
    retyped = {
        name: rows
        for page in source_pages()
        if (name := str(page.relative_to(DOCS))) not in PENDING
        and (rows := retyped_tables(page.read_text(encoding="utf-8")))
    }
    assert retyped == {}, "include the results file (--8<--) or mark the table descriptive"


def test_the_retyped_table_check_catches_a_copied_table() -> None:
    copied = "Measured:\n\n" + (ROOT / "benchmarks/results/memory.md").read_text(encoding="utf-8")
    assert retyped_tables(copied) != []
    assert retyped_tables("text\n\n| a | b |\n|---|---|\n| x | 4,420 ± 48 |\n") == [3]
    assert retyped_tables("| a | b |\n| --- | --- |\n| x | 0.0292 |\n") == [1]
    assert retyped_tables(f"{DESCRIPTIVE}\n| a | b |\n|---|---|\n| x | 1.5 |\n") == []
    assert retyped_tables("| a | b |\n|---|---|\n| `alpha=0.02` | 3 arms |\n") == []
    assert retyped_tables("```text\n| a |\n|---|\n| 1.5 |\n```\n") == [2]
    assert retyped_tables("- runs:\n\n  | a | b |\n  |---|---|\n  | h1 | 1725 |\n") == [3]
    assert retyped_tables("| a | b |\n|---|---|\n| x | 81 |\n") == [1]
    assert retyped_tables("| a | b |\n|---|---|\n| x | see Eq. 13 |\n") == []


def test_real_dataset_tables_show_the_means_of_the_recorded_runs() -> None:
    results = hook("results")
    page = results.real_datasets_page()
    runs = pd.read_csv(ROOT / "benchmarks/results/real_shuttle_runs.csv")
    sigma = runs[runs["policy"] == "neural-sigma2-linucb"]["final_regret"]
    expected = f"{sigma.mean():,.0f} ± {sigma.std(ddof=0):,.0f}"
    shuttle = page.split("\n## shuttle", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in shuttle.splitlines() if line.startswith("| neural-sigma2-linucb"))
    assert expected in row
    assert page.count("\n## ") == len(list((ROOT / "benchmarks/results").glob("real_*.csv"))) + 1


def test_demo_table_is_the_demo_summary_file() -> None:
    results = hook("results")
    table = results.demo_summary_table()
    summary = pd.read_csv(ROOT / "benchmarks/results/demo_summary.csv")
    for row in summary.itertuples(index=False):
        assert f"| {row.policy} | {row.seeds} | {row.T} | {row.final_regret_mean:.1f} ±" in table


def test_readme_records_table_shows_the_recorded_runs() -> None:
    """The README's records table quotes benchmarks/results/records_<dataset>.csv: each policy's
    mean final regret (and the best one's ± std) as those files hold them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Records on real data", 1)[1].split("\n## ", 1)[0]
    labels = {
        "linucb": "LinUCB",
        "neural-ucb": "NeuralUCB",
        "neural-linucb": "Neural-LinUCB",
        "neural-sigma2-linucb": "Neural-σ²-LinUCB",
    }
    rows = {"mnist": "| MNIST,", "shuttle": "| shuttle,", "covertype": "| covertype,"}
    rows["cifar10"] = "| CIFAR-10,"
    for dataset, start in rows.items():
        runs = pd.read_csv(ROOT / f"benchmarks/results/records_{dataset}.csv")
        row = next(line for line in table.splitlines() if line.startswith(start))
        means = runs.groupby("policy")["final_regret"].agg(["mean", "std"])
        for policy, mean in means["mean"].items():
            assert f"{labels[policy]} {mean:,.1f}" in row, (dataset, policy, mean)
        best = means["mean"].idxmin()
        best_mean, best_std = means.loc[best]
        assert f"{labels[best]} {best_mean:,.1f} ± {best_std:,.1f}" in row, (dataset, best)


def test_experiments_table_lists_every_shipped_config() -> None:
    results = hook("results")
    table = results.experiments_table()
    configs = sorted((ROOT / "src/deepbandits/experiments/configs").glob("*.toml"))
    assert configs
    for path in configs:
        assert f"| `{path.stem}` |" in table


def test_reference_pages_document_every_public_name_once() -> None:
    reference = hook("reference")
    public_api = hook("public_api")
    pages = reference.pages()
    directives = re.findall(r"^::: (\S+)$", "\n".join(pages.values()), re.MULTILINE)
    entries = [e for e in public_api.entries() if not hasattr(e.obj, "__path__")]
    documented = {d for d in directives if d not in public_api.MODULES.values()}
    assert {e.identifier for e in entries} <= documented
    assert len(directives) == len(set(directives))


def test_roles_in_docstrings_become_code_linked_to_their_entry() -> None:
    pytest.importorskip("mkdocs", reason="the docs extra (make docs) is not installed")
    reference = hook("reference")
    reference.pages()  # registers the anchors

    class Page:
        url = "guides/live/"

    html = reference.on_page_content(
        "see :func:<code>~deepbandits.experiments.run</code> and :mod:<code>nowhere.x</code>",
        Page(),
        None,
        None,
    )
    assert (
        '<a href="../../reference/experiments/#deepbandits.experiments.run"><code>run</code></a>'
        in html
    )
    assert "<code>nowhere.x</code>" in html and ":mod:" not in html


def test_the_extending_guide_example_runs() -> None:
    text = (DOCS / "guides/extending.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- example: new-policy -->\s*```python\n(.*?)```", text, re.DOTALL)
    assert match
    from deepbandits.policies import POLICIES

    namespace: dict[str, object] = {}
    try:
        exec(compile(match.group(1), "extending.md", "exec"), namespace)
        assert len(namespace["result"].records) == 500  # type: ignore[attr-defined]
        assert "quadratic-ucb" in POLICIES
    finally:
        POLICIES.pop("quadratic-ucb", None)  # the registry is global: leave it as found


def test_examples_have_a_gallery_title_and_run_briefly() -> None:
    examples = sorted((ROOT / "examples").glob("plot_*.py"))
    assert len(examples) >= 6
    for path in examples:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        assert doc and doc.lstrip().startswith("# "), path.name


def test_citation_license_and_version_agree_with_the_package_metadata() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf"^version: {re.escape(project['version'])}$", citation, re.MULTILINE)
    assert "Variance-Aware Linear UCB with Deep Representation" in citation
    assert project["license"] == "MIT" and "MIT License" in (ROOT / "LICENSE").read_text()
    assert any("Paper" in key for key in project["urls"])
    assert "docs" in project["optional-dependencies"]


@pytest.mark.parametrize(
    "page",
    ["getting-started.md", "guides/own-data.md", "guides/reproducing.md", "guides/live.md"],
)
def test_pages_show_commands_that_exist(page: str) -> None:
    """Every ``deepbandits SUBCOMMAND`` a guide shows is a subcommand of the CLI."""
    from deepbandits.cli.parser import build_parser

    parser = build_parser()
    commands = set(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    text = (DOCS / page).read_text(encoding="utf-8")
    used = set(re.findall(r"^\s*deepbandits ([a-z][a-z-]*)", text, re.MULTILINE))
    assert used and used <= commands


def test_the_readme_ten_lines_run(tmp_path: Path) -> None:
    """The front page's example runs as written (with a shorter horizon)."""
    import subprocess

    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Ten lines") :]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    assert "T=2000" in code
    script = tmp_path / "ten.py"
    script.write_text(code.replace("T=2000", "T=200"), encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.strip()) > 0.0  # the final regret it prints
