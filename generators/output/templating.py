"""Jinja2 templates give each object its YAML shape; values enter only as data.

Every `{{ ... }}` must end in the `y` filter, which turns a Python value into a YAML flow
scalar or collection (a quoted string stays a string, whatever it contains). A finalizer
refuses anything else, so text from an environment file can never be spliced into YAML
structure or evaluated as template code. The rendered text is parsed back into objects
once; the emitter, not the template, decides the final bytes.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment

from generators import speedups
from generators.output.yamlemit import double_quoted, plain_scalar
from generators.speedups import templatecache, templateshapes

TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "templates"


class Flow(str):
    """A fragment produced by the `y` filter: safe to place in YAML."""


def to_flow(value: Any) -> Flow:
    return Flow(_flow(value))


def _flow(value: Any) -> str:
    if isinstance(value, str):
        return double_quoted(value)  # always quoted: a template's string stays a string
    if isinstance(value, dict):
        return "{" + ", ".join(f"{double_quoted(str(k))}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    text = plain_scalar(value)
    if text is None:
        raise TypeError(f"template value of type {type(value).__name__} is not data")
    return text


def _finalize(value: Any) -> Any:
    if isinstance(value, Flow):
        return value
    raise jinja2.TemplateError(f"every interpolation must end in '| y' (got {value!r})")


@cache
def environment(directory: Path = TEMPLATE_DIR) -> ImmutableSandboxedEnvironment:
    """The templates in `directory` (another checkout's, in tests), with our settings."""
    env = ImmutableSandboxedEnvironment(
        loader=jinja2.FileSystemLoader(directory),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_finalize,
        auto_reload=False,  # templates do not change while we render: no stat() per render
        bytecode_cache=templatecache.bytecode_cache(Path(__file__)),
    )
    env.filters["y"] = _y
    return env


@jinja2.pass_context  # never folded into a compiled template: a token belongs to one render
def _y(_context: Any, value: Any) -> Flow:
    token = templateshapes.token(value)
    return Flow(token) if token is not None else to_flow(value)


def render(template: str, **context: Any) -> dict[str, Any]:
    """Render templates/<template> with `context` and parse the YAML back into an object:
    every template renders one mapping (a Kubernetes object or an installer's values)."""
    obj = _parsed(template, context)
    if not isinstance(obj, dict):
        raise TypeError(f"template {template} rendered {type(obj).__name__}, not a mapping")
    return obj


def _parsed(name: str, context: dict[str, Any]) -> Any:
    """Through the template's parsed shape (speedups.templateshapes) when possible, else by
    parsing the classic text, whose errors are the ones a template author should see."""
    template = environment().get_template(name)  # compiled outside any recording
    if speedups.on("shapes"):
        try:
            with templateshapes.recording() as values:
                text = template.render(**context)
            return templateshapes.fill(text, values)
        except (templateshapes.NoShape, TypeError, IndexError):
            templateshapes.misses[name] += 1
    return yaml.load(template.render(**context), Loader=yaml.CSafeLoader)
