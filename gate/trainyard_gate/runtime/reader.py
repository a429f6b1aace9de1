"""What both policy files share: the trainyard.dev/v1alpha1 header, the Prometheus
endpoint, taints, label selectors, and `Reader`, the typed access to a parsed document.

Every problem is one line, `file:line:col: error: <what> (<spec path>)`, the same shape as
the generators' errors, and is raised before the controller touches anything.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from .document import InvalidDocument, Position, SpecPath, load_with_positions, render_path

API_VERSION = "trainyard.dev/v1alpha1"

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
QUALIFIED_NAME = re.compile(rf"^({_DNS_SUBDOMAIN}/)?{_NAME}$")
_LABEL_VALUE = re.compile(rf"^({_NAME})?$")

# spec keys of every kind (the reader reads them the same way for each)
COMMON_SPEC_KEYS = ("prometheus", "reconcileIntervalSeconds", "onPrometheusUnavailable", "dryRun")

MatchLabels = tuple[tuple[str, str], ...]  # sorted (key, value) pairs, never empty

R = TypeVar("R", bound="Reader")


class PolicyError(ValueError):
    """The policy file is unusable; str() is the one-line message for the operator."""


@dataclass(frozen=True)
class Taint:
    key: str
    value: str  # "" means no value
    effect: str  # always NoSchedule: validated on load


@dataclass(frozen=True)
class PrometheusEndpoint:
    url: str  # base URL; the client appends /api/v1/query
    timeout_seconds: float


def label_selector(match_labels: MatchLabels) -> str:
    """matchLabels as a Kubernetes label selector string."""
    return ",".join(f"{key}={value}" for key, value in match_labels)


class Selects:
    """What selects nodes by matchLabels (a gate, a pool): its label selector string."""

    match_labels: MatchLabels

    @property
    def label_selector(self) -> str:
        return label_selector(self.match_labels)


def may_overlap(one: MatchLabels, other: MatchLabels) -> bool:
    """True unless some label key is required with different values by the two selectors."""
    theirs = dict(other)
    return all(theirs.get(key, value) == value for key, value in one)


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as err:
        raise PolicyError(f"{path}: error: cannot read policy: {err.strerror}") from None


def read_document(text: str, source: str, reader: type[R]) -> tuple[Any, R]:
    """The YAML document and a `reader` over its positions (both policy kinds start here)."""
    try:
        data, positions = load_with_positions(text)
    except InvalidDocument as err:
        where = f"{source}:{err.position[0]}:{err.position[1]}" if err.position else source
        raise PolicyError(f"{where}: error: {err}") from None
    return data, reader(source, positions)


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

    def interval(self, spec: Mapping[str, Any]) -> float:
        """spec.reconcileIntervalSeconds, default 30."""
        path: SpecPath = ("spec", "reconcileIntervalSeconds")
        return self.seconds(spec.get("reconcileIntervalSeconds", 30), path, positive=True)

    def flag(self, value: Any, path: SpecPath) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, f"expected true or false, got {value!r}")
        return value

    def header(self, doc: Any, kind: str, kind_keys: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
        """(metadata.name, spec) of a trainyard.dev/v1alpha1 document of this kind, whose spec
        may hold COMMON_SPEC_KEYS and the kind's own `kind_keys`."""
        top = self.mapping(doc, (), ("apiVersion", "kind", "metadata", "spec"))
        for key, expected in (("apiVersion", API_VERSION), ("kind", kind)):
            if self.required(top, key, ()) != expected:
                raise self.fail((key,), f"expected {expected!r}, got {top[key]!r}")
        meta = self.mapping(self.required(top, "metadata", ()), ("metadata",), ("name",))
        name = self.string(self.required(meta, "name", ("metadata",)), ("metadata", "name"))
        return name, self.mapping(self.required(top, "spec", ()), ("spec",), (*COMMON_SPEC_KEYS, *kind_keys))

    def prometheus(self, value: Any) -> PrometheusEndpoint:
        path: SpecPath = ("spec", "prometheus")
        prom = self.mapping(value, path, ("url", "timeoutSeconds"))
        url = self.string(self.required(prom, "url", path), (*path, "url"))
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise self.fail((*path, "url"), f"expected an http(s) URL with a host, got {url!r}")
        timeout = self.seconds(prom.get("timeoutSeconds", 5), (*path, "timeoutSeconds"), positive=True)
        return PrometheusEndpoint(url=url.rstrip("/"), timeout_seconds=timeout)

    def match_labels(self, value: Any, owner: SpecPath) -> MatchLabels:
        """`owner`.nodeSelector: matchLabels only, at least one label."""
        path: SpecPath = (*owner, "nodeSelector")
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

    def entries(
        self, value: Any, path: SpecPath, what: str, fields: tuple[str, ...]
    ) -> Iterator[tuple[SpecPath, dict[str, Any]]]:
        """A non-empty list of mappings of `fields` (`what` names them in the error): each
        entry's spec path and mapping, in order, each checked only when its turn comes (the
        first problem in file order is the one reported)."""
        if not isinstance(value, list) or not value:
            raise self.fail(path, f"expected a non-empty list of {what}")
        for index, item in enumerate(value):
            yield (*path, index), self.mapping(item, (*path, index), fields)

    def choice(self, value: Any, path: SpecPath, choices: Sequence[str]) -> str:
        if value not in choices:
            raise self.fail(path, f"expected one of {', '.join(choices)}, got {value!r}")
        return str(value)

    def dns_name(self, entry: Mapping[str, Any], path: SpecPath, what: str) -> str:
        """`path`.name, a DNS label (it names a metric label value and a log field)."""
        name = self.string(self.required(entry, "name", path), (*path, "name"))
        if not DNS_LABEL.match(name):
            raise self.fail((*path, "name"), f"{what} name {name!r} is not a DNS label")
        return name

    def qualified(self, value: Any, path: SpecPath, what: str) -> str:
        """A qualified name (prefix/name), as a taint, label or annotation key."""
        text = self.string(value, path)
        if not QUALIFIED_NAME.match(text):
            raise self.fail(path, f"invalid {what} {text!r}: expected a qualified name (prefix/name)")
        return text

    def label_value(self, value: Any, path: SpecPath, what: str) -> str:
        """A label value ("" allowed); `what` names it in the error."""
        if value is None:
            value = ""
        if not isinstance(value, str) or not _LABEL_VALUE.match(value):
            raise self.fail(path, f"invalid {what} {value!r}")
        return value

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


def _type_name(value: Any) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
