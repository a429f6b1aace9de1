"""Instant queries against Prometheus' HTTP API (GET /api/v1/query).

The overflow gate's query must give exactly one finite sample, as a scalar or a
one-element instant vector. Anything else (unreachable, HTTP error, PromQL error, no
series, several series, NaN) is QueryFailed: the gate cannot tell which number to trust,
so the policy's onPrometheusUnavailable decides. A health condition's query gives an
instant vector whose every series names a node in label `node` (values ignored; an empty
vector is a good answer: no node is bad); a series without that label is QueryFailed.

`timeoutSeconds` is a deadline for the whole query, connect to last byte. requests'
own timeout bounds each socket read, so a server trickling one byte per second held a
2 s query for a minute. Here the body is read one recv at a time with the socket timeout
set to what is left, and the whole request runs in a worker thread the caller waits for
only until the deadline (plus DEADLINE_GRACE_SECONDS): even headers trickled in one byte
at a time cannot hold the loop. A worker that overruns is abandoned with its session (a
fresh one serves the next query) and ends on its own at its next socket timeout.
Bodies over MAX_BODY_BYTES, invalid JSON and JSON nested too deeply to parse
(RecursionError) are QueryFailed too, never a crash.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import requests
import urllib3

from .reader import PrometheusEndpoint

MAX_BODY_BYTES = 1 << 20  # one sample is ~100 bytes; a megabyte is something else
READ_BYTES = 64 << 10
DEADLINE_GRACE_SECONDS = 0.25  # the worker's own checks normally end it first


T = TypeVar("T")


class QueryFailed(Exception):
    """No single usable value; str() says why in one line."""


class PrometheusClient:
    """Instant queries against one Prometheus server."""

    def __init__(
        self,
        endpoint: PrometheusEndpoint,
        session: requests.Session | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._endpoint = endpoint
        self._session = session or requests.Session()
        self._clock = clock

    def close(self) -> None:
        self._session.close()

    def query_single(self, query: str) -> float:
        """Evaluate `query` now and return its one sample's value, within the deadline."""
        return self._ask(query, single_value)

    def query_nodes(self, query: str) -> frozenset[str]:
        """Evaluate `query` now and return the `node` label of every series, within the deadline."""
        return self._ask(query, node_names)

    def _ask(self, query: str, interpret: Callable[[Any], T]) -> T:
        limit = self._endpoint.timeout_seconds
        deadline = self._clock() + limit
        session = self._session
        outcome: list[T | BaseException] = []

        def work() -> None:
            try:
                outcome.append(interpret(self._query(session, query, deadline)))
            except BaseException as err:  # handed to the caller, which decides
                outcome.append(err)

        worker = threading.Thread(target=work, name="prometheus-query", daemon=True)
        worker.start()
        worker.join(limit + DEADLINE_GRACE_SECONDS)
        if not outcome:
            self._session = requests.Session()  # the stuck one stays with its worker
            raise QueryFailed(f"no answer from {self._endpoint.url} within {limit:g}s")
        [result] = outcome
        if isinstance(result, BaseException):
            raise result
        return result

    def _query(self, session: requests.Session, query: str, deadline: float) -> Any:
        """The response body of a successful query, parsed; QueryFailed otherwise."""
        url = f"{self._endpoint.url}/api/v1/query"
        limit = self._endpoint.timeout_seconds
        try:
            # identity: a gzip body could decode to nothing for many reads in a row,
            # inside urllib3 where the deadline is not checked.
            with session.get(
                url,
                params={"query": query},
                timeout=limit,
                stream=True,
                headers={"Accept-Encoding": "identity"},
            ) as response:
                body = self._read(response, deadline, url)
                status = response.status_code
        except requests.RequestException as err:
            raise QueryFailed(f"cannot reach {url}: {type(err).__name__}") from err
        payload = _parse(body, status, url)
        if status != 200:
            detail = payload.get("error", "") if isinstance(payload, dict) else ""
            raise QueryFailed(f"HTTP {status} from {url}: {detail}".rstrip(": "))
        return payload

    def _read(self, response: requests.Response, deadline: float, url: str) -> bytes:
        # read1: whatever one recv gives (never waits to fill the buffer), so a trickle
        # returns often enough for the deadline check to see it.
        raw = response.raw
        chunks: list[bytes] = []
        size = 0
        late = QueryFailed(f"no complete answer from {url} within {self._endpoint.timeout_seconds:g}s")
        while True:
            if self._clock() >= deadline:
                raise late
            sock = getattr(getattr(raw, "connection", None), "sock", None)
            if sock is not None:  # no single recv may outlast the deadline either
                sock.settimeout(max(0.01, deadline - self._clock()))
            try:
                chunk = raw.read1(READ_BYTES)
            except (OSError, urllib3.exceptions.HTTPError) as err:
                if self._clock() >= deadline:  # the socket timeout we set: the deadline
                    raise late from None
                raise QueryFailed(f"reading the answer from {url}: {type(err).__name__}") from None
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise QueryFailed(f"answer from {url} is over {MAX_BODY_BYTES} bytes")
            chunks.append(chunk)


def _parse(body: bytes, status: int, url: str) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise QueryFailed(f"HTTP {status} from {url}: not JSON") from None
    except RecursionError:
        raise QueryFailed(f"HTTP {status} from {url}: JSON nested too deeply") from None


def _data(payload: Any) -> tuple[Any, Any]:
    """(resultType, result) of a successful /api/v1/query response body, or QueryFailed."""
    if not isinstance(payload, dict) or payload.get("status") != "success":
        error = payload.get("error", "unknown error") if isinstance(payload, dict) else payload
        raise QueryFailed(f"query failed: {error}")
    data = payload.get("data")
    if not isinstance(data, dict):
        raise QueryFailed("response has no data")
    return data.get("resultType"), data.get("result")


def node_names(payload: Any) -> frozenset[str]:
    """The `node` label of every series in an instant-vector response body, or QueryFailed."""
    kind, result = _data(payload)
    if kind != "vector" or not isinstance(result, list):
        raise QueryFailed(f"query returned a {kind}, expected an instant vector with label node")
    names = set()
    for series in result:
        labels = series.get("metric") if isinstance(series, dict) else None
        name = labels.get("node") if isinstance(labels, dict) else None
        if not isinstance(name, str) or not name:
            # A query that lost its node label cannot say which node is bad: not "none".
            raise QueryFailed(f"series {labels!r} has no label node")
        names.add(name)
    return frozenset(names)


def single_value(payload: Any) -> float:
    """The one sample in a /api/v1/query response body, or QueryFailed."""
    kind, result = _data(payload)
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
