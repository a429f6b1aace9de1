"""Every dcgm-exporter counters CSV we ship parses the way dcgm-exporter parses it.

dcgm-exporter reads the file with Go's encoding/csv and exits on an error, so one comma in
a help text (it once read "NVLink bandwidth counter, all lanes.") empties every DCGM panel
and silences every DCGM alert. The check runs Go's own encoding/csv (tests/monitoring/dcgmcsv,
a copy of dcgm-exporter's reading code) over the CSV of every shipped environment, as the
gpu-operator chart writes it into its ConfigMap from the rendered values (helm template of the
pinned chart, tests/monitoring/test_charts.py).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from generators.components.monitoring import dcgm_counters
from tests.monitoring.conftest import ENVIRONMENTS


def read(reader: Path, text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "dcgm-metrics.csv"
    path.write_text(text, encoding="utf-8")
    return subprocess.run([str(reader), str(path)], capture_output=True, text=True, check=False)


def test_every_environment_ships_a_counters_csv() -> None:
    assert set(ENVIRONMENTS) >= {"dev", "staging", "prod"}


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_dcgm_exporter_reads_the_shipped_csv(reader: Path, name: str, tmp_path: Path) -> None:
    from tests.monitoring.installs import Env, one

    env = Env(name)
    data = one(env.gpu_operator(), "ConfigMap", env.m["dcgmExporter"]["configMapName"])["data"]
    done = read(reader, data[dcgm_counters.CSV_KEY], tmp_path)
    assert done.returncode == 0, done.stdout
    assert done.stdout.strip() == f"{len(dcgm_counters.COUNTERS)} counters"


def test_the_reader_refuses_a_comma_in_a_help_text(reader: Path, tmp_path: Path) -> None:
    """The line this project once shipped: the reader is not a rubber stamp."""
    broken = dcgm_counters.csv_text() + (
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, NVLink bandwidth counter, all lanes.\n"
    )
    done = read(reader, broken, tmp_path)
    assert done.returncode == 1 and "wrong number of fields" in done.stdout, done.stdout


def test_help_texts_that_would_break_the_format_are_refused() -> None:
    with pytest.raises(ValueError, match="help text of DCGM_X"):
        dcgm_counters.check((("DCGM_X", "gauge", "a, b"),))
    with pytest.raises(ValueError, match="type 'gage'"):
        dcgm_counters.check((("DCGM_X", "gage", "a"),))
