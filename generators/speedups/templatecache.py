"""Compiled templates cached on disk, as __pycache__ caches Python modules (layer `templates`).

Compiling the 64 templates costs ~570 M instructions (~0.1 s of CPU) per process: without it,
`validate` of the shipped environments does 16 % more (docs/performance.md, "Speed-ups").
Jinja's FileSystemBytecodeCache checks a hash of each entry's source (and the Python version)
before use; what it does not key on is the Environment's settings (trim_blocks, finalize ...),
which change the compiled code: the directory name therefore hashes Jinja's version and the
source of generators/output/templating.py, where those settings live. Entries are keyed by
template name, not file path: every checkout (tests copy the project to temporary folders)
would otherwise add entries forever (the cache grew to 44 MB); a checkout with other template
text recompiles on the checksum mismatch. The cache is an optimisation only: any failure to
read or write it is ignored, and the template is compiled as before. The switch is read on
every load and dump, so it holds for an Environment made before it changed.
"""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket

from generators import speedups
from generators.layout import cache_dir


class CompiledTemplates(jinja2.FileSystemBytecodeCache):
    def __init__(self, settings_key: str) -> None:
        super().__init__(directory="", pattern="%s.cache")
        self.settings_key = settings_key

    def _get_cache_filename(self, bucket: Bucket) -> str:
        return str(cache_dir() / "jinja" / self.settings_key / (self.pattern % bucket.key))

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        """By template name only (see the module's docstring)."""
        return super().get_cache_key(name)

    def load_bytecode(self, bucket: Bucket) -> None:
        if not speedups.on("templates"):
            return
        try:
            super().load_bytecode(bucket)
        except Exception:  # unreadable or corrupt (pickle, marshal, I/O errors alike): compile
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        if not speedups.on("templates"):
            return
        with contextlib.suppress(OSError):  # read-only home, full disk: compiled again next time
            Path(self._get_cache_filename(bucket)).parent.mkdir(parents=True, exist_ok=True)
            super().dump_bytecode(bucket)


def bytecode_cache(settings_source: Path) -> CompiledTemplates:
    """A cache of templates compiled with the settings in `settings_source`."""
    key = hashlib.sha256(jinja2.__version__.encode() + settings_source.read_bytes()).hexdigest()[:16]
    return CompiledTemplates(key)
