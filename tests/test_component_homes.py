"""A rendered path names its code (docs/components.md): every file of rendered/<env>/<c>/
comes from generators/components/<c> with templates/<c>/, or templates/common/ through
generators/k8s/; no component imports another. Checked from the registry, for every
shipped environment, by recording the templates each component's generate() opens."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from generators import templating
from generators.components.registry import COMPONENTS
from generators.layout import environment_names
from generators.model.load import load
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


@pytest.mark.parametrize("env_name", environment_names(ROOT))
def test_every_rendered_file_comes_from_its_folders_templates(
    env_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = load(ROOT, env_name)
    jinja = templating.environment()
    original = jinja.get_template
    opened: dict[str, set[str]] = defaultdict(set)
    current = [""]

    def spy(name: str, *args: object, **kwargs: object) -> object:
        opened[current[0]].add(name)
        return original(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(jinja, "get_template", spy)
    earlier: list[dict[str, object]] = []
    for component in COMPONENTS:  # as render.render_tree, which files them under <name>/
        current[0] = component.name
        objects = component.generate(env, earlier)
        component.installer_inputs(env)
        earlier += objects
        assert opened[component.name] or not objects, "the spy saw no template: the check would be void"
    for name, templates in opened.items():
        strays = {t for t in templates if t.split("/")[0] not in (name, COMMON)}
        assert not strays, f"rendered/{env_name}/{name}/ renders {sorted(strays)}"
