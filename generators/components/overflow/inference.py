"""The inference services: HPA and PDB of each, and the pod snippet their Deployments use
(documented in docs/overflow.md)."""

from __future__ import annotations

from typing import Any

from generators.k8s.objects import Obj
from generators.model.overflow import IN_CLUSTER_WEIGHT, PROVIDER_LABEL, InferenceService, Overflow
from generators.output.templating import render


def inference_objects(ov: Overflow) -> list[Obj]:
    objects: list[Obj] = []
    for svc in ov.inference:
        objects.append(render("overflow/hpa.yaml.j2", svc=svc))
        objects.append(render("overflow/pdb.yaml.j2", svc=svc))
    return objects


def inference_pod_snippet(ov: Overflow, svc: InferenceService) -> dict[str, Any]:
    """What an inference Deployment's pod template spec needs (documented in docs/overflow.md):
    its tier, the provider taint tolerated (never the gate), in-cluster nodes preferred, then
    the providers in fill order."""
    # Every virtual node carries the provider label, whichever program registers it (node-cli
    # sets type=virtual-kubelet, interLink virtual-node.interlink/type): no real node does.
    preferences = [
        {
            "weight": IN_CLUSTER_WEIGHT,
            "preference": {"matchExpressions": [{"key": PROVIDER_LABEL, "operator": "DoesNotExist"}]},
        }
    ]
    preferences += [
        {
            "weight": p.affinity_weight,
            "preference": {
                "matchExpressions": [{"key": PROVIDER_LABEL, "operator": "In", "values": [p.name]}]
            },
        }
        for p in ov.providers
    ]
    return {
        "priorityClassName": svc.tier,
        # Each provider's node carries its own program's taint (generators/providers/).
        "tolerations": [
            {"key": key, "operator": "Exists", "effect": "NoSchedule"}
            for key in sorted({p.node_taint.key for p in ov.providers})
        ],
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferences}},
    }
