"""A module's tests are found by its path (docs/testing.md "Where a test goes", rule 1).

Every module with logic under generators/, box/, whatif/ and gate/trainyard_gate/ has its
tests at its mirror in tests/, or a row of docs/testing.md's table "Modules tested elsewhere"
names it, with where its tests are and why they are not at the mirror.

- **Logic**: the module defines a function or a method. A module of constants, type aliases,
  dataclass fields or re-exports only has nothing to call, so nothing of its own to test.
- **Its mirror** (`mirrors()`): `generators/<package>/<module>.py` ->
  `tests/<package>/test_<module>.py`; a component's code (`generators/components/<c>.py`, or
  anything under `generators/components/<c>/`) -> `tests/<c>/` (`<c>.py` and a package's
  `__init__.py` are `test_<c>.py`); `box/`, `whatif/` -> `tests/box/`, `tests/whatif/`, and a
  scene `box/scenes/<s>.py` may also be `tests/box/test_scene_<s>.py` (rule 3: one module per
  scene); `gate/trainyard_gate/<p>/<m>.py` -> `tests/gate/<p>/test_<m>.py`. A package's own
  `__init__.py` is `test_<package>.py` in the package's folder or beside it
  (`tests/speedups/test_speedups.py`, `tests/monitoring/test_dashboards.py`). A module whose
  tests need a real server may have only `test_<module>_live.py` or
  `test_<module>_controlplane.py` there (rule 3).
- **The table** may only name modules that need it: a row for a module that has its mirror
  now, that has no logic, or that is gone fails, and every row points at tests that exist.

The walk reads the tree (names and syntax, nothing imported), so a scratch tree shows it
failing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

from generators.components.registry import NAMES
from tests.support import ROOT

CODE = ("generators", "box", "whatif", "gate/trainyard_gate")
SECTION = "### Modules tested elsewhere"
HINT = 'docs/testing.md "Modules tested elsewhere"'
REAL_SERVER_SUFFIXES = (".py", "_live.py", "_controlplane.py")


def has_logic(path: Path) -> bool:
    """The module defines a function or a method (module docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) for node in ast.walk(tree))


def modules_with_logic(root: Path) -> list[str]:
    found = []
    for top in CODE:
        for path in sorted((root / top).rglob("*.py")):
            if "__pycache__" not in path.parts and has_logic(path):
                found.append(path.relative_to(root).as_posix())
    return found


def mirrors(module: str, components: Iterable[str]) -> list[str]:
    """Where a module's tests may be, by its path alone (module docstring)."""
    parts = module.removesuffix(".py").split("/")
    component = parts[:2] == ["generators", "components"] and len(parts) > 2 and parts[2] in set(components)
    if component:
        parts = parts[2:]  # a component's tests are tests/<c>/
    elif parts[0] == "generators":
        parts = parts[1:]
    elif parts[:2] == ["gate", "trainyard_gate"]:
        parts = ["gate", *parts[2:]]
    if parts[-1] == "__init__":
        package = parts[:-1]
        homes = [package, package[:-1]] if len(package) > 1 else [package]
        return [f"tests/{'/'.join([*home, f'test_{package[-1]}.py'])}" for home in homes]
    folder, name = parts[:-1], parts[-1]
    if component and not folder:
        return [f"tests/{name}/test_{name}.py"]  # a one-module component: its folder's own module
    found = [f"tests/{'/'.join([*folder, f'test_{name}.py'])}"]
    if folder == ["box", "scenes"]:
        found.append(f"tests/box/test_scene_{name}.py")
    return found


def at_mirror(root: Path, module: str, components: Iterable[str]) -> bool:
    """A test module at a mirror, or its real-server sibling (rule 3: `test_<m>_live.py`
    against the pinned Prometheus, `test_<m>_controlplane.py` against the apiserver)."""
    return any(
        (root / mirror.replace(".py", suffix)).is_file()
        for mirror in mirrors(module, components)
        for suffix in REAL_SERVER_SUFFIXES
    )


def table(root: Path) -> list[tuple[list[str], list[str]]]:
    """The rows of the docs table: (modules named, test paths named)."""
    text = (root / "docs" / "testing.md").read_text(encoding="utf-8")
    assert SECTION in text, f"docs/testing.md has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n#", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = line.split("|")
        if len(cells) < 4 or not cells[1].strip().startswith("`"):
            continue
        modules = re.findall(r"`([^`]+\.py)`", cells[1])
        tests = [t.split("::")[0] for t in re.findall(r"`(tests/[^`]+)`", cells[2])]
        rows.append((modules, tests))
    return rows


def homeless(root: Path, components: Iterable[str]) -> list[str]:
    """One line per module with logic whose tests are neither at its mirror nor in the table."""
    listed = {module for modules, _ in table(root) for module in modules}
    return [
        f"{module}: no {' or '.join(mirrors(module, components))}, and no row in {HINT}"
        for module in modules_with_logic(root)
        if module not in listed and not at_mirror(root, module, components)
    ]


def stale_rows(root: Path, components: Iterable[str]) -> list[str]:
    """One line per table row that names a module not needing it, or tests that are not there."""
    needing = {m for m in modules_with_logic(root) if not at_mirror(root, m, components)}
    found = []
    for modules, tests in table(root):
        found += [
            f"{m}: has its mirror, no logic, or is gone; drop it from {HINT}"
            for m in modules
            if m not in needing
        ]
        if not tests:
            found.append(f"{', '.join(modules)}: the row names no tests/ path ({HINT})")
        found += [
            f"{', '.join(modules)}: {t} does not exist ({HINT})" for t in tests if not (root / t).exists()
        ]
    return found


