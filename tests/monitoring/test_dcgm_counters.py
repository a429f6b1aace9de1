"""The counters CSV's guard (generators/components/monitoring/dcgm_counters.py `check`) against
the reader it protects: Go's encoding/csv as dcgm-exporter reads the file
(tests/monitoring/dcgmcsv, `-records` prints each record as dcgm-exporter holds it).

The promise: what the guard accepts, dcgm-exporter reads back as exactly the field, type and
help text written; what it refuses, the reader would refuse or change. The texts are typed
here, each the kind a person adding a counter writes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from generators.components.monitoring.dcgm_counters import check

ACCEPTED = [
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
    ("DCGM_FI_X", "Colons: semicolons; and 'single quotes'"),
    ("DCGM_FI_X", "Temperature (in °C); # is not a comment here"),
    ("DCGM_FI_X", "Inner  double  spaces and a\ttab"),
]
# (field, help, why the reader would not give it back)
BROKEN = [
    ("DCGM_FI_X", "NVLink bandwidth counter, all lanes.", "a comma: four fields"),
    ("DCGM_FI_X", 'The "real" utilization', "a bare quote: a parse error"),
    ("DCGM_FI_X", '"Quoted" help', "a leading quote opens a quoted field"),
    ("DCGM_FI_X", "First line\nsecond line", "a line break: the record ends"),
    ("DCGM_FI_X", "Windows\r\nline end", "a CRLF: the record ends"),
    ("DCGM_FI_X", " Leading blank", "trimmed: another text"),
    ("DCGM_FI_X", "Trailing blank ", "trimmed: another text"),
    ("DCGM_FI_A,B", "Help.", "a comma in the field: four fields"),
    ('DCGM_FI_"Q"', "Help.", "a quote in the field: a parse error"),
    (" DCGM_FI_X", "Help.", "trimmed: another field"),
]


def read_back(reader: Path, tmp_path: Path, field: str, help_text: str) -> list[str] | None:
    """The one record dcgm-exporter holds for the line `field, gauge, help`; None when it
    refuses the file or holds anything else than one record."""
    path = tmp_path / "dcgm-metrics.csv"
    path.write_bytes(f"# header\n{field}, gauge, {help_text}\n".encode())
    done = subprocess.run([str(reader), "-records", str(path)], capture_output=True, text=True, check=False)
    lines = done.stdout.splitlines()
    if done.returncode != 0 or lines[-1:] != ["1 counters"]:
        return None
    record: list[str] = json.loads(lines[0])
    return record


@pytest.mark.parametrize(("field", "help_text"), ACCEPTED)
def test_what_the_guard_accepts_is_read_back_exactly(
    reader: Path, tmp_path: Path, field: str, help_text: str
) -> None:
    check(((field, "gauge", help_text),))
    assert read_back(reader, tmp_path, field, help_text) == [field, "gauge", help_text]


@pytest.mark.parametrize(
    ("field", "help_text", "why"),
    BROKEN,
    ids=[f"{i}-{why.split(':')[0].replace(' ', '-')}" for i, (_, _, why) in enumerate(BROKEN)],
)
def test_what_the_reader_would_break_the_guard_refuses(
    reader: Path, tmp_path: Path, field: str, help_text: str, why: str
) -> None:
    assert read_back(reader, tmp_path, field, help_text) != [field, "gauge", help_text], why
    with pytest.raises(ValueError, match="would break dcgm-exporter's CSV"):
        check(((field, "gauge", help_text),))


def test_an_empty_help_text_is_refused() -> None:
    with pytest.raises(ValueError, match=r"help text of DCGM_FI_X \(''\)"):
        check((("DCGM_FI_X", "gauge", ""),))


def test_a_field_read_as_a_comment_is_refused(reader: Path, tmp_path: Path) -> None:
    assert read_back(reader, tmp_path, "#DCGM_FI_X", "Help.") is None  # the reader skips it
    with pytest.raises(ValueError):
        check((("#DCGM_FI_X", "gauge", "Help."),))
