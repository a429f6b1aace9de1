"""rendered/<env>/priorities/: per tier a PriorityClass and a WorkloadPriorityClass with the
tier's one value, and the admission policies that keep training pods at a training tier.

Why two policies: kube-apiserver's admission order (pkg/kubeapiserver/options/plugins.go in
kubernetes v1.36: Priority before MutatingAdmissionPolicy before ValidatingAdmissionPolicy)
resolves a pod's priority from its class before any policy runs, and the Priority plugin
(plugin/pkg/admission/priority/admission.go) refuses a pod whose spec.priority disagrees with
its class. So the mutating policy defaults class, value and preemption policy together, and
the validating one, which runs last, refuses any other class in a training namespace.

Scope: only pods Kueue manages are training pods. A notebook or a
Deployment in a team namespace holds no quota, so at a training tier it would preempt the pods
Kueue admitted (and serving) through kube-scheduler, outside every quota. Kueue v0.19.2 marks
the pods of every workload it starts: jobframework's getPodSetsInfoFromStatus
(pkg/controller/jobframework/reconciler.go:1756) writes `kueue.x-k8s.io/podset` into the pod
templates when it unsuspends a job, so the job's controller creates each pod with it. Pods of
the pod-based integrations (pod, deployment, statefulset, leaderworkerset) are marked by their
own labels before Kueue's pod webhook runs: the queue name, and `kueue.x-k8s.io/managed` that
the Deployment/StatefulSet webhooks write into the template; admission policies run before
webhooks (pkg/kubeapiserver/options/plugins.go, v1.36), so only the labels present at CREATE
count. Every other pod in a training namespace runs at the lowest tier of the spec and may
name no other class. A Workload in a training namespace whose class or pod templates name a
non-training class is refused when Kueue creates it, so no integration (JobSet, TrainJob,
RayJob, a label changed after creation) can hold quota with pods that will be refused.

Quarantine (docs/health.md, model/health.py): inference pods get a toleration of each taint
the health backend quarantines with (a MutatingAdmissionPolicy bound to the inference
namespaces), and pods in training namespaces that tolerate one are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from generators.k8s.admission import binding, mutating_binding, tolerations_policy
from generators.k8s.cel import literal
from generators.k8s.objects import Obj
from generators.model.environment import Environment
from generators.model.health import Toleration
from generators.model.types import Tier
from generators.output.templating import render
from generators.upstream import job_kinds, kubernetes
from generators.upstream.kubernetes import Feature, Mechanism

POLICY = "trainyard-training-priority"
# Class-less training Jobs get the default tier's WorkloadPriorityClass
# (tests/controlplane/test_job_priority.py applies it on a real apiserver).
WORKLOAD_POLICY = "trainyard-training-workload-priority"
# Jobs naming an inference class are refused at creation, before Kueue admits them.
JOB_POLICY = "trainyard-training-job-priority"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"  # Kueue's WorkloadPriorityClass label
# Pods outside Kueue in a training namespace (notebooks, Deployments) run at the lowest tier.
OUTSIDE_POLICY = "trainyard-outside-kueue-priority"
# A Workload naming a non-training class is refused when Kueue creates it (any integration).
WORKLOAD_TIER_POLICY = "trainyard-training-workload-tier"
PODSET_LABEL = "kueue.x-k8s.io/podset"  # Kueue v0.19.2 pkg/constants/constants.go:58
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MANAGED_LABEL = "kueue.x-k8s.io/managed"  # pkg/constants/constants.go:52
# Integrations whose pods Kueue's pod webhook manages: their labels at CREATE mark them.
POD_INTEGRATIONS = ("pod", "deployment", "statefulset", "leaderworkerset.x-k8s.io/leaderworkerset")
QUARANTINE_TOLERATED = "trainyard-inference-quarantine-tolerations"
QUARANTINE_REFUSED = "trainyard-training-no-quarantine-tolerations"
# Below 1.36: inference pods must carry the quarantine tolerations themselves.
QUARANTINE_REQUIRED = "trainyard-inference-quarantine-tolerations-required"


def managed_by_kueue(env: Environment) -> str:
    """CEL: the pod being created belongs to a workload Kueue manages (module docstring)."""
    keys = [PODSET_LABEL]
    if set(env.kueue.integrations) & set(POD_INTEGRATIONS):
        keys += [QUEUE_LABEL, MANAGED_LABEL]
    return (
        "has(object.metadata.labels) && ("
        + " || ".join(f"{literal(k)} in object.metadata.labels" for k in keys)
        + ")"
    )


def lowest_tier(env: Environment) -> Tier:
    """What a pod outside Kueue in a training namespace runs at: the lowest tier of the spec
    (an inference tier: every training tier outranks every inference tier)."""
    return min(env.tiers, key=lambda t: t.value)


def _class_patch(tier: Tier) -> str:
    """ApplyConfiguration CEL setting class, value and preemption policy as the apiserver's
    Priority plugin would have (it ran before any admission policy)."""
    return (
        f"Object{{spec: Object.spec{{priorityClassName: {literal(tier.name)}, "
        f"priority: {tier.value}, preemptionPolicy: {literal(tier.preemption_policy)}}}}}"
    )


def _require(env: Environment) -> bool:
    """Below 1.36 no MutatingAdmissionPolicy can give a class-less pod its tier (REQUIRE)."""
    return kubernetes.mechanism(Feature.TRAINING_PRIORITY, env.kubernetes_version) is Mechanism.REQUIRE


def _no_mutation(env: Environment) -> str:
    return f"(Kubernetes {env.kubernetes_version} has no MutatingAdmissionPolicy to default it)"


def _class_refusal(env: Environment, rule: str, tier: Tier, alternative: str) -> str:
    """CEL message of a refused pod: `rule`, the class the pod named, and the fix: drop the
    class (the mutating policy then gives `tier`) or, below 1.36, set `tier` itself."""
    fix = (
        f"set priorityClassName: {tier.name} {_no_mutation(env)}"
        if _require(env)
        else f"remove priorityClassName to get {tier.name}"
    )
    named = "(has(object.spec.priorityClassName) ? object.spec.priorityClassName : 'none')"
    return f"'{rule}; got ' + {named} + ': {fix}, or {alternative}'"


def _names_one_of(classes: str) -> str:
    """CEL: the pod names a class, one of `classes` (a CEL list)."""
    return f"has(object.spec.priorityClassName) && object.spec.priorityClassName in {classes}"


def _scopes(managed: str) -> tuple[tuple[str, str, str], tuple[str, str, str]]:
    """(policy name, matchCondition name, its CEL) of the class policies for the pods Kueue
    manages and for every other pod of a training namespace."""
    return (POLICY, "managed-by-kueue", managed), (OUTSIDE_POLICY, "not-managed-by-kueue", f"!({managed})")


def _class_policy(
    template: str,
    bind: Callable[[str, Sequence[str]], Obj],
    scope: tuple[str, str, str],
    namespaces: Sequence[str],
    **fields: str,
) -> list[Obj]:
    """A class policy (`template`) for the pods `scope` selects, and its binding."""
    name, condition, selects = scope
    return [
        render(template, name=name, condition=condition, selects=selects, **fields),
        bind(name, namespaces),
    ]


def _mutating_policies(env: Environment, managed: str) -> list[Obj]:
    """From 1.36: a class-less pod Kueue manages gets the default training tier, any other pod
    the lowest tier, and a class-less Workload the default tier's WorkloadPriorityClass."""
    tier, namespaces = env.default_training_tier, env.training_namespaces
    label = literal(PRIORITY_CLASS_LABEL)
    kueue_pods, other_pods = _scopes(managed)
    template = "priorities/mutatingadmissionpolicy.yaml.j2"
    return [
        *_class_policy(
            template, mutating_binding, kueue_pods, namespaces, apply_expression=_class_patch(tier)
        ),
        *_class_policy(
            template,
            mutating_binding,
            other_pods,
            namespaces,
            apply_expression=_class_patch(lowest_tier(env)),
        ),
        render(
            "priorities/workload-priority-mutatingadmissionpolicy.yaml.j2",
            name=WORKLOAD_POLICY,
            no_label=f"!has(object.metadata.labels) || !({label} in object.metadata.labels)",
            apply_expression=f"Object{{metadata: Object.metadata{{labels: {{{label}: "
            f"{literal(tier.name)}}}}}}}",
        ),
        mutating_binding(WORKLOAD_POLICY, namespaces),
    ]


