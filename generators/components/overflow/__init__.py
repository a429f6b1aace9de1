"""rendered/<env>/overflow/: virtual-kubelets, the gate controller, the descheduler, inference.

Nothing is rendered for an environment without an `overflow` section. Admission policies
(CEL) and the inference pod snippet live in overflow_admission.py.

The DeschedulerPolicy's plugin args follow descheduler v0.36.0's own types (sigs.k8s.io/
descheduler@v0.36.0): RemovePodsViolatingNodeTaintsArgs
(pkg/framework/plugins/removepodsviolatingnodetaints/types.go: includedTaints, namespaces =
pkg/api/types.go Namespaces{include, exclude}; validation.go refuses include with exclude)
and DefaultEvictorArgs (pkg/framework/plugins/defaultevictor/types.go: priorityThreshold =
pkg/api/types.go PriorityThreshold{value, name}, one of the two; nodeFit, minPodAge,
podProtections). Only pods with priority < priorityThreshold are evicted
(defaultevictor.go IsPodEvictableBasedOnPriority), and only while the SystemCriticalPods
protection is on (defaultevictor.go applySystemCriticalPodsProtection).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from generators import yamlemit
from generators.components import Obj
from generators.components.overflow.admission import admission_objects
from generators.model.overflow import (
    GATE,
    GATE_TAINT_VALUE,
    NODE_PREFIX,
    Overflow,
    Provider,
    Resources,
)
from generators.model.types import Environment
from generators.providers.contract import CONFIG_DIR, CREDENTIALS_DIR, KUBELET_PORT, SERVING_DIR, rule
from generators.templating import render

DESCHEDULER = "descheduler"
CLUSTER_PREFIX = "trainyard-"  # cluster-scoped names: say whose they are
POLICY_FILE = "policy.yaml"
NON_ROOT_UID = 65532  # the distroless "nonroot" user; the gate image uses it too
# The virtual-kubelets, the gate and the descheduler must never be preempted or evicted: a
# preempted virtual-kubelet leaves its node unreachable, and 300 s later the node lifecycle
# controller's NoExecute taint evicts every spilled pod at once. Kubernetes' built-in class
# (2000000000) outranks every tier, is honoured in any namespace (checked on the real
# kube-apiserver: tests/controlplane/test_descheduler.py), and the descheduler's
# SystemCriticalPods protection never evicts it.
MACHINERY_PRIORITY_CLASS = "system-cluster-critical"

POD_SECURITY: dict[str, Any] = {
    "runAsNonRoot": True, "runAsUser": NON_ROOT_UID, "runAsGroup": NON_ROOT_UID,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY: dict[str, Any] = {
    "allowPrivilegeEscalation": False, "privileged": False, "readOnlyRootFilesystem": True,
    "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"},
}


_rule = rule  # one RBAC rule shape for every workload here (generators/providers/contract.py)


def gate_rules(ov: Overflow) -> list[dict[str, Any]]:
    """list finds the nodes by label (list cannot be limited by name and only reads);
    get (re-read after a conflict) and patch only the rendered virtual nodes. The gate's
    ValidatingAdmissionPolicy then limits a patch to its own taint."""
    return [_rule([""], ["nodes"], ["list"]),
            _rule([""], ["nodes"], ["get", "patch"], list(ov.virtual_nodes))]
DESCHEDULER_RULES = [
    _rule(["", "events.k8s.io"], ["events"], ["create", "update"]),
    _rule([""], ["nodes", "namespaces", "pods"], ["get", "list", "watch"]),
    _rule([""], ["pods/eviction"], ["create"]),
    _rule(["scheduling.k8s.io"], ["priorityclasses"], ["get", "list", "watch"]),
    _rule(["policy"], ["poddisruptionbudgets"], ["get", "list", "watch"]),
    _rule([""], ["persistentvolumeclaims"], ["get", "list", "watch"]),
]
GATE_LEASE_RULES = [  # the client's LeaseLock reads, creates and replaces its one Lease
    _rule(["coordination.k8s.io"], ["leases"], ["create"]),
    _rule(["coordination.k8s.io"], ["leases"], ["get", "update"], [GATE]),
]
DESCHEDULER_LEASE_RULES = [  # only used if leader election is ever turned on; own namespace only
    _rule(["coordination.k8s.io"], ["leases"], ["create"]),
    _rule(["coordination.k8s.io"], ["leases"], ["get", "update", "patch"], [DESCHEDULER]),
]


def _hardened(res: Resources) -> dict[str, Any]:
    """Template values every Deployment here shares: its requests and limits, a non-root,
    read-only, capability-free security context, the machinery's priority class."""
    resources = {"requests": {"cpu": res.cpu_request, "memory": res.memory_request},
                 "limits": {"cpu": res.cpu_limit, "memory": res.memory_limit}}
    return {"resources": resources, "pod_security": POD_SECURITY, "container_security": CONTAINER_SECURITY,
            "priority_class": MACHINERY_PRIORITY_CLASS}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _identity(ov: Overflow, account: str, cluster_name: str, rules: list[dict[str, Any]]) -> list[Obj]:
    """ServiceAccount + ClusterRole + ClusterRoleBinding of one workload."""
    return [
        render("overflow/serviceaccount.yaml.j2", name=account, namespace=ov.namespace),
        render("overflow/clusterrole.yaml.j2", name=cluster_name, rules=rules),
        render("overflow/clusterrolebinding.yaml.j2", name=cluster_name, account=account,
               namespace=ov.namespace),
    ]


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
    objects = [render("overflow/clusterrole.yaml.j2", name=inputs, rules=rules)]
    for namespace in ov.inference_namespaces:
        objects.append(render("overflow/rolebinding.yaml.j2", name=inputs, account=provider.node_name,
                              namespace=namespace, subject_namespace=ov.namespace, kind="ClusterRole"))
    return objects


