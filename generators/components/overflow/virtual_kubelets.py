"""Each provider's program (virtual-kubelet or interLink), as its contract
(generators/providers/) says it is started: identity, pod inputs, config, Deployment."""

from __future__ import annotations

from dataclasses import replace

from generators.k8s.hardening import hardened
from generators.k8s.objects import Obj, config_map
from generators.k8s.rbac import CLUSTER_PREFIX, cluster_role, identity, role_binding
from generators.k8s.workload import sha256
from generators.model.overflow import GATE_TAINT_VALUE, Overflow, Provider
from generators.output.templating import render
from generators.providers.contract import (
    CONFIG_DIR,
    CREDENTIALS_DIR,
    KUBELET_PORT,
    SERVING_DIR,
    VirtualNodeTaint,
)
from generators.upstream.kubernetes import Mechanism


def pod_input_objects(ov: Overflow, provider: Provider) -> list[Obj]:
    """What a spilled pod references, readable in the inference namespaces only, for a
    program that reads it there (interLink: namespaced GETs). A program whose informers are
    cluster-wide gets it in its ClusterRole instead (Contract.cluster_rules): a namespaced
    grant would leave its caches empty and break the pods. The provider's own credentials
    are a Secret volume (the kubelet mounts it), never read through the API."""
    rules = provider.contract.pod_input_rules()
    if not rules:
        return []
    inputs = f"{CLUSTER_PREFIX}{provider.node_name}-pod-inputs"
    objects = [cluster_role(inputs, rules)]
    for namespace in ov.inference_namespaces:
        objects.append(
            role_binding(
                inputs, provider.node_name, namespace, subject_namespace=ov.namespace, cluster_role=True
            )
        )
    return objects


def serving_secret(provider: Provider) -> str:
    """The kubernetes.io/tls Secret a provider that needs a kubelet serving certificate mounts
    (created out of band, like the credentials: no key material in git)."""
    return f"{provider.node_name}-serving-cert"


def born_with(ov: Overflow, virtual_node: Mechanism) -> tuple[VirtualNodeTaint, ...]:
    """The taints the program itself registers its node with: below Kubernetes 1.36
    (Mechanism.PROVIDER) no admission policy can close a new virtual node, so the program is
    told to register it with the closed gate taint (and, as always, the provider label). The
    spec check refuses a provider whose program cannot (overflow_checks.py)."""
    if virtual_node is Mechanism.PROVIDER:
        return (VirtualNodeTaint(ov.gate.taint_key, GATE_TAINT_VALUE),)
    return ()


def provider_objects(
    ov: Overflow, provider: Provider, virtual_node: Mechanism = Mechanism.POLICY
) -> list[Obj]:
    """The provider's program as its contract (generators/providers/) says it is started."""
    contract = provider.contract
    launch = contract.launch(replace(provider.contract_input, born_with=born_with(ov, virtual_node)))
    return [
        *identity(
            provider.node_name,
            ov.namespace,
            CLUSTER_PREFIX + provider.node_name,
            contract.cluster_rules(provider.contract_input),
        ),
        *pod_input_objects(ov, provider),
        config_map(provider.node_name, ov.namespace, {launch.config_file: launch.config_text}),
        render(
            "overflow/virtual-kubelet-deployment.yaml.j2",
            provider=provider,
            namespace=ov.namespace,
            args=list(launch.args),
            env=list(launch.env),
            config_sha256=sha256(launch.config_text),
            config_dir=CONFIG_DIR,
            credentials_dir=CREDENTIALS_DIR,
            serving_dir=SERVING_DIR,
            serving_secret=serving_secret(provider) if contract.needs_serving_certificate else None,
            kubelet_port=KUBELET_PORT,
            metrics_port=contract.metrics_port,
            advertised_gpus=contract.advertised_gpus(provider.contract_input),
            **hardened(provider.resources),
        ),
    ]
