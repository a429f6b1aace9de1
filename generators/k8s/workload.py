"""The trainyard-gate program (gate/, one image for every policy kind) as a workload:
its policy in a ConfigMap, the Deployment running it with the Lease, the Service Prometheus
scrapes. The overflow gate and the health controller are this workload with another policy."""

from __future__ import annotations

import hashlib
from typing import Protocol

from generators.k8s.hardening import hardened
from generators.k8s.objects import Obj, config_map, service
from generators.model.types import Image, Resources
from generators.output import yamlemit
from generators.output.templating import render

POLICY_FILE = "policy.yaml"


def policy_config_map(name: str) -> str:
    """The ConfigMap holding program `name`'s policy: `<name>-policy`, so that it says what it
    holds and no ConfigMap shares a name with a dashboard's (docs/components.md, "Names")."""
    return f"{name}-policy"


class Program(Protocol):
    """What the spec says about one trainyard-gate Deployment (model Gate, health Controller)."""

    @property
    def image(self) -> Image: ...
    @property
    def metrics_port(self) -> int: ...
    @property
    def resources(self) -> Resources: ...


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def gate_program(name: str, namespace: str, program: Program, policy: Obj) -> list[Obj]:
    """ConfigMap `<name>-policy` holding `policy`, Deployment `name` running it and holding
    Lease `name` in `namespace`, Service `name` for its /metrics. The Deployment's pod
    template carries the policy's sha256, so a policy change rolls the pod."""
    text = yamlemit.dump(policy)
    args = [
        f"--policy=/etc/trainyard/{POLICY_FILE}",
        f"--metrics-port={program.metrics_port}",
        f"--lease-namespace={namespace}",
        f"--lease-name={name}",
    ]
    return [
        config_map(policy_config_map(name), namespace, {POLICY_FILE: text}),
        render(
            "common/gate-program-deployment.yaml.j2",
            name=name,
            policy_config_map=policy_config_map(name),
            namespace=namespace,
            gate=program,
            args=args,
            policy_sha256=sha256(text),
            **hardened(program.resources),
        ),
        service(name, namespace, program.metrics_port, "metrics"),
    ]
