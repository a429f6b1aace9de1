"""rendered/<env>/overflow/: virtual-kubelets, the gate controller, the descheduler, inference.

Nothing is rendered for an environment without an `overflow` section. One module per part:
virtual_kubelets.py (each provider's program), gate.py (the gate controller and its
TaintPolicy), descheduler.py (migrate-back), inference.py (HPA, PDB, the pod snippet),
admission.py (the CEL policies), network.py (the namespace's NetworkPolicies). What the
health component renders alike (RBAC, hardening, the gate program's workload, the node
guard, network policies) is in generators/k8s/ with templates/common/.
"""

from __future__ import annotations

from collections.abc import Sequence

from generators.components.overflow.admission import admission_objects
from generators.components.overflow.descheduler import descheduler_objects
from generators.components.overflow.gate import gate_objects
from generators.components.overflow.inference import inference_objects
from generators.components.overflow.network import network_policies
from generators.components.overflow.virtual_kubelets import provider_objects
from generators.k8s.objects import Obj, namespace
from generators.model.environment import Environment
from generators.upstream import kubernetes


def generate(env: Environment, earlier: Sequence[Obj] = ()) -> list[Obj]:
    ov = env.overflow
    if ov is None:
        return []
    # How a virtual node is born closed and labelled on this minor (upstream/kubernetes.py).
    virtual_node = kubernetes.mechanism(kubernetes.Feature.VIRTUAL_NODE, env.kubernetes_version)
    objects: list[Obj] = [namespace(ov.namespace, "infrastructure")]
    objects += [namespace(ns, "inference") for ns in ov.extra_namespaces]
    for provider in ov.providers:
        objects += provider_objects(ov, provider, virtual_node)
    objects += gate_objects(ov)
    objects += descheduler_objects(ov)
    objects += inference_objects(ov)
    objects += admission_objects(ov, virtual_node)
    objects += network_policies(ov, env.monitoring.namespace)
    return objects
