"""Semantic rules of the `overflow` section that its schema cannot express.

Called from semantics.check; each Problem sits at the offending value of the file. The
checks read the section's settings through the model's classes (Overflow, Provider, Gate,
MigrateBack, InferenceService: fromspec's rule, field by field where a class has derived
fields) and the environment's pools, teams and tiers, and locate problems by the same rule.
Read as written, for want of a field: the gate's band (each Provider.band is derived from
it), freeGpusQuery (Gate.free_gpus_query is derived), requireImageDigests (only this check
reads it) and a provider entry as its contract sees it.
"""

from __future__ import annotations

import difflib
from typing import Any

from generators.errors import Problem
from generators.model.build import build_pools
from generators.model.environment import Environment
from generators.model.fromspec import spec_path, take
from generators.model.overflow import (
    INFERENCE_ROLES,
    INFERENCE_TOLERATED_TAINT_KEYS,
    NODE_PREFIX,
    PROVIDER_LABEL,
    Gate,
    InferenceService,
    MigrateBack,
    Overflow,
    Provider,
    SecretRef,
    fill_order,
    stagger_step,
)
from generators.model.types import Image, Team, Tier
from generators.providers import CONTRACTS, ProviderInput
from generators.spec.checker import Checker, Path_
from generators.spec.source import Document
from generators.upstream import kubernetes
from generators.upstream.kubernetes import Feature, Mechanism


def _contract_input(provider: dict[str, Any]) -> Any:
    """The provider entry as its contract sees it (generators/providers/contract.py), as
    Provider.contract_input gives it once the model is built."""
    name: str = take(Provider, "name", provider)
    credentials: SecretRef = take(Provider, "credentials", provider)
    return ProviderInput(
        name,
        f"{NODE_PREFIX}{name}",
        take(Provider, "gpus", provider),
        take(Provider, "gpu_resource", provider),
        take(Provider, "gpu_model", provider),
        provider.get("config", {}),  # as written: the contract reports its problems by path
        credentials.key,
        PROVIDER_LABEL,
    )


def _at(field: str, *rest: str | int | tuple[type, str]) -> Path_:
    """Overflow's `field`, then indexes and (class, field) steps, as keys of the section:
    _at("inference", 2, (InferenceService, "tier")) is inference[2].tier."""
    out: list[str | int] = list(spec_path(Overflow, field))
    for step in rest:
        out += spec_path(*step) if isinstance(step, tuple) else [step]
    return tuple(out)


