"""Where a test goes (docs/testing.md "Where a test goes"), checked over tests/.

A unit test of one module of `generators/<package>/` is `tests/<package>/test_<module>.py`,
so the test tree mirrors the code. What is allowed besides, each with its reason:

- at the top, `tests/test_*.py`: the cross-cutting tests in TOP_LEVEL (each spans the
  whole render, every layer or the whole tree, so no one module is its home), and the mirror
  `test_<m>.py` of a module `generators/<m>.py` at the top of the renderer;
- a folder `tests/<dir>/` is a `generators/` package, a program of the repository (PROGRAMS),
  a component of `generators/components/` (its registry's names), or one of SPECIAL;
- a folder that holds tests is a package (`__init__.py`, as every folder has), so two
  folders can each hold a `test_<module>.py` of the same name;
- every folder but a component's is named in docs/testing.md's section, so the table a
  newcomer reads is the layout the test enforces (a component's folder is named by the
  registry and the table's generic `tests/<component>/` row);
- a test module does not import another test module (rule 4): what tests share is a non-test
  module of their folder or tests/support/ (none is imported today, and a new one fails).

The walk reads the tree only (names, not imports), so a scratch tree shows it failing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

from generators.components.registry import NAMES
from tests.support import ROOT

TOP_LEVEL = {
    "test_adopting_guide.py": "docs/adopting.md, a guide spanning every area (rule 5)",
    "test_bad_input.py": "the bad-input corpus through the CLI: every layer's one-line errors",
    "test_component_homes.py": "every component against the registry and rendered/ on disk",
    "test_component_recipe.py": "docs/components.md's recipe run on a scratch component, every check after",
    "test_golden.py": "every shipped environment's render against the committed rendered/",
    "test_import_graph.py": "the imports of the whole of generators/",
    "test_messages.py": "the first-hour messages of several commands (render, sync-inventory, usage)",
    "test_placement.py": "this rule, over the whole of tests/",
    "test_quota_properties.py": "property tests over random environments, the whole render",
    "test_setup.py": "README's set-up commands against what `make setup` installs",
    "test_test_homes.py": "every module with logic of the tree against where its tests are",
}
PROGRAMS = {"gate": "gate/trainyard_gate", "policies": "policies", "box": "box", "whatif": "whatif"}
SPECIAL = {
    "support": "the support layer every folder imports",
    "oracles": "behavioural oracles, one module per promise, across modules",
    "mutation": "the mutation run and its kept list",
    "corpus": "input files (bad input, sync inventories), no tests",
    "controlplane": "the shared apiserver harness and whole-environment control-plane tests",
    "workflow": "the review workflow end to end: diff, plan and sync-inventory as commands",
}
HINT = 'docs/testing.md "Where a test goes"'


def folder_kinds(root: Path, components: Iterable[str]) -> dict[str, str]:
    """Every name a tests/<dir>/ may have, with what makes it allowed."""
    kinds = {d.name: "package" for d in (root / "generators").iterdir() if (d / "__init__.py").is_file()}
    kinds.update({name: "component" for name in components})
    kinds.update({name: "program" for name, path in PROGRAMS.items() if (root / path).is_dir()})
    kinds.update(dict.fromkeys(SPECIAL, "special"))
    return kinds


def _mirrors_a_top_module(root: Path, name: str) -> bool:
    """tests/test_<m>.py is the mirror of generators/<m>.py, a module at the top of the renderer
    (layout): tests/test_test_homes.py's rule, so both tests agree."""
    return (root / "generators" / name.removeprefix("test_")).is_file()


def misplaced(root: Path, components: Iterable[str]) -> list[str]:
    """One line per file or folder of root/tests that breaks the rule, sorted."""
    tests = root / "tests"
    kinds = folder_kinds(root, components)
    found = [
        f"tests/{path.name}: not a cross-cutting test (TOP_LEVEL in tests/test_placement.py); "
        f"a unit test of generators/<package>/<module>.py is tests/<package>/test_<module>.py ({HINT})"
        for path in sorted(tests.glob("test_*.py"))
        if path.name not in TOP_LEVEL and not _mirrors_a_top_module(root, path.name)
    ]
    for folder in sorted(p for p in tests.iterdir() if p.is_dir() and p.name != "__pycache__"):
        if folder.name not in kinds:
            programs, special = ", ".join(sorted(PROGRAMS)), ", ".join(sorted(SPECIAL))
            found.append(
                f"tests/{folder.name}/: neither a generators/ package, a program ({programs}), "
                f"a component nor a special folder ({special}); {HINT}"
            )
        holders = {p.parent for p in folder.rglob("test_*.py")}
        for holder in sorted(h for h in holders if not (h / "__init__.py").is_file()):
            found.append(
                f"{holder.relative_to(root).as_posix()}/: holds tests but has no __init__.py ({HINT})"
            )
    return found


def _is_test_module(name: str) -> bool:
    return name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")


