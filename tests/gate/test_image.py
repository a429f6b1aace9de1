"""The gate image's supply chain: base image by digest, every wheel by hash."""

from __future__ import annotations

import re

from tests.support import GATE_DIR

REQUIREMENT = re.compile(r"^([A-Za-z0-9_.-]+)==\S+ \\$")


def test_base_image_is_pinned_by_digest() -> None:
    [base] = [line for line in (GATE_DIR / "Dockerfile").read_text().splitlines() if line.startswith("FROM ")]
    assert re.fullmatch(r"FROM [\w./-]+:[\w.-]+@sha256:[0-9a-f]{64}", base), base


def test_every_requirement_carries_hashes_and_pip_requires_them() -> None:
    lines = (GATE_DIR / "requirements.txt").read_text().splitlines()
    pinned = [i for i, line in enumerate(lines) if REQUIREMENT.match(line)]
    assert len(pinned) >= 4
    for index in pinned:
        assert lines[index + 1].strip().startswith("--hash=sha256:"), lines[index]
    assert not [line for line in lines if "==" in line and not REQUIREMENT.match(line)]
    dockerfile = (GATE_DIR / "Dockerfile").read_text()
    assert "pip install --no-cache-dir --require-hashes --only-binary=:all: -r requirements.txt" in dockerfile
