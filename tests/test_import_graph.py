"""No import cycle inside generators/, box/ or whatif/: the modules form a graph without a loop.

The graph is read from the source with `ast`, never by importing it (an import that works
today only because of the order modules happen to load in is exactly what it must catch).

What counts as an edge from module M to module N (both under generators/):
- every `import N` and `from N import x` in M, wherever it stands: at module level, under
  `if TYPE_CHECKING:` (a name the type checker needs is a dependency; hiding it from the
  interpreter only hides the loop) and inside a function or method. A function-level import
  counts too, by decision: it still needs N whenever M's function runs, and a lazy import
  kept only to dodge a cycle is still a cycle. No exception is granted. The function-level
  imports left (about 50) are lazy for start-up time (the CLI's commands, the registry of
  box scenes) or for a dependency not always installed; none of them closes a loop. Of the
  five cycles this test found when it was written, three ran through one (spec checks ->
  model, box scene registry -> scene, diff report -> immutable);
- `from P import x` where x is a submodule of package P: an edge to P.x; to P itself only
  when some imported name is P's own (defined in its `__init__`);
- importing P.x runs P's `__init__` first, so it is an edge to P too, unless P is a package
  M sits in: those have started before M runs, so only a name read from them is an edge. A
  package whose `__init__` imports something that in turn imports a submodule of the package
  is a cycle (one was model/__init__ -> spec.load -> spec checks -> generators.model.*);
- relative imports are resolved against M's package.

The first test's unit is the module (a package counts as its `__init__.py`). A failure
names every cycle: its strongly connected component's size and its shortest loop through the
lowest-named module, with file:line and where each import stands.

The second test lifts the same edges to packages (generators/<pkg>, and box/ and whatif/ as
wholes) and holds them to LAYERS: a package imports only packages of a lower layer, so no
two packages import each other, however far apart the modules that do it (model and k8s
did, through a quantity module and the types; spec and model, through the checks). An edge
that still goes up is listed in UPWARD with why; the test fails on any other upward edge,
and on a listed one that is gone (so the list only shrinks). A failure names each edge with
the first module and line that makes it.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import ROOT

PACKAGE = "generators"
PACKAGES = (PACKAGE, "box", "whatif")


@dataclass(frozen=True)
class Import:
    target: str  # a module of the tree
    line: int
    where: str  # "module", "type-checking" or "function"


def modules(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under the package."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with where it stands."""

    def walk(node: ast.AST, where: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, where
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from walk(child, "function")
            elif isinstance(child, ast.If) and where == "module" and _is_type_checking(child.test):
                for stmt in child.body:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), "type-checking")
                for stmt in child.orelse:
                    yield from walk(ast.Module(body=[stmt], type_ignores=[]), where)
            else:
                yield from walk(child, where)

    yield from walk(tree, "module")


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def imports(name: str, path: Path, known: Mapping[str, Path]) -> list[Import]:
    """The tree's modules that module `name` (file `path`) imports, with where."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    ancestors = set(_parents(name)[:-1])
    out = []
    for stmt, where in _statements(tree):
        named: list[str] = []  # what the statement reads names from, or imports whole
        if isinstance(stmt, ast.Import):
            named = [alias.name for alias in stmt.names]
        else:
            base = stmt.module or ""
            if stmt.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (stmt.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = [f"{base}.{a.name}" for a in stmt.names if f"{base}.{a.name}" in known]
            named = submodules
            if len(submodules) < len(stmt.names):  # some name is read from base's own code
                named = [base, *submodules]
        for target in named:
            # Importing a.b.c runs a, then a.b, then a.b.c; the packages above `name` itself
            # have started before it runs, so only a name read from them is an edge.
            implied = [p for p in _parents(target)[:-1] if p not in ancestors]
            for module in [*implied, target]:
                if module in known and module != name:
                    out.append(Import(module, stmt.lineno, where))
    return out


def graph(known: Mapping[str, Path]) -> dict[str, dict[str, Import]]:
    """module -> {imported module: first import of it}."""
    out: dict[str, dict[str, Import]] = {}
    for name, path in known.items():
        edges: dict[str, Import] = {}
        for imp in imports(name, path, known):
            edges.setdefault(imp.target, imp)
        out[name] = edges
    return out


def _components(g: Mapping[str, Mapping[str, Import]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
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

    for v in sorted(g):
        if v not in index:
            visit(v)
    return sorted(found)


def _shortest_loop(g: Mapping[str, Mapping[str, Import]], start: str, within: set[str]) -> list[str]:
    """The shortest path start -> ... -> start inside one component (breadth first)."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(g[v]):
                if w not in within:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if w not in previous:
                    previous[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"{start} is in a component but on no loop")