def _workload_checks(env: Environment, allowed: list[str]) -> list[dict[str, str]]:
    """A Workload in a training namespace names only training tiers (its class and its pod
    templates'); below 1.36 every pod template names one."""
    names = literal(allowed)
    owner = (
        "(has(object.metadata.ownerReferences) && size(object.metadata.ownerReferences) > 0 ? "
        "object.metadata.ownerReferences[0].kind + ' ' + object.metadata.ownerReferences[0].name : "
        "object.metadata.name)"
    )
    pod_class = "p.template.spec.priorityClassName"
    checks = [
        {
            "expression": (
                f"!has(object.spec.priorityClassRef) || object.spec.priorityClassRef.name in {names}"
            ),
            "message": (
                f"'workloads in training namespaces run at a training tier ({', '.join(allowed)}); ' + "
                f"{owner} + ' names ' + object.spec.priorityClassRef.name + ' (label "
                f"{PRIORITY_CLASS_LABEL}, else its pod class)'"
            ),
        },
        {
            "expression": f"object.spec.podSets.all(p, !has({pod_class}) || {pod_class} == '' || "
            f"{pod_class} in {names})",
            "message": f"'workloads in training namespaces run at a training tier ({', '.join(allowed)}); "
            f"the pod templates of ' + {owner} + ' name ' + object.spec.podSets.filter(p, "
            f"has({pod_class}) && {pod_class} != '' && !({pod_class} in {names}))[0]"
            ".template.spec.priorityClassName",
        },
    ]
    if _require(env):
        checks.append(
            {
                "expression": f"object.spec.podSets.all(p, has({pod_class}) && {pod_class} != '')",
                "message": f"'workloads in training namespaces name a training tier on every pod template; "
                f"the pod templates of ' + {owner} + ' name none: set priorityClassName: "
                f"{env.default_training_tier.name} {_no_mutation(env)}, else its pods are refused after "
                "it is admitted'",
            }
        )
    return checks


