"""Every rendered dcgm-exporter counters CSV parses the way dcgm-exporter parses it.

dcgm-exporter reads the file with Go's encoding/csv and exits on an error, so one comma in
a help text (it once read "NVLink bandwidth counter, all lanes.") empties every DCGM panel
and silences every DCGM alert. The check runs Go's own encoding/csv (tests/monitoring/dcgmcsv,
a copy of dcgm-exporter's reading code) over the CSV of every shipped environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from generators.components.monitoring import dcgm_counters
from tests.conftest import ROOT

READER = Path(__file__).parent / "dcgmcsv" / "main.go"


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go")
    assert go, "Go is needed to build the dcgm-exporter CSV reader (it builds the pinned tools too)"
    binary = tmp_path_factory.mktemp("dcgmcsv") / "dcgmcsv"
    subprocess.run([go, "build", "-o", str(binary), str(READER)], check=True, capture_output=True,
                   env={**os.environ, "GO111MODULE": "off"})  # fmt: skip
    return binary


def read(reader: Path, text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "dcgm-metrics.csv"
    path.write_text(text, encoding="utf-8")
    return subprocess.run([str(reader), str(path)], capture_output=True, text=True, check=False)


def rendered_csvs() -> list[Path]:
    return sorted(ROOT.glob("rendered/*/monitoring/*/configmap-*dcgm*.yaml"))


def test_every_environment_renders_a_counters_csv() -> None:
    assert {p.parts[-4] for p in rendered_csvs()} >= {"dev", "staging", "prod"}


@pytest.mark.parametrize("path", rendered_csvs(), ids=lambda p: p.parts[-4])
def test_dcgm_exporter_reads_the_rendered_csv(reader: Path, path: Path, tmp_path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))["data"][dcgm_counters.CSV_KEY]
    done = read(reader, data, tmp_path)
    assert done.returncode == 0, done.stdout
    assert done.stdout.strip() == f"{len(dcgm_counters.COUNTERS)} counters"


def test_the_reader_refuses_a_comma_in_a_help_text(reader: Path, tmp_path: Path) -> None:
    """The line this project once shipped: the reader is not a rubber stamp."""
    broken = dcgm_counters.csv_text() + (
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, NVLink bandwidth counter, all lanes.\n")
    done = read(reader, broken, tmp_path)
    assert done.returncode == 1 and "wrong number of fields" in done.stdout, done.stdout


def test_help_texts_that_would_break_the_format_are_refused() -> None:
    with pytest.raises(ValueError, match="help text of DCGM_X"):
        dcgm_counters.check((("DCGM_X", "gauge", "a, b"),))
    with pytest.raises(ValueError, match="type 'gage'"):
        dcgm_counters.check((("DCGM_X", "gage", "a"),))