def cycles(g: Mapping[str, Mapping[str, Import]]) -> list[list[str]]:
    """One loop per strongly connected component: its members' shortest loop through the
    lowest-named one. A component is empty of loops only if it has one module."""
    return [_shortest_loop(g, c[0], set(c)) for c in _components(g)]


def describe(g: Mapping[str, Mapping[str, Import]], loop: list[str], known: Mapping[str, Path]) -> str:
    steps = []
    for a, b in itertools.pairwise(loop):
        imp = g[a][b]
        file = known[a].relative_to(ROOT)
        steps.append(f"  {a} -> {b}  ({file}:{imp.line}, {imp.where})")
    return "\n".join(steps)


def test_no_import_cycle_in_generators() -> None:
    # The box and the what-if left generators/ for packages of their own; they import the
    # renderer, so a loop through them would be one through generators/ too.
    known = {name: path for package in PACKAGES for name, path in modules(ROOT, package).items()}
    g = graph(known)
    loops = cycles(g)
    components = _components(g)
    report = "\n\n".join(
        f"cycle {i} ({len(c)} modules in its component):\n{describe(g, loop, known)}"
        for i, (c, loop) in enumerate(zip(components, loops, strict=True), start=1)
    )
    assert not loops, f"{len(loops)} import cycle(s) inside {', '.join(f'{p}/' for p in PACKAGES)}:\n{report}"


# The packages from the bottom up: each imports only packages of the layers below it. Why
# this order: the model reads the spec's loader, the providers' contracts and upstream facts
# and nothing that renders; output turns model values into YAML; k8s renders the shapes
# several components share; components render an environment's objects; the pipeline runs
# them; validation, diff, inventory and the commands read what the pipeline renders; the box
# and the what-if drive all of it from outside.
LAYERS: tuple[tuple[str, ...], ...] = (
    # the leaves: the PromQL vocabulary and reader, errors, paths
    ("generators", "generators.errors", "generators.layout", "generators.promql"),
    ("generators.upstream",),  # pinned facts of Kubernetes (its RBAC rule shape too), charts, job kinds
    ("generators.speedups",),  # caches keyed by files: they read no renderer
    ("generators.providers",),  # what each virtual-kubelet program states
    ("generators.spec",),  # the environment file: positions, schema, defaults
    ("generators.model",),  # the typed model, its checks, quantities, PromQL vocabulary
    ("generators.output",),  # YAML and templates
    ("generators.k8s",),  # shapes more than one component renders
    ("generators.gitops",),
    ("generators.components",),
    ("generators.pipeline",),
    ("generators.validation",),
    ("generators.inventory", "generators.diff"),
    ("generators.doctor",),  # the live cluster against the model and the render
    ("generators.commands",),
    ("generators.cli",),
    ("box",),
    ("whatif",),
)


# Edges that still go up, each with the import that makes it; none may be added. Empty: the
# providers' RBAC rules are written in generators/upstream/rbac.py's shape (Kubernetes' PolicyRule, below the
# providers), not in
# k8s/rbac's (the model reads the providers, so providers -> k8s closed a loop).
UPWARD: dict[tuple[str, str], str] = {}