def serving_secret(provider: Provider) -> str:
    """The kubernetes.io/tls Secret a provider that needs a kubelet serving certificate mounts
    (created out of band, like the credentials: no key material in git)."""
    return f"{provider.node_name}-serving-cert"


def provider_objects(ov: Overflow, provider: Provider) -> list[Obj]:
    """The provider's program as its contract (generators/providers/) says it is started."""
    contract = provider.contract
    launch = contract.launch(provider.contract_input)
    return [
        *_identity(ov, provider.node_name, CLUSTER_PREFIX + provider.node_name,
                   contract.cluster_rules(provider.contract_input)),
        *pod_input_objects(ov, provider),
        render("overflow/configmap.yaml.j2", name=provider.node_name, namespace=ov.namespace,
               data={launch.config_file: launch.config_text}),
        render("overflow/virtual-kubelet-deployment.yaml.j2", provider=provider, namespace=ov.namespace,
               args=list(launch.args), env=list(launch.env), config_sha256=_sha256(launch.config_text),
               config_dir=CONFIG_DIR, credentials_dir=CREDENTIALS_DIR, serving_dir=SERVING_DIR,
               serving_secret=serving_secret(provider) if contract.needs_serving_certificate else None,
               kubelet_port=KUBELET_PORT, metrics_port=contract.metrics_port,
               advertised_gpus=contract.advertised_gpus(provider.contract_input),
               **_hardened(provider.resources)),
    ]


def taint_policy(ov: Overflow) -> Obj:
    """The gate controller's TaintPolicy: one gate per provider, preferred first."""
    return render("overflow/taintpolicy.yaml.j2", name=GATE, gate=ov.gate, providers=ov.providers,
                  taint_value=GATE_TAINT_VALUE)


def gate_objects(ov: Overflow) -> list[Obj]:
    policy = yamlemit.dump(taint_policy(ov))
    args = [f"--policy=/etc/trainyard/{POLICY_FILE}", f"--metrics-port={ov.gate.metrics_port}",
            f"--lease-namespace={ov.namespace}", f"--lease-name={GATE}"]
    return [
        *_identity(ov, GATE, CLUSTER_PREFIX + GATE, gate_rules(ov)),
        render("overflow/role.yaml.j2", name=GATE, namespace=ov.namespace, rules=GATE_LEASE_RULES),
        render("overflow/rolebinding.yaml.j2", name=GATE, account=GATE, namespace=ov.namespace),
        render("overflow/configmap.yaml.j2", name=GATE, namespace=ov.namespace, data={POLICY_FILE: policy}),
        render("overflow/gate-deployment.yaml.j2", name=GATE, namespace=ov.namespace, gate=ov.gate, args=args,
               policy_sha256=_sha256(policy), **_hardened(ov.gate.resources)),
        render("overflow/gate-service.yaml.j2", name=GATE, namespace=ov.namespace, port=ov.gate.metrics_port),
    ]


def descheduler_policy(ov: Overflow) -> Obj:
    return render("overflow/deschedulerpolicy.yaml.j2", back=ov.migrate_back,
                  included_taints=[ov.gate.taint_key])


