"""The TaintPolicy file (rendered by the overflow generator): load, validate, freeze.

The header, the Prometheus endpoint, selectors and taint effects are read by the runtime's
`Reader`, the same as the NodeHealthPolicy's; this module adds the gates.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..runtime import reader
from ..runtime.document import SpecPath
from .hysteresis import OnUnavailable, Thresholds

KIND = "TaintPolicy"
GATE_FIELDS = (
    "name",
    "nodeSelector",
    "taint",
    "closeWhenFreeGpusAtLeast",
    "closeAfterSeconds",
    "openWhenFreeGpusBelow",
    "openAfterSeconds",
)


@dataclass(frozen=True)
class Gate(reader.Selects):
    """One provider's gate: which virtual nodes, which taint, which band."""

    name: str
    match_labels: reader.MatchLabels
    taint: reader.Taint
    thresholds: Thresholds


@dataclass(frozen=True)
class TaintPolicy:
    name: str
    prometheus: reader.PrometheusEndpoint
    query: str  # PromQL giving the number of free in-cluster GPUs as one sample
    reconcile_interval_seconds: float
    on_prometheus_unavailable: OnUnavailable
    dry_run: bool
    gates: tuple[Gate, ...]  # preferred (cheapest) provider first

    @property
    def queries_per_pass(self) -> int:
        return 1


def load(path: Path) -> TaintPolicy:
    """Read and validate a policy file; raises PolicyError (one line) on any problem."""
    return parse(reader.read_text(path), str(path))


def parse(text: str, source: str) -> TaintPolicy:
    """Validate policy text; `source` names the file in error messages."""
    data, parsed = reader.read_document(text, source, _GateReader)
    return parsed.policy(data)


class _GateReader(reader.Reader):
    def policy(self, doc: Any) -> TaintPolicy:
        name, spec = self.header(doc, KIND, ("query", "gates"))
        return TaintPolicy(
            name=name,
            prometheus=self.prometheus(self.required(spec, "prometheus", ("spec",))),
            query=self.string(self.required(spec, "query", ("spec",)), ("spec", "query")),
            reconcile_interval_seconds=self.interval(spec),
            on_prometheus_unavailable=self.on_unavailable(spec.get("onPrometheusUnavailable")),
            dry_run=self.flag(spec.get("dryRun", False), ("spec", "dryRun")),
            gates=self.gates(self.required(spec, "gates", ("spec",))),
        )

    def on_unavailable(self, value: Any) -> OnUnavailable:
        if value is None:
            return OnUnavailable.HOLD
        choices = [mode.value for mode in OnUnavailable]
        return OnUnavailable(self.choice(value, ("spec", "onPrometheusUnavailable"), choices))

    def gates(self, value: Any) -> tuple[Gate, ...]:
        path: SpecPath = ("spec", "gates")
        gates = tuple(
            self.gate(entry, where) for where, entry in self.entries(value, path, "gates", GATE_FIELDS)
        )
        for index, gate in enumerate(gates):
            for other in gates[:index]:
                if gate.name == other.name:
                    raise self.fail((*path, index, "name"), f"duplicate gate name {gate.name!r}")
                if gate.taint.key == other.taint.key and reader.may_overlap(
                    gate.match_labels, other.match_labels
                ):
                    raise self.fail(
                        (*path, index, "nodeSelector"),
                        f"gates {other.name!r} and {gate.name!r} can select the same node "
                        f"with the same taint key {gate.taint.key!r}; they would fight over it",
                    )
        return gates

    def gate(self, gate: dict[str, Any], path: SpecPath) -> Gate:
        name = self.dns_name(gate, path, "gate")
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

    def taint(self, value: Any, path: SpecPath) -> reader.Taint:
        taint = self.mapping(value, path, ("key", "value", "effect"))
        key = self.qualified(self.required(taint, "key", path), (*path, "key"), "taint key")
        text = self.label_value(taint.get("value", ""), (*path, "value"), "taint value")
        effect = self.effect(self.required(taint, "effect", path), (*path, "effect"))
        return reader.Taint(key=key, value=text, effect=effect)
