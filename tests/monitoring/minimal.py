"""The minimal environment (tests/corpus/valid-minimal.yaml) with a section appended, as the
only environment `bad` of a scratch repository: what the monitoring tests of bad and odd
monitoring sections start from."""

from __future__ import annotations

from pathlib import Path

from tests.support import CORPUS
from tests.support.scratch import refused, repo_with

MINIMAL = (CORPUS / "valid-minimal.yaml").read_text()


def with_section(tmp_path: Path, section: str) -> Path:
    """A scratch repository whose environment `bad` is the minimal one plus `section`."""
    return repo_with(tmp_path, MINIMAL + section)


def first_refusal(tmp_path: Path, section: str) -> tuple[int, str]:
    """(the line of environments/bad.yaml where `section` starts, the first error line of
    `render bad`, which must refuse)."""
    return MINIMAL.count("\n") + 1, refused(with_section(tmp_path, section), "render", "bad")[0]
