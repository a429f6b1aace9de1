"""The job kinds Kueue v0.19.2 manages whose pod templates trainyard's policies read.

Per Kueue integration (the spec's `kueue.integrations`): the resource a policy matches, and
the pod templates Kueue builds the Workload's PodSets from, which are also where it reads a
PodSet's topology annotations (jobframework.NewPodSetTopologyRequest, called with each
template's ObjectMeta: pkg/controller/jobframework/tas.go:54-61, read at :61-64). Cited
against sigs.k8s.io/kueue v0.19.2; the versions it builds against (go.mod) are JobSet v0.12.0,
KubeRay v1.6.2 and Kubeflow Trainer v2.2.1.

- batch/job: one PodSet, spec.template (pkg/controller/jobs/job/job_controller.go:356-366).
- jobset.x-k8s.io/jobset: one PodSet per replicated job,
  spec.replicatedJobs[].template.spec.template (pkg/controller/jobs/jobset/jobset_controller.go:115-134).
- ray.io/rayjob: the head, each worker group and, in K8sJobMode, the submitter
  (pkg/controller/jobs/rayjob/rayjob_controller.go:133-155 and :289-312; head and workers
  built in pkg/controller/jobs/raycluster/common.go:76-122); a RayJob without
  spec.submitterPodTemplate gets KubeRay's default submitter (:266-287), which names no class
  and no topology, so K8sJobMode RayJobs must write a submitterPodTemplate below 1.36.
- ray.io/raycluster: head and worker groups (raycluster_controller.go:106-108).
- trainer.kubeflow.org/trainjob: no pod template of its own. Kueue builds the child JobSet from
  the (Cluster)TrainingRuntime's template and the TrainJob's overrides
  (pkg/controller/jobs/trainjob/trainjob_controller.go:146-183, getChildJobSet) and takes that
  JobSet's PodSets (:217-224). A TrainJob's class and topology live in its runtime's
  replicated jobs (or in the TrainJob's spec.runtimePatches, Trainer v2.2.1
  pkg/apis/trainer/v1alpha1/trainjob_types.go:124, whose pod patch has no priorityClassName);
  only the Workload Kueue creates shows them, so the Workload policy is what checks them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobKind:
    integration: str  # the name in kueue.integrations
    group: str
    version: str
    resource: str
    kind: str
    templates: str  # CEL: the list of PodTemplateSpecs Kueue builds PodSets from
    paths: tuple[str, ...]  # where those templates are, for messages and docs

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


RAY_HEAD = "object.spec.rayClusterSpec"


def _ray(spec: str) -> str:
    """CEL: the head and worker templates of a RayClusterSpec at `spec` (absent: none)."""
    workers = f"(has({spec}.workerGroupSpecs) ? {spec}.workerGroupSpecs.map(w, w.template) : [])"
    return f"[{spec}.headGroupSpec.template] + {workers}"


JOB = JobKind("batch/job", "batch", "v1", "jobs", "Job", "[object.spec.template]", ("spec.template",))
JOBSET = JobKind(
    "jobset.x-k8s.io/jobset",
    "jobset.x-k8s.io",
    "v1alpha2",
    "jobsets",
    "JobSet",
    "object.spec.replicatedJobs.map(r, r.template.spec.template)",
    ("spec.replicatedJobs[*].template.spec.template",),
)
RAYJOB = JobKind(
    "ray.io/rayjob",
    "ray.io",
    "v1",
    "rayjobs",
    "RayJob",
    f"(has({RAY_HEAD}) ? {_ray(RAY_HEAD)} : []) + "
    "(has(object.spec.submitterPodTemplate) ? [object.spec.submitterPodTemplate] : [])",
    (
        "spec.rayClusterSpec.headGroupSpec.template",
        "spec.rayClusterSpec.workerGroupSpecs[*].template",
        "spec.submitterPodTemplate",
    ),
)
RAYCLUSTER = JobKind(
    "ray.io/raycluster",
    "ray.io",
    "v1",
    "rayclusters",
    "RayCluster",
    _ray("object.spec"),
    ("spec.headGroupSpec.template", "spec.workerGroupSpecs[*].template"),
)
# Kinds whose pod templates a policy can read on the object the user creates.
KINDS = (JOB, JOBSET, RAYJOB, RAYCLUSTER)
TRAINJOB = "trainer.kubeflow.org/trainjob"  # read through its Workload only (docstring)


def enabled(integrations: tuple[str, ...] | list[str]) -> list[JobKind]:
    """The kinds of KINDS the spec's kueue.integrations enable, in KINDS order."""
    return [kind for kind in KINDS if kind.integration in integrations]