def admission(env: Environment) -> list[Obj]:
    """Pods Kueue manages in training namespaces run at a training tier, every other pod
    there at the lowest tier. From Kubernetes 1.36 MutatingAdmissionPolicies give a class-less
    pod its tier; before, no policy can mutate, so the validating policies alone refuse a
    class-less pod and their messages name the class to set (generators/upstream/kubernetes.py)."""
    namespaces = env.training_namespaces
    if not namespaces:
        return []
    low = lowest_tier(env)
    allowed = [t.name for t in env.training_tiers]
    names = literal(allowed)
    managed = managed_by_kueue(env)
    require = _require(env)
    message = _class_refusal(
        env,
        f"pods in training namespaces run at a training tier ({', '.join(allowed)})",
        env.default_training_tier,
        "name a training tier",
    )
    low_message = _class_refusal(
        env,
        f"pods that Kueue does not manage run at {low.name} in training namespaces (they hold no "
        "quota, so a higher class would preempt what Kueue admitted)",
        low,
        f"submit it as a job to the team queue (label {QUEUE_LABEL})",
    )
    job_policies = [
        obj
        for kind in job_kinds.enabled(env.kueue.integrations)
        for obj in job_policy(env, kind, allowed, names, require)
    ]
    kueue_pods, other_pods = _scopes(managed)
    template = "priorities/validatingadmissionpolicy.yaml.j2"
    return [
        *([] if require else _mutating_policies(env, managed)),
        *job_policies,
        render(
            "priorities/workload-validatingadmissionpolicy.yaml.j2",
            name=WORKLOAD_TIER_POLICY,
            validations=_workload_checks(env, allowed),
        ),
        binding(WORKLOAD_TIER_POLICY, namespaces),
        *_class_policy(
            template,
            binding,
            kueue_pods,
            namespaces,
            expression=_names_one_of(names),
            message_expression=message,
        ),
        *_class_policy(
            template,
            binding,
            other_pods,
            namespaces,
            expression=_names_one_of(literal([low.name])),
            message_expression=low_message,
        ),
    ]