def descheduler_objects(ov: Overflow) -> list[Obj]:
    back = ov.migrate_back
    policy = yamlemit.dump(descheduler_policy(ov))
    args = [f"--policy-config-file=/policy-dir/{POLICY_FILE}",
            f"--descheduling-interval={back.descheduling_interval}", "--v=3"]
    if back.dry_run:
        args.append("--dry-run")
    return [
        *_identity(ov, DESCHEDULER, CLUSTER_PREFIX + DESCHEDULER, DESCHEDULER_RULES),
        render("overflow/role.yaml.j2", name=DESCHEDULER, namespace=ov.namespace,
               rules=DESCHEDULER_LEASE_RULES),
        render("overflow/rolebinding.yaml.j2", name=DESCHEDULER, account=DESCHEDULER, namespace=ov.namespace),
        render("overflow/configmap.yaml.j2", name=DESCHEDULER, namespace=ov.namespace,
               data={POLICY_FILE: policy}),
        render("overflow/descheduler-deployment.yaml.j2", name=DESCHEDULER, namespace=ov.namespace, back=back,
               args=args, policy_sha256=_sha256(policy), **_hardened(back.resources)),
    ]


DESCHEDULER_METRICS_PORT = 10258


def network_policies(ov: Overflow, monitoring_namespace: str) -> list[Obj]:
    """Default-deny ingress in the overflow namespace, then exactly what must reach it:
    Prometheus to the metrics ports, and the API server to the virtual-kubelets' kubelet API.

    The kubelet API (logs of spilled pods; exec and attach where the provider serves them)
    is called by the kube-apiserver, which is not a pod: no namespace or pod selector
    matches it, so only ipBlocks can (`kubeletApiSourceCidrs`, the addresses its connections
    come from). interLink 0.6.1 authenticates no caller on that port (docs/overflow.md), so
    with the list empty nobody is admitted (spilled pods run; `kubectl logs` on them fails),
    never everybody. Egress is not restricted: the gate reaches Prometheus and the API
    server, each provider its own API, addresses the repository does not know."""
    def app(name: str) -> dict[str, Any]:
        key = "app.kubernetes.io/instance" if name.startswith(NODE_PREFIX) else "app.kubernetes.io/name"
        return {"matchLabels": {key: name}}

    namespace = {"matchLabels": {"kubernetes.io/metadata.name": monitoring_namespace}}
    prometheus = [{"namespaceSelector": namespace}]
    scrape = [(GATE, ov.gate.metrics_port), (DESCHEDULER, DESCHEDULER_METRICS_PORT)]
    scrape += [(p.node_name, p.contract.metrics_port) for p in ov.providers if p.contract.metrics_port]
    objects = [render("overflow/networkpolicy.yaml.j2", name="default-deny-ingress", namespace=ov.namespace,
                      pod_selector={}, ingress=None)]
    for name, port in scrape:
        objects.append(render("overflow/networkpolicy.yaml.j2", name=f"{name}-metrics",
                              namespace=ov.namespace,
                              pod_selector=app(name),
                              ingress=[{"from": prometheus, "ports": [{"protocol": "TCP", "port": port}]}]))
    if ov.kubelet_api_source_cidrs:
        api_server = [{"ipBlock": {"cidr": cidr}} for cidr in ov.kubelet_api_source_cidrs]
        kubelet_api = [{"from": api_server, "ports": [{"protocol": "TCP", "port": KUBELET_PORT}]}]
        objects.append(render("overflow/networkpolicy.yaml.j2", name="virtual-kubelet-api",
                              namespace=ov.namespace, pod_selector=app("virtual-kubelet"),
                              ingress=kubelet_api))
    return objects


def inference_objects(ov: Overflow) -> list[Obj]:
    objects: list[Obj] = []
    for svc in ov.inference:
        objects.append(render("overflow/hpa.yaml.j2", svc=svc))
        objects.append(render("overflow/pdb.yaml.j2", svc=svc))
    return objects


def generate(env: Environment, earlier: Sequence[Obj] = ()) -> list[Obj]:
    ov = env.overflow
    if ov is None:
        return []
    objects: list[Obj] = [render("overflow/namespace.yaml.j2", name=ov.namespace, role="infrastructure")]
    objects += [render("overflow/namespace.yaml.j2", name=ns, role="inference") for ns in ov.extra_namespaces]
    for provider in ov.providers:
        objects += provider_objects(ov, provider)
    objects += gate_objects(ov)
    objects += descheduler_objects(ov)
    objects += inference_objects(ov)
    objects += admission_objects(ov)
    objects += network_policies(ov, env.monitoring.namespace)
    return objects
