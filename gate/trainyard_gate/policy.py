"""The TaintPolicy file (rendered by the overflow generator): load, validate, freeze.

`Reader` is shared with health_policy.py (the NodeHealthPolicy kind).

Every problem is one line, `file:line:col: error: <what> (<spec path>)`, the same shape as
the generators' errors, and is raised before the controller touches anything.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from .document import InvalidDocument, Position, SpecPath, load_with_positions, render_path
from .hysteresis import OnUnavailable, Thresholds

API_VERSION = "trainyard.dev/v1alpha1"
KIND = "TaintPolicy"

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
QUALIFIED_NAME = re.compile(rf"^({_DNS_SUBDOMAIN}/)?{_NAME}$")
_LABEL_VALUE = re.compile(rf"^({_NAME})?$")


R = TypeVar("R", bound="Reader")


class PolicyError(ValueError):
    """The policy file is unusable; str() is the one-line message for the operator."""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str  # "" means no value
    effect: str  # always NoSchedule: validated on load


@dataclass(frozen=True)
class Gate:
    """One provider's gate: which virtual nodes, which taint, which band."""

    name: str
    match_labels: tuple[tuple[str, str], ...]  # sorted (key, value) pairs, never empty
    taint: Taint
    thresholds: Thresholds

    @property
    def label_selector(self) -> str:
        """The matchLabels as a Kubernetes label selector string."""
        return ",".join(f"{key}={value}" for key, value in self.match_labels)


@dataclass(frozen=True)
class PrometheusEndpoint:
    url: str  # base URL; the client appends /api/v1/query
    timeout_seconds: float


@dataclass(frozen=True)
class TaintPolicy:
    name: str
    prometheus: PrometheusEndpoint
    query: str  # PromQL giving the number of free in-cluster GPUs as one sample
    reconcile_interval_seconds: float
    on_prometheus_unavailable: OnUnavailable
    dry_run: bool
    gates: tuple[Gate, ...]  # preferred (cheapest) provider first