def _absolute(rel: str, node: ast.ImportFrom) -> str:
    """The module a `from ... import` names, a relative one resolved against the file's own
    package (tests/gate/a.py: `from .b import x` is tests.gate.b, `from . import b` tests.gate)."""
    if node.level == 0:
        return node.module or ""
    package = rel.removesuffix(".py").split("/")[: -node.level]
    return ".".join([*package, *([node.module] if node.module else [])])


def imported_test_modules(root: Path) -> dict[str, list[str]]:
    """Test module imported -> the test files importing it (read with ast, not imported)."""
    found: dict[str, list[str]] = {}
    for path in sorted((root / "tests").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), rel)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and (module := _absolute(rel, node)):
                names = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            for name in filter(_is_test_module, names):
                found.setdefault(name, []).append(rel)
    return found


def test_the_tree_follows_the_rule() -> None:
    assert misplaced(ROOT, NAMES) == []


def test_every_allowed_top_level_test_exists() -> None:
    """The allow-list stays short: a name that left the top leaves the list too."""
    assert sorted(n for n in TOP_LEVEL if not (ROOT / "tests" / n).is_file()) == []


def test_the_docs_name_every_folder() -> None:
    """A component's folder is named by the registry and the generic `tests/<component>/` row,
    so a new component needs no row here (docs/components.md "Adding a component")."""
    text = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    section = text[text.index("## Where a test goes") : text.index("## What a test may expect")]
    named = set(re.findall(r"tests/([a-z0-9_]+)/", section)) | set(re.findall(r"`([a-z0-9_]+)`", section))
    assert "tests/<component>/" in section, "the generic row for the components' folders"
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert sorted(folders - named - set(NAMES)) == []


def test_no_test_module_is_imported_by_another() -> None:
    found = imported_test_modules(ROOT)
    assert found == {}, f"move the helper to a non-test module or tests/support/ ({HINT}, rule 4)"


def test_an_imported_test_module_is_found(tmp_path: Path) -> None:
    root = tmp_path
    (root / "tests" / "output").mkdir(parents=True)
    (root / "tests" / "output" / "test_a.py").write_text(
        "from tests.output.test_b import helper\nfrom tests.output import test_c\nimport tests.support\n"
        "from .test_d import fixture\nfrom . import test_e\nfrom ..support import test_f\nfrom .g import h\n",
        encoding="utf-8",
    )
    assert imported_test_modules(root) == {
        "tests.output.test_b": ["tests/output/test_a.py"],
        "tests.output.test_c": ["tests/output/test_a.py"],
        "tests.output.test_d": ["tests/output/test_a.py"],
        "tests.output.test_e": ["tests/output/test_a.py"],
        "tests.support.test_f": ["tests/output/test_a.py"],
    }


def _tree(tmp_path: Path, files: Iterable[str]) -> Path:
    for rel in files:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")
    return tmp_path


SCRATCH = (
    "generators/output/__init__.py",
    "generators/output/yamlemit.py",
    "generators/components/kueue.py",
    "gate/trainyard_gate/__init__.py",
    "tests/__init__.py",
    "tests/test_golden.py",
    "tests/output/__init__.py",
    "tests/output/test_yamlemit.py",
    "tests/kueue/__init__.py",
    "tests/kueue/test_configuration.py",
    "tests/gate/__init__.py",
    "tests/gate/runtime/__init__.py",
    "tests/gate/runtime/test_nodes.py",
    "tests/support/__init__.py",
    "tests/corpus/bad/empty.yaml",
)


def test_a_placed_scratch_tree_passes(tmp_path: Path) -> None:
    assert misplaced(_tree(tmp_path, SCRATCH), ["kueue"]) == []


def test_misplaced_files_and_folders_are_each_named(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        (
            *SCRATCH,
            "tests/test_yamlemit.py",  # a unit test of output/yamlemit.py left at the top
            "tests/widgets/__init__.py",  # no package, program, component or special folder
            "tests/widgets/test_x.py",
            "tests/output/quoting/test_scalars.py",  # a sub-folder of tests without __init__.py
            "tests/policies/test_rbac.py",  # a program's folder, but the program is not there
        ),
    )
    assert misplaced(root, ["kueue"]) == [
        "tests/test_yamlemit.py: not a cross-cutting test (TOP_LEVEL in tests/test_placement.py); "
        "a unit test of generators/<package>/<module>.py is tests/<package>/test_<module>.py "
        '(docs/testing.md "Where a test goes")',
        'tests/output/quoting/: holds tests but has no __init__.py (docs/testing.md "Where a test goes")',
        "tests/policies/: neither a generators/ package, a program (box, gate, policies, whatif), "
        "a component nor a special folder (controlplane, corpus, mutation, oracles, support, workflow); "
        'docs/testing.md "Where a test goes"',
        'tests/policies/: holds tests but has no __init__.py (docs/testing.md "Where a test goes")',
        "tests/widgets/: neither a generators/ package, a program (box, gate, policies, whatif), "
        "a component nor a special folder (controlplane, corpus, mutation, oracles, support, workflow); "
        'docs/testing.md "Where a test goes"',
    ]