class _OverflowChecker(Checker):
    section = spec_path(Environment, "overflow")

    def __init__(self, doc: Document, value: dict[str, Any]) -> None:
        super().__init__(doc, value)
        self.o: dict[str, Any] = value[self.section[0]]
        self.teams: tuple[Team, ...] = take(Environment, "teams", value)
        self.tiers: tuple[Tier, ...] = take(Environment, "tiers", value)
        self.gate_raw: dict[str, Any] = self.o[spec_path(Overflow, "gate")[0]]
        self.provider_raws: list[dict[str, Any]] = self.o[spec_path(Overflow, "providers")[0]]

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
        version: str = take(Environment, "kubernetes_version", self.v)
        if kubernetes.mechanism(Feature.VIRTUAL_NODE, version) is not Mechanism.PROVIDER:
            return
        capable = sorted(t for t, c in CONTRACTS.items() if c.registers_labels_and_taints)
        for i, raw in enumerate(self.provider_raws):
            kind: str = take(Provider, "type", raw)
            contract = CONTRACTS.get(kind)
            if contract is None or contract.registers_labels_and_taints:
                continue
            self.add(
                _at("providers", i, (Provider, "type")),
                f"provider {take(Provider, 'name', raw)!r} of type {kind} cannot come up closed on "
                f"Kubernetes {version}: its program registers one taint and no extra label, and "
                f"{kubernetes.name(kubernetes.MUTATING_ADMISSION)} is the first minor whose "
                "MutatingAdmissionPolicy can add the gate taint and the provider label",
                f"use type {' or '.join(capable)} (it registers them from its config), or set "
                f"cluster.kubernetesVersion to {kubernetes.name(kubernetes.MUTATING_ADMISSION)} or newer",
            )

    def digests(self) -> None:
        if not self.o.get("requireImageDigests"):
            return
        migrate_back = self.o[spec_path(Overflow, "migrate_back")[0]]
        images: list[tuple[Path_, Image]] = [
            *(
                (_at("providers", i, (Provider, "image")), take(Provider, "image", p))
                for i, p in enumerate(self.provider_raws)
            ),
            (_at("gate", (Gate, "image")), take(Gate, "image", self.gate_raw)),
            (_at("migrate_back", (MigrateBack, "image")), take(MigrateBack, "image", migrate_back)),
        ]
        missing = [(path, f"{image.repository}:{image.tag}") for path, image in images if not image.digest]
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
        for i, provider in enumerate(self.provider_raws):
            kind: str = take(Provider, "type", provider)
            contract = CONTRACTS.get(kind)
            if contract is None:
                close = difflib.get_close_matches(kind, list(CONTRACTS), n=1)
                self.add(
                    _at("providers", i, (Provider, "type")),
                    f"unknown provider type {kind!r}",
                    (f"did you mean {close[0]!r}? " if close else "")
                    + f"supported: {', '.join(sorted(CONTRACTS))} (generators/providers/)",
                )
            else:
                config = provider.get("config", {})
                for problem in contract.config_problems(config, _contract_input(provider)):
                    self.add((*_at("providers", i), *problem.path), problem.message, problem.hint)
            name: str = take(Provider, "name", provider)
            if name in seen:
                self.add(
                    _at("providers", i, (Provider, "name")),
                    f"duplicate provider name {name!r}",
                    f"first used at overflow.providers[{seen[name]}]; node and gate names come from it",
                )
            seen.setdefault(name, i)

    def gate(self) -> None:
        gate = self.gate_raw
        close_at, open_below = gate["closeWhenFreeGpusAtLeast"], gate["openWhenFreeGpusBelow"]
        if close_at <= open_below:
            self.add(
                ("gate", "closeWhenFreeGpusAtLeast"),
                f"closeWhenFreeGpusAtLeast ({close_at}) must "
                f"be greater than openWhenFreeGpusBelow ({open_below})",
                "the band between them is what stops the gate from flapping",
            )
        taint_key: str = take(Gate, "taint_key", gate)
        if taint_key in INFERENCE_TOLERATED_TAINT_KEYS:
            self.add(
                _at("gate", (Gate, "taint_key")),
                f"the gate taint key must differ from {taint_key!r}",
                "inference tolerates the providers' taints "
                f"({', '.join(INFERENCE_TOLERATED_TAINT_KEYS)}) but must never tolerate the gate",
            )
        usable = [p.name for p in build_pools(self.v) if p.role in INFERENCE_ROLES]
        if "freeGpusQuery" not in gate and not usable:
            self.add(
                _at("gate"),
                "no pool inference can use: the default free-GPU query would count nothing",
                "add an inference or shared pool, or set gate.freeGpusQuery",
            )
        count = len(self.provider_raws)
        lowest = open_below - (count - 1) * stagger_step(gate, count)
        if count > 1 and lowest < 1:
            last = take(Provider, "name", fill_order(self.provider_raws)[-1])
            self.add(
                ("gate", "staggerFreeGpus"),
                f"provider {last!r} would open only below {lowest} free GPUs, which never happens",
                "lower staggerFreeGpus or raise openWhenFreeGpusBelow",
            )

    def namespaces(self) -> None:
        teams = {ns: t.name for t in self.teams for ns in t.namespaces}
        extra: tuple[str, ...] = take(Overflow, "extra_namespaces", self.o)
        namespace: str = take(Overflow, "namespace", self.o)
        for i, ns in enumerate(extra):
            if ns in teams:
                self.add(
                    _at("extra_namespaces", i),
                    f"namespace {ns!r} already belongs to team {teams[ns]!r}",
                    "list only namespaces no team owns",
                )
        if namespace in teams or namespace in extra:
            self.add(
                _at("namespace"),
                f"namespace {namespace!r} is also an inference or team namespace",
                "keep the overflow infrastructure in its own namespace",
            )

    def inference(self) -> None:
        tiers = {t.name: t.role for t in self.tiers}
        extra: tuple[str, ...] = take(Overflow, "extra_namespaces", self.o)
        known = {ns for t in self.teams for ns in t.namespaces} | set(extra)
        services: tuple[InferenceService, ...] = take(Overflow, "inference", self.o)
        seen: set[tuple[str, str]] = set()
        if not services:
            self.add(
                _at("inference"),
                "no inference service is declared: nothing may spill, and the "
                "descheduler would have no namespace to confine its evictions to",
                "declare the inference Deployments that may spill under overflow.inference",
            )
        for i, service in enumerate(services):
            tier = service.tier
            if tier not in tiers:
                inference_tiers = sorted(n for n, role in tiers.items() if role == "inference")
                close = difflib.get_close_matches(tier, inference_tiers, n=1)
                self.add(
                    _at("inference", i, (InferenceService, "tier")),
                    f"unknown tier {tier!r}",
                    f"did you mean {close[0]!r}?"
                    if close
                    else f"inference tiers: {', '.join(inference_tiers) or 'none'}",
                )
            elif tiers[tier] != "inference":
                self.add(
                    _at("inference", i, (InferenceService, "tier")),
                    f"tier {tier!r} is a {tiers[tier]} tier, not an inference tier",
                    "spilled pods must rank below training so training preempts them",
                )
            if service.namespace not in known:
                close = difflib.get_close_matches(service.namespace, sorted(known), n=1)
                self.add(
                    _at("inference", i, (InferenceService, "namespace")),
                    f"namespace {service.namespace!r} belongs to no "
                    "team and is not in overflow.extraNamespaces",
                    f"did you mean {close[0]!r}?" if close else "add it to overflow.extraNamespaces",
                )
            if service.min_replicas > service.max_replicas:
                self.add(
                    _at("inference", i, (InferenceService, "min_replicas")),
                    f"minReplicas ({service.min_replicas}) exceeds maxReplicas ({service.max_replicas})",
                )
            key = (service.namespace, service.deployment)
            if key in seen:
                self.add(
                    _at("inference", i, (InferenceService, "deployment")),
                    f"Deployment {key[0]}/{key[1]} is declared twice",
                )
            seen.add(key)


def check(doc: Document, value: dict[str, Any]) -> list[Problem]:
    """Problems of the overflow section (none when the environment has no such section)."""
    if spec_path(Environment, "overflow")[0] not in value:
        return []
    return _OverflowChecker(doc, value).run()
