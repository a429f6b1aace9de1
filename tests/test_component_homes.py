"""A rendered path names its code (docs/components.md): every file of rendered/<env>/<c>/
comes from generators/components/<c> with templates/<c>/, or templates/common/ through
generators/k8s/; no component imports another. Checked from the registry, for every
shipped environment: the files on disk under rendered/<env>/ are walked, each is claimed
by the component its folder names (a file of rendered/<env>/installers/ by the component
whose installer_inputs() returns it), and the templates each component opens are recorded."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from generators.components import registry
from generators.components.registry import COMPONENTS
from generators.components.registry import no_inputs as registry_no_inputs
from generators.layout import INSTALLERS, environment_names
from generators.model.load import load
from generators.output import templating
from generators.pipeline import render
from tests.support import ROOT

COMPONENTS_DIR = ROOT / "generators" / "components"
K8S_DIR = ROOT / "generators" / "k8s"
COMMON = "common"


def component_files(name: str) -> list[Path]:
    package = COMPONENTS_DIR / name
    return sorted(package.rglob("*.py")) if package.is_dir() else [COMPONENTS_DIR / f"{name}.py"]


def template_literals(path: Path) -> set[str]:
    """The template names a module passes to render() as string literals."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith(".yaml.j2"):
            found.add(node.value)
    return found


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.name)
def test_the_component_module_is_in_the_folder_its_rendered_path_names(component: object) -> None:
    name = component.name  # type: ignore[attr-defined]
    module = component.generate.__module__  # type: ignore[attr-defined]
    assert module in (f"generators.components.{name}", f"generators.components.{name}.__init__"), module
    assert all(path.exists() for path in component_files(name))


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.name)
def test_no_component_imports_another(component: object) -> None:
    name = component.name  # type: ignore[attr-defined]
    others = {c.name for c in COMPONENTS} - {name}
    for path in component_files(name):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                parts = node.module.split(".")
                if node.module == "generators.components":
                    imported = {alias.name for alias in node.names}
                else:
                    inside = parts[:2] == ["generators", "components"] and len(parts) > 2
                    imported = {parts[2]} if inside else set()
                assert not imported & others, f"{path.relative_to(ROOT)} imports {node.module}"


def test_templates_common_is_rendered_only_through_generators_k8s() -> None:
    for path in sorted((ROOT / "generators").rglob("*.py")):
        named = template_literals(path)
        common = {t for t in named if t.startswith(f"{COMMON}/")}
        if path.is_relative_to(K8S_DIR):
            assert common == named, f"{path.relative_to(ROOT)} renders {sorted(named - common)}"
        else:
            assert not common, f"{path.relative_to(ROOT)} renders {sorted(common)}: use generators/k8s/"
    used = {t for path in K8S_DIR.rglob("*.py") for t in template_literals(path)}
    shipped = {f"{COMMON}/{p.name}" for p in (ROOT / "templates" / COMMON).glob("*.j2")}
    assert shipped == used, f"shared templates nobody renders: {sorted(shipped - used)}"


def home(module: str) -> str:
    """The component folder a module of generators/components/ sits in ('' if outside)."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["generators", "components"] and len(parts) > 2 else ""


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.name)
def test_the_installer_inputs_come_from_the_components_folder_too(component: object) -> None:
    inputs = component.installer_inputs  # type: ignore[attr-defined]
    name = component.name  # type: ignore[attr-defined]
    assert inputs is registry_no_inputs or home(inputs.__module__) == name, inputs.__module__


@pytest.mark.parametrize("env_name", environment_names(ROOT))
def test_every_rendered_file_comes_from_its_folders_templates(
    env_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Walks rendered/<env>/ on disk: each file is claimed by the one registered component its
    folder names (installers/<file>: the component whose installer_inputs() returns <file>),
    and what that component opened while making it is templates/<c>/ or templates/common/."""
    env = load(ROOT, env_name)
    jinja = templating.environment()
    original = jinja.get_template
    opened: dict[str, set[str]] = defaultdict(set)
    current = [""]

    def spy(name: str, *args: object, **kwargs: object) -> object:
        opened[current[0]].add(name)
        return original(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(jinja, "get_template", spy)
    made_by: dict[str, str] = {}  # path under rendered/<env>/ -> the component that makes it
    earlier: list[dict[str, object]] = []
    for component in COMPONENTS:  # as render.render_tree: generate() in registry order, then inputs
        current[0] = component.name
        objects = component.generate(env, earlier)
        for obj in objects:
            assert render.file_path(component.name, obj) not in made_by, obj["metadata"]
            made_by[render.file_path(component.name, obj)] = component.name
        for file in component.installer_inputs(env):
            made_by[f"{INSTALLERS}/{file}"] = component.name
        earlier += objects
        assert opened[component.name] or not objects, "the spy saw no template: the check would be void"
    folder = ROOT / "rendered" / env_name
    on_disk = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert len(on_disk) > len(COMPONENTS), on_disk  # the walk saw the tree
    for path in on_disk:
        assert path in made_by, f"rendered/{env_name}/{path}: no registered component makes it"
        top = path.split("/")[0]
        assert top in (made_by[path], INSTALLERS), f"rendered/{env_name}/{path} is made by {made_by[path]}"
    assert sorted(made_by) == on_disk, "render --check would fail: re-render"
    for name, templates in opened.items():
        strays = {t for t in templates if t.split("/")[0] not in (name, COMMON)}
        assert not strays, f"rendered/{env_name}/{name}/ renders {sorted(strays)}"


def test_the_registry_is_every_module_of_the_folder_by_name_with_argocd_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Adding a component is its module: discover() is run on a scratch package."""
    package = tmp_path / "scratch_components"
    (package / "alpha").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "registry.py").write_text("")  # the registry itself is no component
    (package / "alpha" / "__init__.py").write_text("def generate(env, earlier=()):\n    return []\n")
    (package / "argocd.py").write_text("def generate(env, earlier):\n    return []\n")
    (package / "zeta.py").write_text(
        "def generate(env, earlier=()):\n    return []\n\n\ndef installer_inputs(env):\n    return {}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    found = registry.discover(package, "scratch_components")
    assert [c.name for c in found] == ["alpha", "zeta", "argocd"]
    assert found[0].installer_inputs is registry.no_inputs
    assert found[1].installer_inputs.__module__ == "scratch_components.zeta"
    (package / "helpers.py").write_text("X = 1\n")
    with pytest.raises(ImportError, match=r"^scratch_components/helpers: no generate\(env, earlier\)"):
        registry.discover(package, "scratch_components")


# --- where code lives (docs/components.md): the top level reads as the architecture --------

# The decision in docs/components.md "Where code lives": only these stay at the top.
CROSS_CUTTING = ["__init__.py", "cli.py", "errors.py", "layout.py"]


def test_generators_top_level_holds_only_the_cross_cutting_modules() -> None:
    top = sorted(p.name for p in (ROOT / "generators").glob("*.py"))
    assert top == CROSS_CUTTING, "a module of generators/ belongs in the package named for its role"


def test_every_package_of_generators_has_its_row_in_where_code_lives() -> None:
    """Each package of generators/ is named in the table, and the table names no other."""
    text = (ROOT / "docs" / "components.md").read_text()
    section = text.split("## Where code lives", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `generators/")]
    named = {name for row in rows for name in re.findall(r"`generators/([a-z0-9_]+)/`", row)}
    packages = {p.parent.name for p in (ROOT / "generators").glob("*/__init__.py")}
    assert named == packages, (
        f"missing rows: {sorted(packages - named)}; stale rows: {sorted(named - packages)}"
    )
