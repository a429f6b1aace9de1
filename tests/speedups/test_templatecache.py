"""The on-disk cache of compiled templates (generators/speedups/templatecache.py) is only ever
an optimisation: a corrupt or unwritable cache gives the same output as no cache; and it does
not grow with every checkout of the same templates."""

from __future__ import annotations

import shutil
from pathlib import Path

import jinja2
import pytest

from generators import layout
from generators.output import templating
from generators.speedups import templatecache
from tests.support import ROOT

TEMPLATE = "{% for x in items %}- {{ x }}\n{% endfor %}"


def render_with(settings: Path, loader_dir: Path) -> str:
    cache = templatecache.bytecode_cache(settings)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(loader_dir), bytecode_cache=cache)
    return env.get_template("t.j2").render(items=[1, 2])


def entries(cache: Path) -> dict[str, bytes]:
    """Every compiled template in the cache: relative path -> contents."""
    return {p.relative_to(cache).as_posix(): p.read_bytes() for p in sorted(cache.rglob("*.cache"))}


@pytest.fixture
def template_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TRAINYARD_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TRAINYARD_SPEEDUPS", raising=False)
    (tmp_path / "t.j2").write_text(TEMPLATE)
    (tmp_path / "settings.py").write_text("trim_blocks = True\n")
    return tmp_path


def test_second_run_loads_what_the_first_compiled(template_dir: Path) -> None:
    first = render_with(template_dir / "settings.py", template_dir)
    assert len(entries(template_dir / "cache" / "jinja")) == 1
    assert render_with(template_dir / "settings.py", template_dir) == first == "- 1\n- 2\n"


def test_other_settings_get_another_directory(template_dir: Path) -> None:
    render_with(template_dir / "settings.py", template_dir)
    (template_dir / "settings.py").write_text("trim_blocks = False\n")
    render_with(template_dir / "settings.py", template_dir)
    assert len(list((template_dir / "cache" / "jinja").iterdir())) == 2


def test_corrupt_entries_are_compiled_again(template_dir: Path) -> None:
    render_with(template_dir / "settings.py", template_dir)
    for entry in (template_dir / "cache" / "jinja").rglob("*.cache"):
        entry.write_bytes(entry.read_bytes()[:40] + b"\x00garbage")
    assert render_with(template_dir / "settings.py", template_dir) == "- 1\n- 2\n"


def test_uncreatable_cache_directory_is_no_cache(template_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(f"read-only: {self}")

    monkeypatch.setattr(Path, "mkdir", refuse)
    assert render_with(template_dir / "settings.py", template_dir) == "- 1\n- 2\n"
    assert not (template_dir / "cache").exists()


def test_failed_writes_are_ignored(template_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(jinja2.FileSystemBytecodeCache, "dump_bytecode", refuse)
    assert render_with(template_dir / "settings.py", template_dir) == "- 1\n- 2\n"


@pytest.mark.parametrize("configured", [None, "/somewhere/else"])
def test_same_cache_root_as_the_toolchain(configured: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    from tools.toolchain import cache_dir

    if configured is None:
        monkeypatch.delenv("TRAINYARD_CACHE", raising=False)
    else:
        monkeypatch.setenv("TRAINYARD_CACHE", configured)
    assert layout.cache_dir() == cache_dir()


def test_checkouts_share_entries_and_a_changed_source_is_recompiled(template_dir: Path) -> None:
    other = template_dir / "other-checkout"
    other.mkdir()
    (other / "t.j2").write_text("changed {{ items | length }}\n")
    assert render_with(template_dir / "settings.py", template_dir) == "- 1\n- 2\n"
    assert render_with(template_dir / "settings.py", other) == "changed 2"
    assert render_with(template_dir / "settings.py", template_dir) == "- 1\n- 2\n"
    assert len(entries(template_dir / "cache" / "jinja")) == 1


def compile_all(checkout: Path) -> int:
    """Compile every template of a checkout as rendering does; returns how many."""
    env = templating.environment(checkout / "templates")
    names = env.list_templates()
    for name in names:
        env.get_template(name)
    return len(names)


def test_two_checkouts_of_the_same_templates_leave_the_same_entries(template_dir: Path) -> None:
    """Tests copy the project into temporary folders: keyed by file path, each copy added an
    entry per template and the cache grew to 44 MB."""
    checkouts = [template_dir / "checkout-a", template_dir / "checkout-b"]
    for checkout in checkouts:
        shutil.copytree(ROOT / "templates", checkout / "templates")
    cache = template_dir / "cache" / "jinja"
    count = compile_all(checkouts[0])
    first = entries(cache)
    assert count > 30 and len(first) == count
    assert compile_all(checkouts[1]) == count
    assert entries(cache) == first


def test_switched_off_nothing_is_read_or_written(template_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAINYARD_SPEEDUPS", "0")
    assert render_with(template_dir / "settings.py", template_dir) == "- 1\n- 2\n"
    assert not (template_dir / "cache").exists()
    monkeypatch.setenv("TRAINYARD_SPEEDUPS", "templates")
    render_with(template_dir / "settings.py", template_dir)
    assert len(entries(template_dir / "cache" / "jinja")) == 1
