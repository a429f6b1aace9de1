"""Compiled templates cached on disk, as __pycache__ caches Python modules.

Compiling the 37 templates costs ~0.2 s per process, nearly half of rendering one
environment (docs/performance.md). Jinja's FileSystemBytecodeCache keys each entry by the
template's path and checks a hash of its source (and the Python version) before use; what
it does not key on is the Environment's settings (trim_blocks, finalize ...), which change
the compiled code: the directory name therefore hashes Jinja's version and the source of
generators/templating.py, where those settings live. The cache is an optimisation only:
any failure to read or write it is ignored, and the template is compiled as before.
"""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket

from generators.layout import cache_dir


class _QuietCache(jinja2.FileSystemBytecodeCache):
    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        """By template name only, not its file's path: every checkout (tests copy the project
        to temporary folders) would otherwise add entries forever. Correct either way: Jinja
        compares the entry's source checksum before using it, and recompiles on a mismatch."""
        return super().get_cache_key(name)

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # unreadable or corrupt (pickle, marshal, I/O errors alike): compile
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):  # read-only home, full disk: compiled again next time
            super().dump_bytecode(bucket)


def bytecode_cache(settings_source: Path) -> jinja2.BytecodeCache | None:
    """A cache directory for templates compiled with the settings in `settings_source`."""
    key = hashlib.sha256(jinja2.__version__.encode() + settings_source.read_bytes()).hexdigest()[:16]
    directory = cache_dir() / "jinja" / key
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return _QuietCache(str(directory))