def package_of(module: str, split: str = PACKAGE) -> str:
    """split.<pkg> for a module under `split` (the renderer); any other top-level package
    (box, whatif) is one package."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == split else parts[0]


def package_graph(
    g: Mapping[str, Mapping[str, Import]], split: str = PACKAGE
) -> dict[str, dict[str, tuple[str, Import]]]:
    """package -> {imported package: (the first importing module, its import)}."""
    out: dict[str, dict[str, tuple[str, Import]]] = {}
    for module in sorted(g):
        source = package_of(module, split)
        edges = out.setdefault(source, {})
        for target, imp in sorted(g[module].items()):
            if package_of(target, split) != source:
                edges.setdefault(package_of(target, split), (module, imp))
    return out


def upward(
    pg: Mapping[str, Mapping[str, tuple[str, Import]]], layers: tuple[tuple[str, ...], ...]
) -> list[str]:
    """Every edge of the package graph that does not go to a lower layer (and every package
    the layers do not place), one line each."""
    layer = {name: i for i, names in enumerate(layers) for name in names}
    out = []
    for source, edges in sorted(pg.items()):
        if source not in layer:
            out.append(f"{source}: in no layer")
            continue
        for target, (module, imp) in sorted(edges.items()):
            if target not in layer:
                out.append(f"{target}: in no layer")
            elif layer[target] >= layer[source]:
                out.append(f"{source} -> {target}  ({module} line {imp.line}, {imp.where})")
    return out


def test_packages_import_only_lower_layers() -> None:
    known = {name: path for package in PACKAGES for name, path in modules(ROOT, package).items()}
    pg = package_graph(graph(known))
    found = upward(pg, LAYERS)
    listed = {f"{a} -> {b}" for a, b in UPWARD}
    new = [line for line in found if line.split("  (")[0] not in listed]
    gone = sorted(listed - {line.split("  (")[0] for line in found})
    assert not new, "package edges against LAYERS (import only from a lower layer):\n" + "\n".join(new)
    assert not gone, "listed in UPWARD but no longer imported (delete the entry):\n" + "\n".join(gone)


# --- the walker is tried on small trees, so it is known to find what it must ------------


def _tree(tmp_path: Path, files: Mapping[str, str]) -> dict[str, dict[str, Import]]:
    """The files under tmp_path; every folder is a regular package: an empty __init__.py is
    written where `files` gives none (as in generators/, where every folder has one)."""
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in (tmp_path / "pkg", *(tmp_path / "pkg").rglob("*/")):
        (folder / "__init__.py").touch()
    return graph(modules(tmp_path, "pkg"))


@pytest.mark.parametrize(
    ("files", "loop"),
    [
        pytest.param(
            {"pkg/a.py": "import pkg.b\n", "pkg/b.py": "from pkg import a\n"},
            ["pkg.a", "pkg.b", "pkg.a"],
            id="module-level, from-package-import-submodule",
        ),
        pytest.param(
            {
                "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n",
                "pkg/b.py": "from pkg.a import A\n",
            },
            ["pkg.a", "pkg.b", "pkg.a"],
            id="type-checking",
        ),
        pytest.param(
            {
                "pkg/a.py": "def f():\n    from . import b\n",
                "pkg/b.py": "from .a import x\n",
            },
            ["pkg.a", "pkg.b", "pkg.a"],
            id="function-level, relative",
        ),
        pytest.param(
            {
                "pkg/m/__init__.py": "from pkg.s.load import load\n",
                "pkg/m/rules.py": "",
                "pkg/s/load.py": "from pkg.m.rules import r\n",
            },
            ["pkg.m", "pkg.s.load", "pkg.m"],
            id="a package init reached through its own submodule",
        ),
    ],
)
def test_walker_finds_a_cycle(tmp_path: Path, files: dict[str, str], loop: list[str]) -> None:
    assert cycles(_tree(tmp_path, files)) == [loop]


def test_walker_accepts_a_layered_tree(tmp_path: Path) -> None:
    g = _tree(
        tmp_path,
        {
            "pkg/m/rules.py": "import json\n",
            "pkg/m/load.py": "from pkg.s.load import load\n",
            "pkg/s/load.py": "from pkg.m.rules import r\nfrom ..m import rules\n",
        },
    )
    assert cycles(g) == []
    # pkg has started before pkg.s.load runs: no edge; pkg.m (its __init__) runs first: one
    assert set(g["pkg.s.load"]) == {"pkg.m", "pkg.m.rules"}


def test_package_layers_refuse_an_edge_up_and_a_loop(tmp_path: Path) -> None:
    g = _tree(
        tmp_path,
        {
            "pkg/low/a.py": "import json\n",
            "pkg/high/b.py": "from pkg.low.a import x\n",
            "pkg/low/c.py": "from pkg.high import b\n",  # modules without a loop, packages with one
        },
    )
    assert cycles(g) == []
    pg = package_graph(g, "pkg")
    assert set(pg["pkg.high"]) == {"pkg.low"}
    assert upward(pg, (("pkg",), ("pkg.low",), ("pkg.high",))) == [
        "pkg.low -> pkg.high  (pkg.low.c line 1, module)"
    ]
    assert upward(pg, (("pkg",), ("pkg.high",), ("pkg.low",))) == [
        "pkg.high -> pkg.low  (pkg.high.b line 1, module)"
    ]
