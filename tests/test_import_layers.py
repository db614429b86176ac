"""The import graph of the project's modules: no circles, and nothing imported upward.

Every module of the packages in pyproject.toml's ``[tool.setuptools.package-dir]`` is parsed with
``ast`` (not imported); every ``import`` and ``from ... import`` counts, at module level or inside a
function.  An import of ``a.b`` is an edge to ``a.b`` (and ``from a import b`` to ``a.b`` when ``b``
is a module).  The layers (docs/architecture.md):

* theory imports neither numerics nor validation; execution imports none of theory, numerics,
  validation; numerics does not import validation;
* the command-line modules (``attnphase.options``, ``continuation_options``, ``outputs``, ``job_record``, ``solver_options``,
  ``execution_options``, ``workload``, ``cli``) are imported only by the command modules: the
  ``commands`` package of each layer (``attnphase.numerics.commands``, ``attnphase.validation.commands``, ...).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The console layer: the options every command shares, the output staging, the parsers.
CLI_MODULES = {f"attnphase.{m}" for m in ("cli", "options", "continuation_options", "outputs", "job_record",
                                          "solver_options", "execution_options", "workload")}

#: The layers' packages (theory <- numerics <- validation; execution below numerics and validation).
LAYERS = {"attnphase.theory", "attnphase.numerics", "attnphase.validation", "attnphase.execution"}

#: (importer's package, imported package): imports that go upward.
UPWARD = (
    ("attnphase.theory", "attnphase.numerics"),
    ("attnphase.theory", "attnphase.validation"),
    ("attnphase.execution", "attnphase.theory"),
    ("attnphase.execution", "attnphase.numerics"),
    ("attnphase.execution", "attnphase.validation"),
    ("attnphase.numerics", "attnphase.validation"),
)


def package_dirs(root: Path) -> dict[str, Path]:
    """Package name -> its folder, from pyproject.toml's package-dir table."""
    text = (root / "pyproject.toml").read_text(encoding="utf-8")
    table = text.split("[tool.setuptools.package-dir]", 1)[1].split("\n[", 1)[0]
    return {name: root / folder for name, folder in re.findall(r'^"([\w.]+)"\s*=\s*"([^"]+)"', table, re.M)}


def project_modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of every package (``__init__`` named by its package)."""
    modules: dict[str, Path] = {}
    for package, folder in package_dirs(root).items():
        for path in folder.glob("*.py"):
            modules[package if path.stem == "__init__" else f"{package}.{path.stem}"] = path
    return modules


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules that module ``name`` (at ``path``) imports anywhere in its source."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        out.update(t for t in targets if t in known and t != name)
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = project_modules(root)
    return {name: imported_modules(name, path, set(modules)) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def is_command_module(name: str) -> bool:
    """The modules that parse options and print: the modules of each layer's ``commands`` package
    (``attnphase.<layer>.commands.*``) and the console package ``attnphase`` itself (its own modules, not the
    layers')."""
    return (any(name.startswith(f"{layer}.commands.") for layer in LAYERS)
            or name == "attnphase" or (name.rpartition(".")[0] == "attnphase" and name not in LAYERS))


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(ROOT)


def test_every_layer_is_parsed(graph: dict[str, set[str]]) -> None:
    for module in ("attnphase.cli", "attnphase.theory.kernels", "attnphase.numerics.config",
                   "attnphase.numerics.se.state_evolution", "attnphase.numerics.commands.solve",
                   "attnphase.validation.reference", "attnphase.validation.histogram.jobs", "attnphase.execution.tasks"):
        assert module in graph
    assert "attnphase.numerics.config" in graph["attnphase.numerics.se.state_evolution"]


def test_every_package_folder_is_listed_in_pyproject() -> None:
    """A folder of modules that pyproject.toml does not list would be neither installed nor checked here."""
    listed = {folder.resolve() for folder in package_dirs(ROOT).values()}
    folders = {init.parent.resolve() for folder in listed for init in folder.rglob("__init__.py")}
    assert sorted(map(str, folders - listed)) == []


def test_no_import_circles(graph: dict[str, set[str]]) -> None:
    assert circles(graph) == []


def test_nothing_imports_upward(graph: dict[str, set[str]]) -> None:
    upward = sorted((a, b) for a, targets in graph.items() for b in targets
                    for low, high in UPWARD if _in(a, low) and _in(b, high))
    assert upward == []


def test_only_command_modules_import_the_console_layer(graph: dict[str, set[str]]) -> None:
    offenders = sorted((a, b) for a, targets in graph.items() for b in targets & CLI_MODULES if not is_command_module(a))
    assert offenders == []


def test_a_circle_is_found_wherever_its_imports_are(tmp_path: Path) -> None:
    """The checks above see what they must: a circle closed by a function-level or a relative import,
    and an upward import inside a function."""
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools.package-dir]\n"attnphase.numerics" = "numerics"\n'
                                             '"attnphase.numerics.se" = "numerics/se"\n"attnphase.theory" = "theory"\n\n[x]\n')
    for folder in ("numerics", "numerics/se", "theory"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "numerics/se/a.py").write_text("from attnphase.numerics.se import b\n")
    (tmp_path / "numerics/se/b.py").write_text("def f():\n    from .c import g\n")
    (tmp_path / "numerics/se/c.py").write_text("import attnphase.numerics.config\nfrom attnphase.numerics.se.a import x\n")
    (tmp_path / "numerics/config.py").write_text("")
    (tmp_path / "theory/k.py").write_text("def f():\n    from attnphase.numerics import config\n")
    fake = import_graph(tmp_path)
    assert circles(fake) == [["attnphase.numerics.se.a", "attnphase.numerics.se.b", "attnphase.numerics.se.c"]]
    assert fake["attnphase.theory.k"] == {"attnphase.numerics", "attnphase.numerics.config"}
    (tmp_path / "numerics/se/c.py").write_text("import attnphase.numerics.config\n")
    assert circles(import_graph(tmp_path)) == []