def job_policy_name(kind: job_kinds.JobKind) -> str:
    return JOB_POLICY if kind is job_kinds.JOB else f"trainyard-training-{kind.kind.lower()}-priority"


def sent_to_a_queue(env: Environment) -> str:
    """CEL: Kueue manages the job (it names a queue, or every job is managed)."""
    if env.kueue.manage_jobs_without_queue_name:
        return "true"
    return f"has(object.metadata.labels) && {literal(QUEUE_LABEL)} in object.metadata.labels"


def job_policy(
    env: Environment, kind: job_kinds.JobKind, allowed: list[str], names: str, require: bool
) -> list[Obj]:
    """A job of `kind` in a training namespace that names an inference class (label or pod
    template) is refused when it is created; below 1.36 (REQUIRE) so is one sent to a queue
    whose pod templates name no class: Kueue would admit it, then every pod would be refused
    while the Workload held its quota until waitForPodsReady evicted it."""
    label = literal(PRIORITY_CLASS_LABEL)
    tiers = ", ".join(allowed)
    what = f"{kind.kind.lower()}s in training namespaces run at a training tier ({tiers})"
    klass = "t.spec.priorityClassName"
    checks = [
        {
            "expression": f"!has(object.metadata.labels) || !({label} in object.metadata.labels) || "
            f"object.metadata.labels[{label}] in {names}",
            "message": f"'{what}; the label {PRIORITY_CLASS_LABEL} names ' + object.metadata.labels[{label}]",
        },
        {
            "expression": f"variables.templates.all(t, !has({klass}) || {klass} == '' || {klass} in {names})",
            "message": f"'{what}; the pod template names ' + variables.templates.filter(t, has({klass}) && "
            f"{klass} != '' && !({klass} in {names}))[0].spec.priorityClassName",
        },
    ]
    if require:
        tier = env.default_training_tier.name
        paths = ", ".join(kind.paths)
        checks.append(
            {
                "expression": f"!({sent_to_a_queue(env)}) || "
                f"variables.templates.all(t, has({klass}) && {klass} != '')",
                "message": f"'{what}; a pod template of ' + object.metadata.name + ' names no class: set "
                f"priorityClassName: {tier} on every pod template ({paths}): Kubernetes "
                f"{env.kubernetes_version} has no MutatingAdmissionPolicy to default it, and Kueue "
                "would admit the job with pods that are all refused'",
            }
        )
    name = job_policy_name(kind)
    return [
        render(
            "priorities/job-validatingadmissionpolicy.yaml.j2",
            name=name,
            kind=kind,
            templates=kind.templates,
            validations=checks,
        ),
        binding(name, env.training_namespaces),
    ]


def inference_namespaces(env: Environment) -> tuple[str, ...]:
    """Namespaces whose pods are inference: every team namespace that is not a training
    namespace, and the overflow section's inference namespaces (sorted)."""
    training = set(env.training_namespaces)
    names = {ns for team in env.teams for ns in team.namespaces if ns not in training}
    if env.overflow is not None:
        names |= {*env.overflow.inference_namespaces, *env.overflow.extra_namespaces}
    return tuple(sorted(names - training))


def toleration_patch(tolerations: tuple[Toleration, ...]) -> str:
    """JSONPatch CEL adding an Exists toleration per quarantine taint the pod lacks."""
    each = (f"{{'key': {literal(t.key)}, 'effect': {literal(t.effect)}}}" for t in tolerations)
    wanted = "[" + ", ".join(each) + "]"
    value = "Object.spec.tolerations{key: x.key, operator: 'Exists', effect: x.effect}"
    missing = f"{wanted}.filter(x, !object.spec.tolerations.exists(t, has(t.key) && t.key == x.key))"
    return (
        f"has(object.spec.tolerations) ? {missing}.map(x, JSONPatch{{op: 'add', "
        f"path: '/spec/tolerations/-', value: {value}}}) : "
        f"[JSONPatch{{op: 'add', path: '/spec/tolerations', value: {wanted}.map(x, {value})}}]"
    )


