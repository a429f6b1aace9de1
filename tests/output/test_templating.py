"""generators/output/templating.py: values enter a template only as data. Every interpolation
ends in `| y`, which writes a YAML flow value (a string always double-quoted, so YAML structure
inside it stays text); a bare one, an undefined name, a value that is not data and an unsafe
attribute are refused. Each case renders a template written here, in a scratch folder."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
import yaml

from generators.output.templating import environment, to_flow


def rendered(folder: Path, template: str, **values: object) -> str:
    (folder / "t.yaml.j2").write_text(template, encoding="utf-8")
    return environment(folder).get_template("t.yaml.j2").render(**values)  # one per folder


def test_a_string_with_yaml_structure_stays_one_string(tmp_path: Path) -> None:
    text = rendered(tmp_path, "a: {{ v | y }}\n", v="x: [1]\n# not a comment")
    assert text == 'a: "x: [1]\\n# not a comment"\n'
    assert yaml.safe_load(text) == {"a": "x: [1]\n# not a comment"}


def test_collections_and_scalars_are_written_as_flow_yaml(tmp_path: Path) -> None:
    text = rendered(tmp_path, "a: {{ v | y }}\n", v={"k": [1, "yes", None, 2.5, True]})
    assert text == 'a: {"k": [1, "yes", null, 2.5, true]}\n'


def test_an_interpolation_without_the_filter_is_refused(tmp_path: Path) -> None:
    with pytest.raises(jinja2.TemplateError, match=r"^every interpolation must end in '\| y' \(got 'x'\)$"):
        rendered(tmp_path, "a: {{ v }}\n", v="x")


@pytest.mark.parametrize(
    ("template", "values"),
    [
        ("a: {{ v | y }}\n", {}),  # an undefined name
        ("a: {{ v.__class__ | y }}\n", {"v": "x"}),  # the sandbox hides unsafe attributes
    ],
    ids=["undefined", "unsafe-attribute"],
)
def test_what_is_not_data_is_refused(tmp_path: Path, template: str, values: dict[str, object]) -> None:
    with pytest.raises(TypeError, match=r"^template value of type StrictUndefined is not data$"):
        rendered(tmp_path, template, **values)


def test_an_object_that_is_not_data_is_refused() -> None:
    with pytest.raises(TypeError, match=r"^template value of type object is not data$"):
        to_flow(object())