def load(path: Path) -> TaintPolicy:
    """Read and validate a policy file; raises PolicyError (one line) on any problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise PolicyError(f"{path}: error: cannot read policy: {err.strerror}") from None
    return parse(text, str(path))


def read_document(text: str, source: str, reader: type[R]) -> tuple[Any, R]:
    """The YAML document and a `reader` over its positions (both policy kinds start here)."""
    try:
        data, positions = load_with_positions(text)
    except InvalidDocument as err:
        where = f"{source}:{err.position[0]}:{err.position[1]}" if err.position else source
        raise PolicyError(f"{where}: error: {err}") from None
    return data, reader(source, positions)


def parse(text: str, source: str) -> TaintPolicy:
    """Validate policy text; `source` names the file in error messages."""
    data, reader = read_document(text, source, Reader)
    return reader.policy(data)


class Reader:
    """Typed access to the parsed document; every failure names file:line:col and path."""

    def __init__(self, source: str, positions: Mapping[SpecPath, Position]) -> None:
        self._source = source
        self._positions = positions

    def fail(self, path: SpecPath, what: str) -> PolicyError:
        probe = path
        while probe not in self._positions and probe:
            probe = probe[:-1]  # a missing key is reported at its parent mapping
        line, col = self._positions.get(probe, (1, 1))
        return PolicyError(f"{self._source}:{line}:{col}: error: {what} ({render_path(path)})")

    def mapping(self, value: Any, path: SpecPath, allowed: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"expected a mapping, got {_type_name(value)}")
        for key in value:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise self.fail((*path, str(key)), f"unknown field {key!r}{hint}")
        return value

    def required(self, obj: Mapping[str, Any], key: str, path: SpecPath) -> Any:
        if key not in obj or obj[key] is None:
            raise self.fail((*path, key), f"missing required field {key!r}")
        return obj[key]

    def string(self, value: Any, path: SpecPath) -> str:
        if not isinstance(value, str) or not value.strip():
            got = "an empty string" if isinstance(value, str) else _type_name(value)
            raise self.fail(path, f"expected a non-empty string, got {got}")
        return value

    def count(self, value: Any, path: SpecPath) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(path, f"expected a whole number >= 0, got {value!r}")
        return value

    def seconds(self, value: Any, path: SpecPath, *, positive: bool = False) -> float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or not math.isfinite(value) or value < 0 or (positive and value == 0):
            bound = "> 0" if positive else ">= 0"
            raise self.fail(path, f"expected a number of seconds {bound}, got {value!r}")
        return float(value)

    def header(self, doc: Any, kind: str, spec_keys: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
        """(metadata.name, spec) of a trainyard.dev/v1alpha1 document of this kind."""
        top = self.mapping(doc, (), ("apiVersion", "kind", "metadata", "spec"))
        for key, expected in (("apiVersion", API_VERSION), ("kind", kind)):
            if self.required(top, key, ()) != expected:
                raise self.fail((key,), f"expected {expected!r}, got {top[key]!r}")
        meta = self.mapping(self.required(top, "metadata", ()), ("metadata",), ("name",))
        name = self.string(self.required(meta, "name", ("metadata",)), ("metadata", "name"))
        return name, self.mapping(self.required(top, "spec", ()), ("spec",), spec_keys)

    def policy(self, doc: Any) -> TaintPolicy:
        spec_keys = (
            "prometheus",
            "query",
            "reconcileIntervalSeconds",
            "onPrometheusUnavailable",
            "dryRun",
            "gates",
        )
        name, spec = self.header(doc, KIND, spec_keys)
        return TaintPolicy(
            name=name,
            prometheus=self.prometheus(self.required(spec, "prometheus", ("spec",))),
            query=self.string(self.required(spec, "query", ("spec",)), ("spec", "query")),
            reconcile_interval_seconds=self.seconds(
                spec.get("reconcileIntervalSeconds", 30),
                ("spec", "reconcileIntervalSeconds"),
                positive=True,
            ),
            on_prometheus_unavailable=self.on_unavailable(spec.get("onPrometheusUnavailable")),
            dry_run=self.flag(spec.get("dryRun", False), ("spec", "dryRun")),
            gates=self.gates(self.required(spec, "gates", ("spec",))),
        )

    def prometheus(self, value: Any) -> PrometheusEndpoint:
        path: SpecPath = ("spec", "prometheus")
        prom = self.mapping(value, path, ("url", "timeoutSeconds"))
        url = self.string(self.required(prom, "url", path), (*path, "url"))
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise self.fail((*path, "url"), f"expected an http(s) URL with a host, got {url!r}")
        timeout = self.seconds(prom.get("timeoutSeconds", 5), (*path, "timeoutSeconds"), positive=True)
        return PrometheusEndpoint(url=url.rstrip("/"), timeout_seconds=timeout)

    def on_unavailable(self, value: Any) -> OnUnavailable:
        if value is None:
            return OnUnavailable.HOLD
        choices = [mode.value for mode in OnUnavailable]
        if value not in choices:
            path: SpecPath = ("spec", "onPrometheusUnavailable")
            raise self.fail(path, f"expected one of {', '.join(choices)}, got {value!r}")
        return OnUnavailable(value)

    def flag(self, value: Any, path: SpecPath) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, f"expected true or false, got {value!r}")
        return value

    def gates(self, value: Any) -> tuple[Gate, ...]:
        path: SpecPath = ("spec", "gates")
        if not isinstance(value, list) or not value:
            raise self.fail(path, "expected a non-empty list of gates")
        gates = tuple(self.gate(item, (*path, index)) for index, item in enumerate(value))
        for index, gate in enumerate(gates):
            for other in gates[:index]:
                if gate.name == other.name:
                    raise self.fail((*path, index, "name"), f"duplicate gate name {gate.name!r}")
                if gate.taint.key == other.taint.key and may_overlap(gate.match_labels, other.match_labels):
                    raise self.fail(
                        (*path, index, "nodeSelector"),
                        f"gates {other.name!r} and {gate.name!r} can select the same node "
                        f"with the same taint key {gate.taint.key!r}; they would fight over it",
                    )
        return gates

    def gate(self, value: Any, path: SpecPath) -> Gate:
        fields = (
            "name",
            "nodeSelector",
            "taint",
            "closeWhenFreeGpusAtLeast",
            "closeAfterSeconds",
            "openWhenFreeGpusBelow",
            "openAfterSeconds",
        )
        gate = self.mapping(value, path, fields)
        name = self.string(self.required(gate, "name", path), (*path, "name"))
        if not DNS_LABEL.match(name):
            raise self.fail((*path, "name"), f"gate name {name!r} is not a DNS label")
        close_at = self.count(
            self.required(gate, "closeWhenFreeGpusAtLeast", path),
            (*path, "closeWhenFreeGpusAtLeast"),
        )
        open_below = self.count(
            self.required(gate, "openWhenFreeGpusBelow", path), (*path, "openWhenFreeGpusBelow")
        )
        if close_at <= open_below:
            raise self.fail(
                (*path, "closeWhenFreeGpusAtLeast"),
                f"closeWhenFreeGpusAtLeast ({close_at}) must be greater than "
                f"openWhenFreeGpusBelow ({open_below}), or the gate flaps",
            )
        thresholds = Thresholds(
            close_when_free_gpus_at_least=close_at,
            close_after_seconds=self.seconds(
                self.required(gate, "closeAfterSeconds", path), (*path, "closeAfterSeconds")
            ),
            open_when_free_gpus_below=open_below,
            open_after_seconds=self.seconds(
                self.required(gate, "openAfterSeconds", path), (*path, "openAfterSeconds")
            ),
        )
        return Gate(
            name=name,
            match_labels=self.match_labels(self.required(gate, "nodeSelector", path), path),
            taint=self.taint(self.required(gate, "taint", path), (*path, "taint")),
            thresholds=thresholds,
        )

    def match_labels(self, value: Any, gate_path: SpecPath) -> tuple[tuple[str, str], ...]:
        path: SpecPath = (*gate_path, "nodeSelector")
        selector = self.mapping(value, path, ("matchLabels",))
        if "matchExpressions" in selector:
            raise self.fail((*path, "matchExpressions"), "only matchLabels is supported")
        labels = self.required(selector, "matchLabels", path)
        path = (*path, "matchLabels")
        if not isinstance(labels, dict) or not labels:
            # An empty selector matches every node, real GPU nodes included.
            raise self.fail(path, "expected at least one label: an empty selector matches all")
        pairs = []
        for key, label in labels.items():
            if not isinstance(key, str) or not QUALIFIED_NAME.match(key):
                raise self.fail((*path, str(key)), f"invalid label key {key!r}")
            if not isinstance(label, str) or not _LABEL_VALUE.match(label):
                raise self.fail((*path, key), f"label value must be a string label value, got {label!r}")
            pairs.append((key, label))
        return tuple(sorted(pairs))

    def taint(self, value: Any, path: SpecPath) -> Taint:
        taint = self.mapping(value, path, ("key", "value", "effect"))
        key = self.string(self.required(taint, "key", path), (*path, "key"))
        if not QUALIFIED_NAME.match(key):
            raise self.fail((*path, "key"), f"invalid taint key {key!r}")
        text = taint.get("value", "")
        if text is None:
            text = ""
        if not isinstance(text, str) or not _LABEL_VALUE.match(text):
            raise self.fail((*path, "value"), f"invalid taint value {text!r}")
        effect = self.effect(self.required(taint, "effect", path), (*path, "effect"))
        return Taint(key=key, value=text, effect=effect)

    def effect(self, effect: Any, path: SpecPath) -> str:
        if effect == "NoExecute":
            raise self.fail(
                path,
                "taint effect NoExecute is refused: it evicts every non-tolerating pod at "
                "once and ignores PodDisruptionBudgets; use NoSchedule",
            )
        if effect != "NoSchedule":
            raise self.fail(path, f"taint effect must be NoSchedule, got {effect!r}")
        return str(effect)


def may_overlap(one: tuple[tuple[str, str], ...], other: tuple[tuple[str, str], ...]) -> bool:
    """True unless some label key is required with different values by the two selectors."""
    theirs = dict(other)
    return all(theirs.get(key, value) == value for key, value in one)


def _type_name(value: Any) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