def refusal_validations(tolerations: tuple[Toleration, ...]) -> list[dict[str, str]]:
    keys = sorted({t.key for t in tolerations})
    effects = sorted({t.effect for t in tolerations})
    return [
        {
            "expression": f"variables.tolerations.all(t, !has(t.key) || !(t.key in {literal(keys)}))",
            "message": f"training pods must not tolerate the quarantine taint ({', '.join(keys)}): a "
            "quarantined node has a bad GPU or link and must not receive a gang member",
            "reason": "Forbidden",
        },
        {
            "expression": "variables.tolerations.all(t, (has(t.key) && t.key != '') || !has(t.operator) || "
            f"t.operator != 'Exists' || (has(t.effect) && t.effect != '' && "
            f"!(t.effect in {literal(effects)})))",
            "message": "a toleration with operator Exists and no key tolerates every taint, the quarantine "
            f"taint ({', '.join(keys)}) included; name the key",
            "reason": "Forbidden",
        },
    ]


def toleration_yaml(t: Toleration) -> str:
    return f"{{key: {t.key}, operator: Exists, effect: {t.effect}}}"


def tolerations_inference_carries(env: Environment) -> list[dict[str, str]]:
    """The quarantine tolerations an inference pod must carry itself: below 1.36 (REQUIRE) those
    the rendered policy requires, from 1.36 none (the mutating policy adds them)."""
    tolerations = env.health.tolerations if env.health else ()
    if kubernetes.mechanism(Feature.QUARANTINE_TOLERATION, env.kubernetes_version) is not Mechanism.REQUIRE:
        return []
    return [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in tolerations]


def required_validations(tolerations: tuple[Toleration, ...], version: str) -> list[dict[str, str]]:
    """Below 1.36 (REQUIRE): an inference pod, or the template of a Deployment, StatefulSet
    or Job in an inference namespace, must tolerate each quarantine taint itself; without
    it a quarantined node would stop taking new inference pods too (docs/health.md)."""
    checks = []
    for t in tolerations:
        key, effect = literal(t.key), literal(t.effect)
        checks.append(
            {
                "expression": f"variables.tolerations.exists(t, has(t.key) && t.key == {key} && "
                "has(t.operator) && t.operator == 'Exists' && "
                f"(!has(t.effect) || t.effect == '' || t.effect == {effect}))",
                "message": f"inference pods tolerate the GPU quarantine taint {t.key}: add the toleration "
                f"{toleration_yaml(t)} to the pod template (Kubernetes {version} has no "
                "MutatingAdmissionPolicy to add it); a quarantined node then still takes inference",
                "reason": "Invalid",
            }
        )
    return checks


def quarantine(env: Environment) -> list[Obj]:
    """Inference tolerates the health backend's taints, training never does."""
    tolerations = env.health.tolerations if env.health else ()
    if not tolerations:
        return []
    objects: list[Obj] = []
    inference = inference_namespaces(env)
    require = kubernetes.mechanism(Feature.QUARANTINE_TOLERATION, env.kubernetes_version) is Mechanism.REQUIRE
    if inference and require:
        objects += [
            render(
                "priorities/tolerations-required-validatingadmissionpolicy.yaml.j2",
                name=QUARANTINE_REQUIRED,
                validations=required_validations(tolerations, env.kubernetes_version),
            ),
            binding(QUARANTINE_REQUIRED, inference),
        ]
    elif inference:
        objects += [
            render(
                "priorities/tolerations-mutatingadmissionpolicy.yaml.j2",
                name=QUARANTINE_TOLERATED,
                patch_expression=toleration_patch(tolerations),
            ),
            mutating_binding(QUARANTINE_TOLERATED, inference),
        ]
    if env.training_namespaces:
        objects += [
            # A node taken away for a hot GPU or a bad link must not receive a gang member.
            tolerations_policy(QUARANTINE_REFUSED, refusal_validations(tolerations)),
            binding(QUARANTINE_REFUSED, env.training_namespaces),
        ]
    return objects


def generate(env: Environment, earlier: Sequence[Obj] = ()) -> list[Obj]:
    objects: list[Obj] = []
    for tier in env.tiers:
        objects.append(render("priorities/priorityclass.yaml.j2", tier=tier))
        objects.append(render("priorities/workloadpriorityclass.yaml.j2", tier=tier))
    return objects + admission(env) + quarantine(env)
