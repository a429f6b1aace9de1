"""Every dashboard query, against a real Prometheus holding synthetic series for every
metric family used: it must parse (promtool) and return data.

The data is backfilled into a fresh TSDB with `promtool tsdb create-blocks-from
openmetrics`, then the pinned Prometheus serves it on a free local port.
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring import synthetic
from tests.monitoring.conftest import ENVIRONMENTS, Shipped, load_shipped
from tests.monitoring.rendered_views import concrete, dashboards, panels
from tests.support.prometheus import backfill_text, serve

pytestmark = pytest.mark.slow


def queries(shipped: Shipped) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    found = []
    for board in dashboards(shipped):
        for panel in panels(board):
            for target in panel["targets"]:
                found.append(
                    (f"{board['uid']} / {panel['title']} / {target['refId']}", concrete(target["expr"]))
                )
        for variable in board["templating"]["list"]:
            if variable["type"] == "query":
                series, label = (
                    variable["query"].removeprefix("label_values(").removesuffix(")").rsplit(", ", 1)
                )
                found.append((f"{board['uid']} / ${variable['name']}", f"count by ({label}) ({series})"))
    return found


@pytest.fixture(scope="module")
def all_shipped() -> list[Shipped]:
    return [load_shipped(name) for name in ENVIRONMENTS]


def backfill(promtool: Path, work: Path, all_shipped: list[Shipped]) -> None:
    """A TSDB at work/tsdb holding the synthetic series of every shipped environment."""
    backfill_text(promtool, work, synthetic.openmetrics([s.env for s in all_shipped]))


@pytest.fixture(scope="module")
def prometheus_url(
    all_shipped: list[Shipped],
    promtool: Path,
    prometheus_binary: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    work = tmp_path_factory.mktemp("prometheus")
    backfill(promtool, work, all_shipped)
    with serve(prometheus_binary, work) as url:
        yield url


def instant(url: str, expr: str) -> dict[str, Any]:
    params = urllib.parse.urlencode({"query": expr, "time": str(synthetic.END)})
    try:
        with urllib.request.urlopen(f"{url}/api/v1/query?{params}", timeout=60) as response:
            body: dict[str, Any] = json.load(response)
    except urllib.error.HTTPError as error:
        body = json.load(error)
    return body


def test_every_query_parses(all_shipped: list[Shipped], promtool: Path, tmp_path: Path) -> None:
    rules = [
        {"record": f"dashboard:query_{i}:check", "expr": expr}
        for shipped in all_shipped
        for i, (_, expr) in enumerate(queries(shipped))
    ]
    (tmp_path / "queries.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]})
    )
    result = subprocess.run(
        [str(promtool), "check", "rules", "queries.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_every_query_returns_data(name: str, all_shipped: list[Shipped], prometheus_url: str) -> None:
    shipped = next(s for s in all_shipped if s.name == name)
    empty, failed = [], []
    for where, expr in queries(shipped):
        body = instant(prometheus_url, expr)
        if body.get("status") != "success":
            failed.append(f"{where}: {body.get('error')}")
        elif not body["data"]["result"]:
            empty.append(f"{where}: {expr}")
    assert not failed, "\n".join(failed)
    assert not empty, "queries without data:\n" + "\n".join(empty)


def test_an_unknown_metric_returns_nothing(prometheus_url: str) -> None:
    """The check can fail: a query on a family the synthetic data lacks comes back empty."""
    assert (
        instant(prometheus_url, 'DCGM_FI_DEV_NOT_A_FIELD{job="nvidia-dcgm-exporter"}')["data"]["result"] == []
    )
    assert instant(prometheus_url, "count(DCGM_FI_DEV_GPU_TEMP)")["data"]["result"]
