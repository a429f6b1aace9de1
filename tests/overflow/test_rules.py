"""Rules over the committed output of every shipped environment (rendered/<env>/)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from trainyard_gate.overflow.policy import load as load_taint_policy

from generators.components.overflow.inference import inference_pod_snippet
from generators.k8s.objects import Obj
from generators.model.load import load
from tests.support import ROOT, mappings

from .conftest import ENVIRONMENTS, objects, one, overflow_envs, rendered

OVERFLOW_ENVS = overflow_envs()
PLUGIN_SET_KEYS = {"presort", "sort", "deschedule", "balance", "filter", "preevictionfilter"}
PINNED_IMAGE = re.compile(r"^[a-z0-9][a-z0-9./_:-]*[a-z0-9]:(?!latest$)[\w][\w.-]*(@sha256:[a-f0-9]{64})?$")


def _embedded(obj: Obj, key: str) -> Obj:
    """A YAML document a ConfigMap carries under data[key]."""
    document: Obj = yaml.safe_load(obj["data"][key])
    return document


def _all_rendered(env: str) -> list[Obj]:
    """Every object of rendered/<env>/ (installers/ holds installer inputs, not objects)."""
    base = ROOT / "rendered" / env
    return [
        obj
        for path in sorted(base.rglob("*.yaml"))
        if path.relative_to(base).parts[0] != "installers"
        for obj in [yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)]
    ]


def _gate_key(env: str) -> str:
    gates = _embedded(one(env, "ConfigMap", "overflow-gate-policy"), "policy.yaml")["spec"]["gates"]
    keys: set[str] = {gate["taint"]["key"] for gate in gates}
    assert len(keys) == 1
    return keys.pop()


def _pod_specs(obj: Obj) -> list[Obj]:
    template = obj.get("spec", {}).get("template", {})
    return [template["spec"]] if "spec" in template else []


def test_shipped_environments_have_the_expected_overflow() -> None:
    assert set(OVERFLOW_ENVS) == {"prod", "staging"} and "dev" in ENVIRONMENTS
    prod = load(ROOT, "prod").overflow
    assert prod is not None and len(prod.providers) >= 2
    assert len({p.cost_per_gpu_hour_usd for p in prod.providers}) == len(prod.providers)
    staging = load(ROOT, "staging").overflow
    assert staging is not None and len(staging.providers) == 1
    assert load(ROOT, "dev").overflow is None


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_no_noexecute_taint_or_toleration_anywhere(env: str) -> None:
    for obj in _all_rendered(env):
        for mapping in mappings(obj):
            assert mapping.get("effect") != "NoExecute", (env, obj["kind"], obj["metadata"]["name"])
            if mapping.get("name") == "VKUBELET_TAINT_EFFECT":
                assert mapping["value"] == "NoSchedule"
    for _, obj in rendered(env):
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == "overflow-gate-policy":
            for gate in _embedded(obj, "policy.yaml")["spec"]["gates"]:
                assert gate["taint"]["effect"] == "NoSchedule"


@pytest.mark.parametrize("env", OVERFLOW_ENVS)
def test_inference_never_tolerates_the_gate(env: str) -> None:
    key = _gate_key(env)
    for obj in _all_rendered(env):
        for spec in _pod_specs(obj):
            assert all(t.get("key") != key for t in spec.get("tolerations", [])), obj["metadata"]["name"]
    ov = load(ROOT, env).overflow
    assert ov is not None and ov.inference
    for svc in ov.inference:
        tolerations = inference_pod_snippet(ov, svc)["tolerations"]
        assert tolerations and all(t["key"] != key and t.get("key") for t in tolerations)
    binding = one(env, "ValidatingAdmissionPolicyBinding", "trainyard-inference-tolerations")
    [expression] = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert set(expression["values"]) == {svc.namespace for svc in ov.inference}
    assert binding["spec"]["validationActions"] == ["Deny"]


@pytest.mark.parametrize("env", OVERFLOW_ENVS)
def test_descheduler_caps_are_finite_and_the_taint_is_the_gate(env: str) -> None:
    policy = _embedded(one(env, "ConfigMap", "descheduler"), "policy.yaml")
    assert policy["apiVersion"] == "descheduler/v1alpha2" and policy["kind"] == "DeschedulerPolicy"
    for cap in ("maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace", "maxNoOfPodsToEvictTotal"):
        value = policy[cap]
        assert isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 1000, cap
    # v0.36 skips a cycle when < 2 Ready nodes match a top-level nodeSelector (one provider
    # would never migrate back); the gate taint alone confines evictions to virtual nodes.
    assert "nodeSelector" not in policy
    [profile] = policy["profiles"]
    args = {entry["name"]: entry.get("args", {}) for entry in profile["pluginConfig"]}
    inference = load(ROOT, env).overflow
    assert inference is not None
    namespaces = sorted({s.namespace for s in inference.inference})
    assert namespaces  # an empty include would mean every namespace
    assert args["RemovePodsViolatingNodeTaints"] == {
        "includedTaints": [_gate_key(env)],
        "namespaces": {"include": namespaces},
    }
    evictor = args["DefaultEvictor"]
    assert evictor["nodeFit"] is True and re.fullmatch(r"([0-9]+[hms])+", evictor["minPodAge"])
    assert "PodsWithLocalStorage" in evictor["podProtections"]["defaultDisabled"]  # emptyDir pods move
    assert set(profile["plugins"]) <= PLUGIN_SET_KEYS  # camelCase keys are silently ignored
    assert profile["plugins"]["deschedule"]["enabled"] == ["RemovePodsViolatingNodeTaints"]
    deployment = one(env, "Deployment", "descheduler")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert any(a.startswith("--descheduling-interval=") for a in container["args"])
    assert "--policy-config-file=/policy-dir/policy.yaml" in container["args"]


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_rbac_has_no_wildcards(env: str) -> None:
    roles = [obj for obj in _all_rendered(env) if obj["kind"] in ("ClusterRole", "Role")]
    for role in roles:
        for rule in role["rules"]:
            assert "nonResourceURLs" not in rule
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in rule.get(field, []), (role["metadata"]["name"], field)
                assert not any("*" in item for item in rule.get(field, [])), (role["metadata"]["name"], field)
    names = {(r["kind"], r["metadata"]["name"]) for r in roles} | set(BUILT_IN_ROLES)
    for binding in (o for o in _all_rendered(env) if o["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        assert (binding["roleRef"]["kind"], binding["roleRef"]["name"]) in names  # never cluster-admin


# The bootstrap roles a rendered binding may name, each small and fixed by Kubernetes
# (k8s.io/kubernetes v1.36.5 plugin/pkg/auth/authorizer/rbac/bootstrappolicy): what an
# aggregated API server (the prometheus-adapter) needs for delegated authentication.
BUILT_IN_ROLES = {
    # policy.go:455-460: create tokenreviews and subjectaccessreviews
    ("ClusterRole", "system:auth-delegator"): "the adapter's ClusterRoleBinding",
    # namespace_policy.go:77-81: get/list/watch configmap kube-system/extension-apiserver-authentication
    ("Role", "extension-apiserver-authentication-reader"): "the adapter's RoleBinding in kube-system",
}


@pytest.mark.parametrize("env", OVERFLOW_ENVS)
def test_gate_may_only_list_nodes_and_patch_the_virtual_ones(env: str) -> None:
    # What it may do with them is checked on the real apiserver: test_least_privilege.py.
    role = one(env, "ClusterRole", "trainyard-overflow-gate")
    virtual = list(load(ROOT, env).overflow.virtual_nodes)  # type: ignore[union-attr]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["nodes"], "resourceNames": virtual, "verbs": ["get", "patch"]},
    ]


@pytest.mark.parametrize("env", OVERFLOW_ENVS)
def test_taint_policy_loads_with_the_gate_controllers_loader(env: str, tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(one(env, "ConfigMap", "overflow-gate-policy")["data"]["policy.yaml"], encoding="utf-8")
    policy = load_taint_policy(path)
    ov = load(ROOT, env).overflow
    assert ov is not None
    assert [gate.name for gate in policy.gates] == [p.name for p in ov.providers]
    assert policy.query == ov.gate.free_gpus_query and policy.dry_run is ov.gate.dry_run
    # The label each program puts on its own node (interLink 0.6.1 virtualkubelet.go:417;
    # virtual-kubelet node/nodeutil/controller.go:316), never on a real node.
    own_label = {
        "interlink": {"virtual-node.interlink/type": "virtual-kubelet"},
        "mock": {"type": "virtual-kubelet"},
        "azure-aci": {"type": "virtual-kubelet"},
    }
    for gate, provider in zip(policy.gates, ov.providers, strict=True):
        expected = {**own_label[provider.type], "trainyard.dev/provider": provider.name}
        assert dict(gate.match_labels) == expected
        assert gate.taint.effect == "NoSchedule"
    # Preferred first: every later gate opens at fewer free GPUs, no sooner, and closes no later.
    for first, then in zip(policy.gates, policy.gates[1:], strict=False):
        assert then.thresholds.open_when_free_gpus_below < first.thresholds.open_when_free_gpus_below
        assert then.thresholds.open_after_seconds >= first.thresholds.open_after_seconds
        assert then.thresholds.close_when_free_gpus_at_least < first.thresholds.close_when_free_gpus_at_least
    gate_deployment = one(env, "Deployment", "overflow-gate")
    [volume] = [v for v in gate_deployment["spec"]["template"]["spec"]["volumes"] if "configMap" in v]
    assert volume["configMap"]["name"] == "overflow-gate-policy"


def _containers(obj: Obj) -> list[Obj]:
    spec = obj["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


@pytest.mark.parametrize("env", OVERFLOW_ENVS)
def test_the_descheduler_never_evicts_training_or_the_machinery(env: str) -> None:
    """Only pods below priorityThreshold are evicted (descheduler v0.36.0
    pkg/framework/plugins/defaultevictor/defaultevictor.go IsPodEvictableBasedOnPriority:
    priority < threshold), and only while SystemCriticalPods protection is on."""
    policy = _embedded(one(env, "ConfigMap", "descheduler"), "policy.yaml")
    [profile] = policy["profiles"]
    evictor = next(e["args"] for e in profile["pluginConfig"] if e["name"] == "DefaultEvictor")
    threshold = evictor["priorityThreshold"]
    assert set(threshold) == {"value"}  # value and name together are refused by its validation
    tiers = load(ROOT, env).tiers
    training = min(t.value for t in tiers if t.role == "training")
    inference = max(t.value for t in tiers if t.role == "inference")
    assert inference < threshold["value"] <= training  # serving may move, training never
    assert "SystemCriticalPods" not in evictor["podProtections"]["defaultDisabled"]


@pytest.mark.parametrize("env", OVERFLOW_ENVS)
def test_the_machinery_is_system_critical(env: str) -> None:
    """A preempted virtual-kubelet leaves its node unreachable: 300 s later every spilled pod
    is evicted by the NoExecute taint. Nothing of the overflow machinery may be preempted."""
    deployments = objects(env, "Deployment")
    assert len(deployments) == len(load(ROOT, env).overflow.providers) + 2  # type: ignore[union-attr]
    for deployment in deployments:
        spec = deployment["spec"]["template"]["spec"]
        assert spec.get("priorityClassName") == "system-cluster-critical", deployment["metadata"]["name"]


@pytest.mark.parametrize("env", OVERFLOW_ENVS)
def test_deployments_are_hardened_pinned_and_bounded(env: str) -> None:
    deployments = objects(env, "Deployment")
    assert {d["metadata"]["name"] for d in deployments} >= {"overflow-gate", "descheduler"}
    for deployment in deployments:
        name = deployment["metadata"]["name"]
        assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"] == {"type": "Recreate"}
        pod = deployment["spec"]["template"]["spec"]["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in _containers(deployment):
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["capabilities"] == {"drop": ["ALL"]}, name
            assert security.get("privileged", False) is False, name
            for bound in ("requests", "limits"):
                assert set(container["resources"][bound]) == {"cpu", "memory"}, (name, bound)
            assert PINNED_IMAGE.match(container["image"]), container["image"]


@pytest.mark.parametrize("env", OVERFLOW_ENVS)
def test_virtual_kubelets_are_scoped_to_their_node_and_mount_credentials(env: str) -> None:
    # Flags, config and taint per provider type: test_provider_contracts.py.
    ov = load(ROOT, env).overflow
    assert ov is not None
    for provider in ov.providers:
        deployment = one(env, "Deployment", provider.node_name)
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        assert not any("secretKeyRef" in str(e) for e in container["env"])  # files, never env
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
        assert volumes["credentials"]["secret"]["secretName"] == provider.credentials.name
        role = one(env, "ClusterRole", f"trainyard-{provider.node_name}")
        scoped = [r for r in role["rules"] if "resourceNames" in r]
        assert scoped and all(r["resourceNames"] == [provider.node_name] for r in scoped)
    assert not objects(env, "Secret")  # credentials are referenced, never rendered


@pytest.mark.parametrize("env", OVERFLOW_ENVS)
def test_each_inference_service_has_an_hpa_and_a_pdb(env: str) -> None:
    ov = load(ROOT, env).overflow
    assert ov is not None
    for svc in ov.inference:
        hpa = next(
            o
            for o in objects(env, "HorizontalPodAutoscaler")
            if (o["metadata"]["name"], o["metadata"]["namespace"]) == (svc.deployment, svc.namespace)
        )
        [metric] = hpa["spec"]["metrics"]
        assert metric["type"] == "External" and metric["external"]["metric"]["name"] == svc.metric_name
        assert hpa["spec"]["scaleTargetRef"] == {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": svc.deployment,
        }
        assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] >= 0
        pdb = next(
            o
            for o in objects(env, "PodDisruptionBudget")
            if (o["metadata"]["name"], o["metadata"]["namespace"]) == (svc.deployment, svc.namespace)
        )
        assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
        assert pdb["spec"]["selector"] == {"matchLabels": dict(svc.pod_selector)}


@pytest.mark.parametrize("env", OVERFLOW_ENVS)
def test_ingress_is_denied_by_default_and_each_allow_opens_a_real_port(env: str) -> None:
    policies = objects(env, "NetworkPolicy")
    namespace = load(ROOT, env).overflow.namespace  # type: ignore[union-attr]
    deny = [p for p in policies if p["spec"]["podSelector"] == {}]
    assert len(deny) == 1 and "ingress" not in deny[0]["spec"]
    assert deny[0]["metadata"]["namespace"] == namespace
    opened = 0
    for policy in policies:
        selector = policy["spec"]["podSelector"].get("matchLabels")
        if not selector:
            continue
        pods = [
            d
            for d in objects(env, "Deployment")
            if selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        assert pods, policy["metadata"]["name"]
        for rule in policy["spec"]["ingress"]:
            for port in rule["ports"]:
                for pod in pods:
                    exposed = {p["containerPort"] for c in _containers(pod) for p in c.get("ports", [])}
                    assert port["port"] in exposed, (policy["metadata"]["name"], port, exposed)
                    opened += 1
    assert opened >= 2  # the gate's and the descheduler's metrics at least
    # No source list in the shipped environments: nobody reaches the kubelet API (10250).
    assert not [p for p in policies if p["metadata"]["name"] == "virtual-kubelet-api"]