def test_every_module_with_logic_has_its_tests_at_its_mirror_or_in_the_table() -> None:
    assert homeless(ROOT, NAMES) == []


def test_every_row_of_the_table_is_needed_and_points_at_tests() -> None:
    assert stale_rows(ROOT, NAMES) == []


def test_the_walk_sees_the_tree() -> None:
    """Guards the two checks above against a walk that finds nothing (a moved folder)."""
    modules = modules_with_logic(ROOT)
    assert "generators/model/quota.py" in modules and "gate/trainyard_gate/overflow/hysteresis.py" in modules
    assert "generators/__init__.py" not in modules  # a docstring only
    assert len(table(ROOT)) > 10


def test_mirrors_follow_the_rule() -> None:
    components = ["kueue", "monitoring"]
    assert mirrors("generators/output/yamlemit.py", components) == ["tests/output/test_yamlemit.py"]
    assert mirrors("generators/speedups/__init__.py", components) == ["tests/speedups/test_speedups.py"]
    assert mirrors("generators/components/kueue.py", components) == ["tests/kueue/test_kueue.py"]
    assert mirrors("generators/components/registry.py", components) == ["tests/components/test_registry.py"]
    assert mirrors("generators/components/monitoring/adapter.py", components) == [
        "tests/monitoring/test_adapter.py"
    ]
    assert mirrors("generators/components/monitoring/dashboards/__init__.py", components) == [
        "tests/monitoring/dashboards/test_dashboards.py",
        "tests/monitoring/test_dashboards.py",
    ]
    assert mirrors("generators/components/monitoring/alerts/gpu.py", components) == [
        "tests/monitoring/alerts/test_gpu.py"
    ]
    assert mirrors("box/scenes/bad_node.py", components) == [
        "tests/box/scenes/test_bad_node.py",
        "tests/box/test_scene_bad_node.py",
    ]
    assert mirrors("whatif/replay.py", components) == ["tests/whatif/test_replay.py"]
    assert mirrors("gate/trainyard_gate/runtime/timer.py", components) == ["tests/gate/runtime/test_timer.py"]
    assert mirrors("gate/trainyard_gate/main.py", components) == ["tests/gate/test_main.py"]
    assert mirrors("generators/cli.py", components) == ["tests/test_cli.py"]


DOCS = """\
# Testing

{SECTION}

| module | its tests | why not at the mirror |
|---|---|---|
{rows}
## What a test may expect
"""


def _scratch(root: Path, files: dict[str, str], rows: str) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "testing.md").write_text(DOCS.format(SECTION=SECTION, rows=rows), encoding="utf-8")
    for top in CODE:
        (root / top).mkdir(parents=True, exist_ok=True)
    return root


LOGIC = "def f() -> int:\n    return 1\n"
SCRATCH = {
    "generators/__init__.py": '"""A docstring only."""\n',
    "generators/output/__init__.py": "from generators.output.yamlemit import f\n",  # a re-export
    "generators/output/yamlemit.py": LOGIC,
    "generators/output/kinds.py": "KINDS = ('a',)\n\n\nclass Shape:\n    name: str\n",  # no logic
    "generators/model/quota.py": LOGIC,
    "gate/trainyard_gate/runtime/timer.py": "class Timer:\n    def left(self) -> int:\n        return 0\n",
    "generators/doctor/cluster.py": LOGIC,
    "tests/output/test_yamlemit.py": "",
    "tests/doctor/test_cluster_controlplane.py": "",  # only a real-server test: still its mirror
    "tests/oracles/test_kueue_quotas.py": "",
}


def test_a_scratch_tree_with_a_home_for_each_module_passes(tmp_path: Path) -> None:
    row = (
        "| `generators/model/quota.py`, `gate/trainyard_gate/runtime/timer.py` "
        "| `tests/oracles/test_kueue_quotas.py::test_x` | an oracle |\n"
    )
    root = _scratch(tmp_path, SCRATCH, row)
    assert modules_with_logic(root) == [
        "generators/doctor/cluster.py",
        "generators/model/quota.py",
        "generators/output/yamlemit.py",
        "gate/trainyard_gate/runtime/timer.py",
    ]
    assert homeless(root, []) == []
    assert stale_rows(root, []) == []


def test_a_module_without_a_home_and_stale_rows_are_each_named(tmp_path: Path) -> None:
    rows = (
        "| `generators/output/yamlemit.py` | `tests/output/test_yamlemit.py` | has its mirror |\n"
        "| `generators/output/kinds.py` | `tests/oracles/test_kueue_quotas.py` | no logic |\n"
        "| `gate/trainyard_gate/runtime/timer.py` | `tests/gate/test_timer_elsewhere.py` | gone |\n"
        "| `generators/model/gone.py` | nothing | no path |\n"
    )
    root = _scratch(tmp_path, SCRATCH, rows)
    assert homeless(root, []) == [
        f"generators/model/quota.py: no tests/model/test_quota.py, and no row in {HINT}",
    ]
    assert stale_rows(root, []) == [
        f"generators/output/yamlemit.py: has its mirror, no logic, or is gone; drop it from {HINT}",
        f"generators/output/kinds.py: has its mirror, no logic, or is gone; drop it from {HINT}",
        f"gate/trainyard_gate/runtime/timer.py: tests/gate/test_timer_elsewhere.py does not exist ({HINT})",
        f"generators/model/gone.py: has its mirror, no logic, or is gone; drop it from {HINT}",
        f"generators/model/gone.py: the row names no tests/ path ({HINT})",
    ]
