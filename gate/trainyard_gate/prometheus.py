"""Free in-cluster GPUs from Prometheus' HTTP API (GET /api/v1/query).

The query must give exactly one finite sample, as a scalar or a one-element instant
vector. Anything else (unreachable, HTTP error, PromQL error, no series, several series,
NaN) is QueryFailed: the gate cannot tell which number to trust, so the policy's
onPrometheusUnavailable decides.
"""

from __future__ import annotations

import math
from typing import Any

import requests

from .policy import PrometheusEndpoint


class QueryFailed(Exception):
    """No single usable value; str() says why in one line."""


class PrometheusClient:
    """Instant queries against one Prometheus server."""

    def __init__(self, endpoint: PrometheusEndpoint, session: requests.Session | None = None) -> None:
        self._endpoint = endpoint
        self._session = session or requests.Session()

    def close(self) -> None:
        self._session.close()

    def query_single(self, query: str) -> float:
        """Evaluate `query` now and return its one sample's value."""
        url = f"{self._endpoint.url}/api/v1/query"
        try:
            response = self._session.get(url, params={"query": query}, timeout=self._endpoint.timeout_seconds)
        except requests.RequestException as err:
            raise QueryFailed(f"cannot reach {url}: {type(err).__name__}") from err
        try:
            payload = response.json()
        except ValueError:
            raise QueryFailed(f"HTTP {response.status_code} from {url}: not JSON") from None
        if response.status_code != 200:
            detail = payload.get("error", "") if isinstance(payload, dict) else ""
            raise QueryFailed(f"HTTP {response.status_code} from {url}: {detail}".rstrip(": "))
        return single_value(payload)


def single_value(payload: Any) -> float:
    """The one sample in a /api/v1/query response body, or QueryFailed."""
    if not isinstance(payload, dict) or payload.get("status") != "success":
        error = payload.get("error", "unknown error") if isinstance(payload, dict) else payload
        raise QueryFailed(f"query failed: {error}")
    data = payload.get("data")
    if not isinstance(data, dict):
        raise QueryFailed("response has no data")
    kind, result = data.get("resultType"), data.get("result")
    if kind == "scalar":
        return _sample_value(result)
    if kind == "vector" and isinstance(result, list):
        if len(result) != 1:
            raise QueryFailed(f"query returned {len(result)} series, expected exactly 1")
        series = result[0]
        return _sample_value(series.get("value") if isinstance(series, dict) else None)
    raise QueryFailed(f"query returned a {kind}, expected a scalar or a 1-element vector")


def _sample_value(sample: Any) -> float:
    # A sample is [<unix time>, "<value as string>"]; the string form carries NaN and Inf.
    if not isinstance(sample, list) or len(sample) != 2 or not isinstance(sample[1], str):
        raise QueryFailed(f"malformed sample {sample!r}")
    try:
        value = float(sample[1])
    except ValueError:
        raise QueryFailed(f"sample value {sample[1]!r} is not a number") from None
    if not math.isfinite(value):
        raise QueryFailed(f"sample value {sample[1]} is not finite")
    return value
