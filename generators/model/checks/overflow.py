"""Semantic rules of the `overflow` section that its schema cannot express.

Called from semantics.check; each Problem sits at the offending value of the file.
"""

from __future__ import annotations

import difflib
from typing import Any

from generators.errors import Problem
from generators.model.overflow import (
    INFERENCE_ROLES,
    INFERENCE_TOLERATED_TAINT_KEYS,
    NODE_PREFIX,
    PROVIDER_LABEL,
    fill_order,
    stagger_step,
)
from generators.providers import CONTRACTS, ProviderInput
from generators.spec.checker import Checker, Path_
from generators.spec.source import Document
from generators.upstream import kubernetes
from generators.upstream.kubernetes import Feature, Mechanism


def _contract_input(provider: dict[str, Any]) -> Any:
    """The provider entry as its contract sees it (generators/providers/contract.py)."""
    return ProviderInput(
        provider["name"],
        f"{NODE_PREFIX}{provider['name']}",
        provider["gpus"],
        provider["gpuResource"],
        provider["gpuModel"],
        provider.get("config", {}),
        provider["credentialsSecret"]["key"],
        PROVIDER_LABEL,
    )


class _OverflowChecker(Checker):
    section = ("overflow",)

    def __init__(self, doc: Document, value: dict[str, Any]) -> None:
        super().__init__(doc, value)
        self.o: dict[str, Any] = value["overflow"]

    def run(self) -> list[Problem]:
        self.kubernetes_version()
        self.digests()
        self.providers()
        self.gate()
        self.namespaces()
        self.inference()
        return self.problems

    def kubernetes_version(self) -> None:
        """Below 1.36 a virtual node is born labelled and closed by its own program
        (Feature.VIRTUAL_NODE, Mechanism.PROVIDER): a provider whose program cannot register
        the provider label and the gate taint would come up open and unselectable."""
        version = self.v["cluster"]["kubernetesVersion"]
        if kubernetes.mechanism(Feature.VIRTUAL_NODE, version) is not Mechanism.PROVIDER:
            return
        capable = sorted(t for t, c in CONTRACTS.items() if c.registers_labels_and_taints)
        for i, provider in enumerate(self.o["providers"]):
            contract = CONTRACTS.get(provider["type"])
            if contract is None or contract.registers_labels_and_taints:
                continue
            self.add(
                ("providers", i, "type"),
                f"provider {provider['name']!r} of type {provider['type']} cannot come up closed on "
                f"Kubernetes {version}: its program registers one taint and no extra label, and "
                f"{kubernetes.name(kubernetes.MUTATING_ADMISSION)} is the first minor whose "
                "MutatingAdmissionPolicy can add the gate taint and the provider label",
                f"use type {' or '.join(capable)} (it registers them from its config), or set "
                f"cluster.kubernetesVersion to {kubernetes.name(kubernetes.MUTATING_ADMISSION)} or newer",
            )

    def digests(self) -> None:
        if not self.o.get("requireImageDigests"):
            return
        images: list[tuple[Path_, dict[str, Any]]] = [
            *((("providers", i, "image"), p["image"]) for i, p in enumerate(self.o["providers"])),
            (("gate", "image"), self.o["gate"]["image"]),
            (("migrateBack", "image"), self.o["migrateBack"]["image"]),
        ]
        missing = [
            (path, f"{image['repository']}:{image['tag']}")
            for path, image in images
            if not image.get("digest")
        ]
        if missing:  # one line at the first, naming the rest: the fix is the same for all
            (path, first), rest = missing[0], [name for _, name in missing[1:]]
            more = f" (nor {', '.join(rest)})" if rest else ""
            self.add(
                path,
                f"image {first} has no digest{more} and overflow.requireImageDigests is true",
                f"add digest: sha256:<64 hex> as the registry reports it (e.g. `crane digest {first}`)",
            )

    def providers(self) -> None:
        seen: dict[str, int] = {}
        for i, provider in enumerate(self.o["providers"]):
            contract = CONTRACTS.get(provider["type"])
            if contract is None:
                close = difflib.get_close_matches(provider["type"], list(CONTRACTS), n=1)
                self.add(
                    ("providers", i, "type"),
                    f"unknown provider type {provider['type']!r}",
                    (f"did you mean {close[0]!r}? " if close else "")
                    + f"supported: {', '.join(sorted(CONTRACTS))} (generators/providers/)",
                )
            else:
                config = provider.get("config", {})
                for problem in contract.config_problems(config, _contract_input(provider)):
                    self.add(("providers", i, *problem.path), problem.message, problem.hint)
            name = provider["name"]
            if name in seen:
                self.add(
                    ("providers", i, "name"),
                    f"duplicate provider name {name!r}",
                    f"first used at overflow.providers[{seen[name]}]; node and gate names come from it",
                )
            seen.setdefault(name, i)

    def gate(self) -> None:
        gate = self.o["gate"]
        close_at, open_below = gate["closeWhenFreeGpusAtLeast"], gate["openWhenFreeGpusBelow"]
        if close_at <= open_below:
            self.add(
                ("gate", "closeWhenFreeGpusAtLeast"),
                f"closeWhenFreeGpusAtLeast ({close_at}) must "
                f"be greater than openWhenFreeGpusBelow ({open_below})",
                "the band between them is what stops the gate from flapping",
            )
        if gate["taintKey"] in INFERENCE_TOLERATED_TAINT_KEYS:
            self.add(
                ("gate", "taintKey"),
                f"the gate taint key must differ from {gate['taintKey']!r}",
                "inference tolerates the providers' taints "
                f"({', '.join(INFERENCE_TOLERATED_TAINT_KEYS)}) but must never tolerate the gate",
            )
        usable = [p["name"] for p in self.v["pools"] if p["role"] in INFERENCE_ROLES]
        if "freeGpusQuery" not in gate and not usable:
            self.add(
                ("gate",),
                "no pool inference can use: the default free-GPU query would count nothing",
                "add an inference or shared pool, or set gate.freeGpusQuery",
            )
        count = len(self.o["providers"])
        lowest = open_below - (count - 1) * stagger_step(gate, count)
        if count > 1 and lowest < 1:
            last = fill_order(self.o["providers"])[-1]["name"]
            self.add(
                ("gate", "staggerFreeGpus"),
                f"provider {last!r} would open only below {lowest} free GPUs, which never happens",
                "lower staggerFreeGpus or raise openWhenFreeGpusBelow",
            )

    def namespaces(self) -> None:
        teams = {ns: t["name"] for t in self.v["teams"] for ns in t["namespaces"]}
        for i, ns in enumerate(self.o["extraNamespaces"]):
            if ns in teams:
                self.add(
                    ("extraNamespaces", i),
                    f"namespace {ns!r} already belongs to team {teams[ns]!r}",
                    "list only namespaces no team owns",
                )
        if self.o["namespace"] in teams or self.o["namespace"] in self.o["extraNamespaces"]:
            self.add(
                ("namespace",),
                f"namespace {self.o['namespace']!r} is also an inference or team namespace",
                "keep the overflow infrastructure in its own namespace",
            )

    def inference(self) -> None:
        tiers = {t["name"]: t["role"] for t in self.v["priorities"]["tiers"]}
        known = {ns for t in self.v["teams"] for ns in t["namespaces"]} | set(self.o["extraNamespaces"])
        seen: set[tuple[str, str]] = set()
        if not self.o["inference"]:
            self.add(
                ("inference",),
                "no inference service is declared: nothing may spill, and the "
                "descheduler would have no namespace to confine its evictions to",
                "declare the inference Deployments that may spill under overflow.inference",
            )
        for i, service in enumerate(self.o["inference"]):
            tier = service["tier"]
            if tier not in tiers:
                inference_tiers = sorted(n for n, role in tiers.items() if role == "inference")
                close = difflib.get_close_matches(tier, inference_tiers, n=1)
                self.add(
                    ("inference", i, "tier"),
                    f"unknown tier {tier!r}",
                    f"did you mean {close[0]!r}?"
                    if close
                    else f"inference tiers: {', '.join(inference_tiers) or 'none'}",
                )
            elif tiers[tier] != "inference":
                self.add(
                    ("inference", i, "tier"),
                    f"tier {tier!r} is a {tiers[tier]} tier, not an inference tier",
                    "spilled pods must rank below training so training preempts them",
                )
            if service["namespace"] not in known:
                close = difflib.get_close_matches(service["namespace"], sorted(known), n=1)
                self.add(
                    ("inference", i, "namespace"),
                    f"namespace {service['namespace']!r} belongs to no "
                    "team and is not in overflow.extraNamespaces",
                    f"did you mean {close[0]!r}?" if close else "add it to overflow.extraNamespaces",
                )
            if service["minReplicas"] > service["maxReplicas"]:
                self.add(
                    ("inference", i, "minReplicas"),
                    f"minReplicas ({service['minReplicas']}) exceeds maxReplicas ({service['maxReplicas']})",
                )
            key = (service["namespace"], service["deployment"])
            if key in seen:
                self.add(("inference", i, "deployment"), f"Deployment {key[0]}/{key[1]} is declared twice")
            seen.add(key)


def check(doc: Document, value: dict[str, Any]) -> list[Problem]:
    """Problems of the overflow section (none when the environment has no such section)."""
    if "overflow" not in value:
        return []
    return _OverflowChecker(doc, value).run()
